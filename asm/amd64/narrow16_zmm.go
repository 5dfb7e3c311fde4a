package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The narrowing kernels for sixteen lanes (see narrow16.go for the
// rounding): a zmm of floats narrows to a ymm of halfwords, VCVTPS2PH for
// binary16 and the integer rounding then VPMOVDW, which keeps the words in
// order, for bfloat16. The tail is loaded under the tail's opmask and
// stored under it, so no byte past either slice is touched.

func init() {
	avx512["narrowF16"] = func() { genNarrowZ(narrowF16Z) }
	avx512["narrowBF16"] = func() { genNarrowZ(narrowBF16Z()) }
}

// narrowZ stores the sixteen (or, under mask, the masked) elements of x,
// narrowed, at m.
type narrowZ func(x VecVirtual, m Mem, mask Op)

func narrowF16Z(x VecVirtual, m Mem, mask Op) {
	if mask == nil {
		VCVTPS2PH(U8(0), x, m)
	} else {
		VCVTPS2PH(U8(0), x, mask, m)
	}
}

// narrowBF16Z returns the bfloat16 narrowing, with its constants taken as
// embedded broadcasts; a NaN lane's top half with the quiet bit is merged
// into the rounded lanes under the mask of unordered lanes.
func narrowBF16Z() narrowZ {
	one, bias, quiet := vec32("bf16_one", 1), vec32("bf16_bias", 0x7fff), vec32("bf16_quiet", 0x40)
	return func(x VecVirtual, m Mem, mask Op) {
		h, r := ZMM(), ZMM()
		VPSRLD(U8(16), x, h)
		VPANDD_BCST(one, h, r)
		VPADDD_BCST(bias, r, r)
		VPADDD(x, r, r)
		VPSRLD(U8(16), r, r)
		nan := K()
		VCMPPS(U8(3), x, x, nan)
		VPORD_BCST(quiet, h, nan, r)
		if mask == nil {
			VPMOVDW(r, m)
		} else {
			VPMOVDW(r, mask, m)
		}
	}
}

// genNarrowZ: 64 elements a step (four vectors), then 16, then a tail of
// up to 15 under an opmask.
func genNarrowZ(narrow narrowZ) {
	dst, src, n := narrowParams()
	one := func(u int) {
		x := ZMM()
		VMOVUPS(Mem{Base: src, Disp: 64 * u}, x)
		narrow(x, Mem{Base: dst, Disp: 32 * u}, nil)
	}
	narrowWalk(n, src, dst, []narrowStep{
		{64, func() {
			for u := range 4 {
				one(u)
			}
		}},
		{16, func() { one(0) }},
	}, func() {
		k := tailK(n)
		narrow(loadZ(Mem{Base: src}, k), Mem{Base: dst}, k)
	})
}
