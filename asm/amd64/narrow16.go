package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The narrowing kernels of the KV cache: float32 rows rounded to binary16
// or bfloat16, bit for bit as f32ToF16 and f32ToBF16 round them.
//
// binary16 is VCVTPS2PH with immediate 0: round to nearest even whatever
// MXCSR says, overflow to ±Inf, binary16 subnormals rounded exactly (Go
// leaves DAZ and FTZ off, so float32 subnormals are read as they are and
// become ±0), a NaN made quiet with the top ten bits of its payload, which
// is the rule f32ToF16 follows.
//
// bfloat16 has no instruction on these CPUs that keeps subnormals
// (VCVTNEPS2BF16 flushes them), so it is the integer rounding of
// f32ToBF16: (x + 0x7fff + (x>>16 & 1)) >> 16 on the bits, a carry
// stepping the exponent up to Inf, and a NaN lane replaced by its top half
// with the quiet bit set.

func init() {
	avx2["narrowF16"] = genNarrowF16
	avx2["narrowBF16"] = genNarrowBF16
}

// narrowStep is one stage of a narrowing walk: while at least n elements
// remain, body converts n of them at the current pointers, which then
// move on by 4n bytes of src and 2n of dst.
type narrowStep struct {
	n    int
	body func()
}

// narrowWalk emits the stages in order, each a loop, and then, if any
// elements remain (fewer than the last stage takes), tail.
func narrowWalk(n, src, dst Register, steps []narrowStep, tail func()) {
	for i, s := range steps {
		loop, next := fmt.Sprintf("%s_loop%d", fn, i), fmt.Sprintf("%s_next%d", fn, i)
		Label(loop)
		CMPQ(n, U32(s.n))
		JL(LabelRef(next))
		s.body()
		ADDQ(U32(4*s.n), src)
		ADDQ(U32(2*s.n), dst)
		SUBQ(U32(s.n), n)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(n, n)
	JZ(LabelRef(fn + "_done"))
	tail()
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}

// storeHalves stores the first n (1 <= n <= 7) halfwords of h at dst, by
// four, two and one, writing no other byte; it consumes h and moves dst.
func storeHalves(h VecVirtual, n, dst Register) {
	for _, w := range []int{4, 2, 1} {
		skip := fmt.Sprintf("%s_store%d", fn, w)
		TESTQ(U32(w), n)
		JZ(LabelRef(skip))
		switch w {
		case 4:
			VMOVQ(h, Mem{Base: dst})
			VPSRLDQ(U8(8), h, h)
			ADDQ(U8(8), dst)
		case 2:
			VMOVD(h, Mem{Base: dst})
			VPSRLDQ(U8(4), h, h)
			ADDQ(U8(4), dst)
		case 1:
			VPEXTRW(U8(0), h, Mem{Base: dst})
		}
		Label(skip)
	}
}

// narrowParams loads dst's base and src's base and length.
func narrowParams() (dst, src, n Register) {
	dst = Load(Param("dst").Base(), GP64())
	src = Load(Param("src").Base(), GP64())
	n = Load(Param("src").Len(), GP64())
	return dst, src, n
}

// genNarrowF16: 32 elements a step as four VCVTPS2PH that store straight
// to dst, then 8, then a tail loaded under VMASKMOVPS (the masked lanes
// are +0) and stored by storeHalves.
func genNarrowF16() {
	dst, src, n := narrowParams()
	one := func(u int) {
		x := YMM()
		VMOVUPS(Mem{Base: src, Disp: 32 * u}, x)
		VCVTPS2PH(U8(0), x, Mem{Base: dst, Disp: 16 * u})
	}
	narrowWalk(n, src, dst, []narrowStep{
		{32, func() {
			for u := range 4 {
				one(u)
			}
		}},
		{8, func() { one(0) }},
	}, func() {
		x := YMM()
		VMASKMOVPS(Mem{Base: src}, tailMask(n), x)
		h := XMM()
		VCVTPS2PH(U8(0), x, h)
		storeHalves(h, n, dst)
	})
}

// bf16Consts are the constants of the bfloat16 rounding, in registers.
type bf16Consts struct{ one, bias, quiet VecVirtual }

func bf16ConstsY() bf16Consts {
	c := bf16Consts{YMM(), YMM(), YMM()}
	VPBROADCASTD(vec32("bf16_one", 1), c.one)
	VPBROADCASTD(vec32("bf16_bias", 0x7fff), c.bias)
	VPBROADCASTD(vec32("bf16_quiet", 0x40), c.quiet)
	return c
}

// roundBF16Y returns the bfloat16 values of the eight floats of x, one in
// the low half of each dword (the high half zero).
func roundBF16Y(x VecVirtual, c bf16Consts) VecVirtual {
	h, r, nan := YMM(), YMM(), YMM()
	VPSRLD(U8(16), x, h)
	VPAND(c.one, h, r)
	VPADDD(c.bias, r, r)
	VPADDD(x, r, r)
	VPSRLD(U8(16), r, r)
	VCMPPS(U8(3), x, x, nan) // unordered: NaN
	VPOR(c.quiet, h, h)
	VPBLENDVB(nan, h, r, r)
	return r
}

// genNarrowBF16: 32 elements a step, each 16 as two vectors rounded to
// dwords and packed to words: VPACKUSDW interleaves the 128-bit halves
// (a0-3 b0-3 | a4-7 b4-7), which VPERMQ puts back in order; no value
// saturates, each being below 2^16. Then 8 (packed from the two halves
// of one vector), then a tail loaded under VMASKMOVPS.
func genNarrowBF16() {
	dst, src, n := narrowParams()
	c := bf16ConstsY()
	sixteen := func(u int) {
		a, b := YMM(), YMM()
		VMOVDQU(Mem{Base: src, Disp: 64 * u}, a)
		VMOVDQU(Mem{Base: src, Disp: 64*u + 32}, b)
		ra, rb := roundBF16Y(a, c), roundBF16Y(b, c)
		VPACKUSDW(rb, ra, ra)
		VPERMQ(U8(0xd8), ra, ra)
		VMOVDQU(ra, Mem{Base: dst, Disp: 32 * u})
	}
	// eight returns the eight words of the vector at m, in order.
	eight := func(x VecVirtual) VecVirtual {
		r := roundBF16Y(x, c)
		hi := XMM()
		VEXTRACTI128(U8(1), r, hi)
		lo := r.AsX().(VecVirtual)
		VPACKUSDW(hi, lo, lo)
		return lo
	}
	narrowWalk(n, src, dst, []narrowStep{
		{32, func() { sixteen(0); sixteen(1) }},
		{16, func() { sixteen(0) }},
		{8, func() {
			x := YMM()
			VMOVDQU(Mem{Base: src}, x)
			VMOVDQU(eight(x), Mem{Base: dst})
		}},
	}, func() {
		x := YMM()
		VMASKMOVPS(Mem{Base: src}, tailMask(n), x)
		storeHalves(eight(x), n, dst)
	})
}
