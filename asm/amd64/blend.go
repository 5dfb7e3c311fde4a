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

	Label("axpy_loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("axpy_loop8"))
	for i := range 4 {
		t := YMM()
		VMOVUPS(Mem{Base: y, Disp: 32 * i}, t)
		VFMADD231PS(Mem{Base: x, Disp: 32 * i}, a, t)
		VMOVUPS(t, Mem{Base: y, Disp: 32 * i})
	}
	ADDQ(U32(128), x)
	ADDQ(U32(128), y)
	SUBQ(U8(32), n)
	JMP(LabelRef("axpy_loop32"))

	Label("axpy_loop8")
	CMPQ(n, U8(8))
	JL(LabelRef("axpy_tail"))
	t := YMM()
	VMOVUPS(Mem{Base: y}, t)
	VFMADD231PS(Mem{Base: x}, a, t)
	VMOVUPS(t, Mem{Base: y})
	ADDQ(U8(32), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("axpy_loop8"))

	Label("axpy_tail")
	TESTQ(n, n)
	JZ(LabelRef("axpy_done"))
	mask := tailMask(n)
	xt, yt := YMM(), YMM()
	VMASKMOVPS(Mem{Base: x}, mask, xt)
	VMASKMOVPS(Mem{Base: y}, mask, yt)
	VFMADD231PS(xt, a, yt)
	VMASKMOVPS(yt, mask, Mem{Base: y})
	Label("axpy_done")
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

	for _, C := range []int{8, 4, 2, 1} {
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
	a := make([]VecVirtual, C)
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
