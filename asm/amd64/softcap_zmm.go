package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx512["softcapPrep"] = genSoftcapPrepZ
	avx512["softcapFinish"] = genSoftcapFinishZ
	avx512["additivePrep"] = genAdditivePrepZ
}

// The softcap kernels on sixteen lanes: the same operations as softcap.go,
// in the same order (so the same bits), with the constants held in
// registers (there are 32 of them) and the tails under an opmask.

// softcapConstZ broadcasts a 4-byte constant into a new register.
func softcapConstZ(m Mem) VecVirtual {
	z := ZMM()
	VBROADCASTSS(m, z)
	return z
}

func genSoftcapPrepZ() {
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	z := Load(Param("z").Base(), GP64())
	inv := ZMM()
	VBROADCASTSS(paramAddr("inv"), inv)
	abs := softcapConstZ(vec32("exp_absmask", 0x7fffffff))
	streamZ("prep", n, []Register{x, z}, func(u int, mask Op) {
		v := loadZ(Mem{Base: x, Disp: 64 * u}, mask)
		VMULPS(inv, v, v)
		storeZ(v, Mem{Base: x, Disp: 64 * u}, mask)
		storeTwiceAbsZ(v, abs, Mem{Base: z, Disp: 64 * u}, mask)
	})
	VZEROUPPER()
	RET()
}

func genSoftcapFinishZ() {
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	e := Load(Param("e").Base(), GP64())
	c := ZMM()
	VBROADCASTSS(paramAddr("c"), c)
	f32 := func(name string, v float64) Mem { return vecF(name, float64(float32(v))) }
	abs := softcapConstZ(vec32("exp_absmask", 0x7fffffff))
	c7 := softcapConstZ(f32("tanh_c7", 17.0/315))
	c5 := softcapConstZ(f32("tanh_c5", 2.0/15))
	c3 := softcapConstZ(f32("tanh_c3", -1.0/3))
	one := softcapConstZ(vecF("exp_one", 1))
	two := softcapConstZ(vecF("tanh_two", 2))
	small := softcapConstZ(vecF("tanh_small", 0x1p-4))
	sign := softcapConstZ(vec32("tanh_sign", 0x80000000))
	streamZ("finish", n, []Register{x, e}, func(u int, mask Op) {
		xv := loadZ(Mem{Base: x, Disp: 64 * u}, mask)
		ev := loadZ(Mem{Base: e, Disp: 64 * u}, mask)
		a := ZMM()
		VANDPS(abs, xv, a)
		// Small |x|: a + a·(a²·(−1/3 + a²·(2/15 − a²·17/315))).
		a2, p := ZMM(), ZMM()
		VMULPS(a, a, a2)
		VMULPS(c7, a2, p)
		VSUBPS(p, c5, p)
		VMULPS(p, a2, p)
		VADDPS(c3, p, p)
		VMULPS(p, a2, p)
		VMULPS(p, a, p)
		VADDPS(p, a, p)
		// Otherwise 1 − 2/(e+1).
		t := ZMM()
		VADDPS(one, ev, ev)
		VDIVPS(ev, two, t)
		VSUBPS(t, one, t)
		k := K()
		VCMPPS(U8(0x11), small, a, k) // LT_OQ: a < 2^-4
		VBLENDMPS(p, t, k, t)
		// t >= 0 (or NaN, which a NaN x gives by itself): x's sign bit
		// makes it tanh's odd half, -0 included. 0xf8 = A | (B & C)
		// with A = t, B = x, C = the sign bit.
		VPTERNLOGD(U8(0xf8), sign, xv, t)
		VMULPS(c, t, t)
		storeZ(t, Mem{Base: x, Disp: 64 * u}, mask)
	})
	VZEROUPPER()
	RET()
}

// genAdditivePrepZ: genAdditivePrep on sixteen lanes, one key row at a
// time.
func genAdditivePrepZ() {
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
	abs := softcapConstZ(vec32("exp_absmask", 0x7fffffff))
	// The stream loop leaves x and z short of the row's end by its tail.
	tail := GP64()
	MOVQ(d, tail)
	ANDQ(U8(15), tail)
	SHLQ(U8(2), tail)
	up, sp, cnt := GP64(), GP64(), GP64()
	Label("addprep_row")
	MOVQ(ur, up)
	MOVQ(s, sp)
	MOVQ(d, cnt)
	streamZ("addprep", cnt, []Register{x, z, up, sp}, func(u int, mask Op) {
		v := loadZ(Mem{Base: up, Disp: 64 * u}, mask)
		if mask == nil {
			VADDPS(Mem{Base: sp, Disp: 64 * u}, v, v)
		} else {
			w := loadZ(Mem{Base: sp}, mask)
			VADDPS(w, v, v)
		}
		storeZ(v, Mem{Base: x, Disp: 64 * u}, mask)
		storeTwiceAbsZ(v, abs, Mem{Base: z, Disp: 64 * u}, mask)
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

// storeTwiceAbsZ stores 2|v| (abs holds the sign-clearing mask) to m, or
// with a mask only the lanes it sets.
func storeTwiceAbsZ(v, abs VecVirtual, m Mem, mask Op) {
	a := ZMM()
	VANDPS(abs, v, a)
	VADDPS(a, a, a)
	storeZ(a, m, mask)
}
