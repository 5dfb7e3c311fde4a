package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genAxpy: y[i] += alpha*x[i], four vectors per iteration.
func genAxpy() {
	TEXT("axpyAVX2", NOSPLIT, "func(alpha float32, x, y []float32)")
	Pragma("noescape")
	Doc("axpyAVX2 sets y[i] += alpha*x[i] for i < len(x).")
	a := YMM()
	VBROADCASTSS(paramAddr("alpha"), a)
	x := Load(Param("x").Base(), GP64())
	y := Load(Param("y").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	stream("axpy", n, []Register{x, y}, func(u int, mask VecVirtual) {
		xm, ym := Mem{Base: x, Disp: 32 * u}, Mem{Base: y, Disp: 32 * u}
		t := YMM()
		if mask == nil {
			VMOVUPS(ym, t)
			VFMADD231PS(xm, a, t)
			VMOVUPS(t, ym)
			return
		}
		xt := YMM()
		VMASKMOVPS(xm, mask, xt)
		VMASKMOVPS(ym, mask, t)
		VFMADD231PS(xt, a, t)
		VMASKMOVPS(t, mask, ym)
	})
	VZEROUPPER()
	RET()
}

// genBlendRows: acc[j] += Σ_i w[i]*v[i*stride+j]. The columns are walked in
// chunks of up to eight vectors held in registers while every row streams
// past, so acc is loaded and stored once per chunk and each value element
// costs one fused load per FMA.
func genBlendRows() {
	TEXT("blendRowsAVX2", NOSPLIT, "func(acc, w, v []float32, stride int)")
	Pragma("noescape")
	Doc("blendRowsAVX2 sets acc[j] += Σ_i w[i]*v[i*stride+j] for i < len(w), j < len(acc).")
	acc := Load(Param("acc").Base(), GP64())
	d := Load(Param("acc").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	rows := Load(Param("w").Len(), GP64())
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)

	for _, C := range []int{16, 8, 4, 2, 1} {
		blendChunk(C, acc, d, w, rows, v, stride)
	}
	// Masked last chunk of d%8 columns.
	TESTQ(d, d)
	JZ(LabelRef("blend_done"))
	mask := tailMask(d)
	a := YMM()
	VMASKMOVPS(Mem{Base: acc}, mask, a)
	wp, vp, r := GP64(), GP64(), GP64()
	MOVQ(w, wp)
	MOVQ(v, vp)
	MOVQ(rows, r)
	Label("blendm_row")
	TESTQ(r, r)
	JZ(LabelRef("blendm_store"))
	wb, t := YMM(), YMM()
	VBROADCASTSS(Mem{Base: wp}, wb)
	VMASKMOVPS(Mem{Base: vp}, mask, t)
	VFMADD231PS(t, wb, a)
	ADDQ(U8(4), wp)
	ADDQ(stride, vp)
	DECQ(r)
	JMP(LabelRef("blendm_row"))
	Label("blendm_store")
	VMASKMOVPS(a, mask, Mem{Base: acc})
	Label("blend_done")
	VZEROUPPER()
	RET()
}

// blendChunk emits the loop over column chunks of C vectors while at least
// 8C columns remain; acc and v advance past each chunk.
func blendChunk(C int, acc, d, w, rows, v, stride Register) {
	loop := fmt.Sprintf("blend%d_chunk", C)
	next := fmt.Sprintf("blend%d_next", C)
	Label(loop)
	CMPQ(d, U8(8*C))
	JL(LabelRef(next))
	// A chunk of 16 vectors (128 columns) keeps half its accumulators in
	// registers and half in acc itself (L1, through store forwarding), so
	// each value row is read in one pass rather than two half-rows.
	inRegs := min(C, 8)
	a := make([]VecVirtual, inRegs)
	for k := range a {
		a[k] = YMM()
		VMOVUPS(Mem{Base: acc, Disp: 32 * k}, a[k])
	}
	wp, vp, r := GP64(), GP64(), GP64()
	MOVQ(w, wp)
	MOVQ(v, vp)
	MOVQ(rows, r)
	row := fmt.Sprintf("blend%d_row", C)
	store := fmt.Sprintf("blend%d_store", C)
	Label(row)
	TESTQ(r, r)
	JZ(LabelRef(store))
	wb := YMM()
	VBROADCASTSS(Mem{Base: wp}, wb)
	for k := range a {
		VFMADD231PS(Mem{Base: vp, Disp: 32 * k}, wb, a[k])
	}
	for k := inRegs; k < C; k++ {
		t := YMM()
		VMOVUPS(Mem{Base: acc, Disp: 32 * k}, t)
		VFMADD231PS(Mem{Base: vp, Disp: 32 * k}, wb, t)
		VMOVUPS(t, Mem{Base: acc, Disp: 32 * k})
	}
	ADDQ(U8(4), wp)
	ADDQ(stride, vp)
	DECQ(r)
	JMP(LabelRef(row))
	Label(store)
	for k := range a {
		VMOVUPS(a[k], Mem{Base: acc, Disp: 32 * k})
	}
	ADDQ(U32(32*C), acc)
	ADDQ(U32(32*C), v)
	SUBQ(U8(8*C), d)
	JMP(LabelRef(loop))
	Label(next)
}
