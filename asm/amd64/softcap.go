package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx2["softcapPrep"] = genSoftcapPrep
	avx2["softcapFinish"] = genSoftcapFinish
	avx2["additivePrep"] = genAdditivePrep
}

// The softcap c·tanh(s/c) of the batched engine around the Exp kernel:
// softcapPrep scales the scores and forms 2|x| for the exponentials,
// softcapFinish completes tanh as tanhFinish does, operation for
// operation (no FMA: the generic code rounds every product), so both give
// the same bits.

func genSoftcapPrep() {
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	z := Load(Param("z").Base(), GP64())
	inv := YMM()
	VBROADCASTSS(paramAddr("inv"), inv)
	stream("prep", n, []Register{x, z}, func(u int, mask VecVirtual) {
		v := YMM()
		if mask == nil {
			VMULPS(Mem{Base: x, Disp: 32 * u}, inv, v)
			VMOVUPS(v, Mem{Base: x, Disp: 32 * u})
		} else {
			VMASKMOVPS(Mem{Base: x}, mask, v)
			VMULPS(v, inv, v)
			VMASKMOVPS(v, mask, Mem{Base: x})
		}
		storeTwiceAbs(v, z, u, mask)
	})
	VZEROUPPER()
	RET()
}

func genSoftcapFinish() {
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	e := Load(Param("e").Base(), GP64())
	c := YMM()
	VBROADCASTSS(paramAddr("c"), c)
	f32 := func(name string, v float64) Mem { return vecF(name, float64(float32(v))) }
	stream("finish", n, []Register{x, e}, func(u int, mask VecVirtual) {
		xv, ev := YMM(), YMM()
		if mask == nil {
			VMOVUPS(Mem{Base: x, Disp: 32 * u}, xv)
			VMOVUPS(Mem{Base: e, Disp: 32 * u}, ev)
		} else {
			VMASKMOVPS(Mem{Base: x}, mask, xv)
			VMASKMOVPS(Mem{Base: e}, mask, ev)
		}
		a := YMM()
		VANDPS(vec32("exp_absmask", 0x7fffffff), xv, a)
		// Small |x|: a + a·(a²·(−1/3 + a²·(2/15 − a²·17/315))).
		a2, p := YMM(), YMM()
		VMULPS(a, a, a2)
		VMULPS(f32("tanh_c7", 17.0/315), a2, p)
		q := YMM()
		VMOVUPS(f32("tanh_c5", 2.0/15), q)
		VSUBPS(p, q, p)
		VMULPS(p, a2, p)
		VADDPS(f32("tanh_c3", -1.0/3), p, p)
		VMULPS(p, a2, p)
		VMULPS(p, a, p)
		VADDPS(p, a, p)
		// Otherwise 1 − 2/(e+1).
		t := YMM()
		VADDPS(vecF("exp_one", 1), ev, ev)
		VMOVUPS(vecF("tanh_two", 2), t)
		VDIVPS(ev, t, t)
		one := YMM()
		VMOVUPS(vecF("exp_one", 1), one)
		VSUBPS(t, one, t)
		small := YMM()
		VCMPPS(U8(0x11), vecF("tanh_small", 0x1p-4), a, small) // LT_OQ: a < 2^-4
		VBLENDVPS(small, p, t, t)
		// t >= 0 (or NaN, which a NaN x gives by itself): x's sign bit
		// makes it tanh's odd half, -0 included.
		sign := YMM()
		VANDPS(vec32("tanh_sign", 0x80000000), xv, sign)
		VORPS(sign, t, t)
		VMULPS(c, t, t)
		if mask == nil {
			VMOVUPS(t, Mem{Base: x, Disp: 32 * u})
		} else {
			VMASKMOVPS(t, mask, Mem{Base: x})
		}
	})
	VZEROUPPER()
	RET()
}

// genAdditivePrep: the tanh arguments of a block of additive scores, one
// key row at a time (the query row s repeats along each row).
func genAdditivePrep() {
	d := Load(Param("s").Len(), GP64())
	TESTQ(d, d)
	JZ(LabelRef("addprep_ret"))
	rows := Load(Param("x").Len(), GP64())
	// rows = len(x) / d: DIVQ takes the dividend in DX:AX.
	XORQ(RDX, RDX)
	MOVQ(rows, RAX)
	DIVQ(d)
	MOVQ(RAX, rows)
	TESTQ(rows, rows)
	JZ(LabelRef("addprep_ret"))
	x := Load(Param("x").Base(), GP64())
	z := Load(Param("z").Base(), GP64())
	ur := Load(Param("u").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	s := Load(Param("s").Base(), GP64())
	// The stream loop leaves x and z short of the row's end by its tail.
	tail := GP64()
	MOVQ(d, tail)
	ANDQ(U8(7), tail)
	SHLQ(U8(2), tail)
	up, sp, cnt := GP64(), GP64(), GP64()
	Label("addprep_row")
	MOVQ(ur, up)
	MOVQ(s, sp)
	MOVQ(d, cnt)
	stream("addprep", cnt, []Register{x, z, up, sp}, func(u int, mask VecVirtual) {
		v := YMM()
		if mask == nil {
			VMOVUPS(Mem{Base: up, Disp: 32 * u}, v)
			VADDPS(Mem{Base: sp, Disp: 32 * u}, v, v)
			VMOVUPS(v, Mem{Base: x, Disp: 32 * u})
		} else {
			w := YMM()
			VMASKMOVPS(Mem{Base: up}, mask, v)
			VMASKMOVPS(Mem{Base: sp}, mask, w)
			VADDPS(w, v, v)
			VMASKMOVPS(v, mask, Mem{Base: x})
		}
		storeTwiceAbs(v, z, u, mask)
	})
	ADDQ(tail, x)
	ADDQ(tail, z)
	ADDQ(stride, ur)
	DECQ(rows)
	JNZ(LabelRef("addprep_row"))
	Label("addprep_ret")
	VZEROUPPER()
	RET()
}

// storeTwiceAbs stores 2|v|, the argument of tanh's exponential, as vector
// u at z (or its first lanes under mask).
func storeTwiceAbs(v VecVirtual, z Register, u int, mask VecVirtual) {
	a := YMM()
	VANDPS(vec32("exp_absmask", 0x7fffffff), v, a)
	VADDPS(a, a, a)
	if mask == nil {
		VMOVUPS(a, Mem{Base: z, Disp: 32 * u})
	} else {
		VMASKMOVPS(a, mask, Mem{Base: z})
	}
}
