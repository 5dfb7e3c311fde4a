package main

import (
	"github.com/glancelab/attention/internal/expconst"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The exp kernels evaluate the scheme of internal/expconst lane by lane with
// the same operations as the generic exp32, so every lane's result is
// bit-identical to it. Constants are 32-byte memory operands: the scheme
// needs more of them than there are YMM registers to spare.

// expLanes computes e^x of the 8 lanes of x into a new register. It also
// returns the "special" compare (|n| > SpecialN); fast-path results are
// wrong in those lanes and expFixup must finish them.
type expParts struct {
	res, n, p, e, special VecVirtual
}

func expFast(x VecVirtual) expParts {
	var t expParts
	z := YMM()
	VMOVUPS(vecF("exp_invln2", expconst.InvLn2), z)
	VFMADD213PS(vecF("exp_shift", expconst.Shift), x, z) // z = x*InvLn2 + Shift
	t.n = YMM()
	VSUBPS(vecF("exp_shift", expconst.Shift), z, t.n) // n = z - Shift
	r := YMM()
	VMOVAPS(x, r)
	VFNMADD231PS(vecF("exp_ln2hi", expconst.Ln2Hi), t.n, r) // r = x - n*Ln2Hi
	VFNMADD231PS(vecF("exp_ln2lo", expconst.Ln2Lo), t.n, r) // r -= n*Ln2Lo
	t.e = YMM()
	VPSLLD(U8(23), z, t.e)
	scale := YMM()
	VPADDD(vec32("exp_bias", expconst.ExpBias), t.e, scale)

	t.p = YMM()
	VMOVUPS(vecF("exp_c6", expconst.C6), t.p)
	VFMADD213PS(vecF("exp_c5", expconst.C5), r, t.p) // p = p*r + C5
	VFMADD213PS(vecF("exp_c4", expconst.C4), r, t.p)
	VFMADD213PS(vecF("exp_c3", expconst.C3), r, t.p)
	VFMADD213PS(vecF("exp_c2", expconst.C2), r, t.p)
	VFMADD213PS(vecF("exp_one", 1), r, t.p)
	VFMADD213PS(vecF("exp_one", 1), r, t.p)

	t.special = YMM()
	VANDPS(vec32("exp_absmask", 0x7fffffff), t.n, t.special)
	VCMPPS(U8(0x1e), vecF("exp_specialn", expconst.SpecialN), t.special, t.special) // |n| > SpecialN (GT_OQ)
	t.res = YMM()
	VMULPS(scale, t.p, t.res)
	return t
}

// expFixup replaces the special lanes of t.res: 2^n is split as s1·s2
// (both normal) so the product rounds once, and past SaturateN the result
// is s1·s1 (+Inf or +0), as in the generic expSpecial.
func expFixup(t expParts) {
	zero := YMM()
	VXORPS(zero, zero, zero)
	b := YMM()
	VCMPPS(U8(0x12), zero, t.n, b) // n <= 0 (LE_OQ)
	VANDPS(vec32("exp_specialoffset", expconst.SpecialOffset), b, b)
	s1 := YMM()
	VPADDD(vec32("exp_specialbias", expconst.SpecialBias), b, s1)
	s2 := YMM()
	VPSUBD(b, t.e, s2) // s2 = e - b
	r0 := YMM()
	VMULPS(s1, t.p, r0)
	VMULPS(s2, r0, r0) // (p*s1)*s2
	r1 := YMM()
	VMULPS(s1, s1, r1)
	sat := YMM()
	VANDPS(vec32("exp_absmask", 0x7fffffff), t.n, sat)
	VCMPPS(U8(0x1e), vecF("exp_saturaten", expconst.SaturateN), sat, sat)
	VBLENDVPS(sat, r1, r0, r0)             // saturated lanes take s1*s1
	VBLENDVPS(t.special, r0, t.res, t.res) // special lanes take the split result
}

// expBlock emits e^(x - m) for the U vectors at src into the registers it
// returns (m nil: e^x). If any lane needs the special path it recomputes
// the block with it: the common case costs one VPTEST, and only the result
// registers stay live across the check (there are just 16 YMM registers).
func expBlock(name string, U int, src Register, m VecVirtual, mask VecVirtual) []VecVirtual {
	load := func(u int) VecVirtual {
		x := YMM()
		if mask != nil {
			VMASKMOVPS(Mem{Base: src, Disp: 32 * u}, mask, x)
		} else {
			VMOVUPS(Mem{Base: src, Disp: 32 * u}, x)
		}
		if m != nil {
			VSUBPS(m, x, x)
		}
		return x
	}
	res := make([]VecVirtual, U)
	any := YMM()
	for u := range U {
		parts := expFast(load(u))
		res[u] = parts.res
		if u == 0 {
			VMOVAPS(parts.special, any)
		} else {
			VORPS(parts.special, any, any)
		}
	}
	VPTEST(any, any)
	JZ(LabelRef(name + "_ok"))
	for u := range U {
		parts := expFast(load(u))
		expFixup(parts)
		VMOVAPS(parts.res, res[u])
	}
	Label(name + "_ok")
	return res
}

// genExp: dst[i] = e^x[i], two vectors per iteration.
func genExp() {
	TEXT("expAVX2", NOSPLIT, "func(dst, x []float32)")
	Pragma("noescape")
	Doc("expAVX2 sets dst[i] = e^x[i] for i < len(x), bit-identical to exp32.")
	dst := Load(Param("dst").Base(), GP64())
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	expLoops("exp", dst, x, n, nil, nil)
	VZEROUPPER()
	RET()
}

// genExpSum: dst[i] = e^(x[i]-m), returning Σ dst[i].
func genExpSum() {
	TEXT("expSumAVX2", NOSPLIT, "func(dst, x []float32, m float32) float32")
	Pragma("noescape")
	Doc("expSumAVX2 sets dst[i] = e^(x[i]-m) for i < len(x) and returns their sum.")
	dst := Load(Param("dst").Base(), GP64())
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	m := YMM()
	VBROADCASTSS(paramAddr("m"), m)
	sums := zeros(2)
	expLoops("expsum", dst, x, n, m, sums)
	sumTree(sums)
	Store(hsum(sums[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// expLoops emits the main loop (2 vectors), the single-vector loop and the
// masked tail, storing to dst and, if sums is not nil, accumulating.
func expLoops(name string, dst, x, n Register, m VecVirtual, sums []VecVirtual) {
	accumulate := func(res []VecVirtual) {
		if sums != nil {
			for u, r := range res {
				VADDPS(r, sums[u%len(sums)], sums[u%len(sums)])
			}
		}
	}
	Label(name + "_loop16")
	CMPQ(n, U8(16))
	JL(LabelRef(name + "_loop8"))
	res := expBlock(name+"_b2", 2, x, m, nil)
	for u, r := range res {
		VMOVUPS(r, Mem{Base: dst, Disp: 32 * u})
	}
	accumulate(res)
	ADDQ(U8(64), x)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JMP(LabelRef(name + "_loop16"))

	Label(name + "_loop8")
	CMPQ(n, U8(8))
	JL(LabelRef(name + "_tail"))
	res = expBlock(name+"_b1", 1, x, m, nil)
	VMOVUPS(res[0], Mem{Base: dst})
	accumulate(res)
	ADDQ(U8(32), x)
	ADDQ(U8(32), dst)
	SUBQ(U8(8), n)
	JMP(LabelRef(name + "_loop8"))

	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	mask := tailMask(n)
	res = expBlock(name+"_bt", 1, x, m, mask)
	VMASKMOVPS(res[0], mask, Mem{Base: dst})
	if sums != nil {
		VANDPS(mask, res[0], res[0]) // lanes past the end add nothing
	}
	accumulate(res)
	Label(name + "_done")
}
