package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx2["axpy"] = genAxpy
	avx2["blendRows"] = genBlendRows
}

// genAxpy: y[i] += alpha*x[i], four vectors per iteration.
func genAxpy() {
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
// chunks of up to eight vectors held in registers while the rows stream
// past, so acc is loaded and stored once per chunk and each value element
// costs one fused load per FMA.
//
// The rows are read as two streams, row i beside row i+h (h = len(w)/2),
// then the odd last row: two sequential streams keep more cache misses in
// flight than one, and a value matrix is usually too large for L1; the
// kernel took less time this way than as one stream, from L1 to DRAM
// (measured:
// docs/performance/amd-epyc-zen3.md#the-avx2-blend-as-two-streams-from-code-comments).
// Each acc[j] still sums every product once, in a different order from the
// generic kernel.
func genBlendRows() {
	acc := Load(Param("acc").Base(), GP64())
	d := Load(Param("acc").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	rows := Load(Param("w").Len(), GP64())
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	// rows becomes h = len(w)/2; the carry flag of the shift is the odd
	// last row, kept as 0 or 1 in odd. vh = h*stride is the byte offset
	// of the second stream.
	odd := GP64()
	XORQ(odd, odd)
	SHRQ(U8(1), rows)
	ADCQ(U8(0), odd)
	vh := GP64()
	MOVQ(rows, vh)
	IMULQ(stride, vh)
	b := blendRowsRegs{acc: acc, w: w, v: v, stride: stride, h: rows, vh: vh, odd: odd}

	for _, C := range []int{16, 8, 4, 2, 1} {
		b.chunk(C, d)
	}
	// Masked last chunk of d%8 columns.
	TESTQ(d, d)
	JZ(LabelRef("blend_done"))
	mask := tailMask(d)
	a := YMM()
	VMASKMOVPS(Mem{Base: acc}, mask, a)
	b.rows("blendm", func(rows ...Mem) {
		for i := 0; i < len(rows); i += 2 {
			wb, t := YMM(), YMM()
			VBROADCASTSS(rows[i], wb)
			VMASKMOVPS(rows[i+1], mask, t)
			VFMADD231PS(t, wb, a)
		}
	})
	VMASKMOVPS(a, mask, Mem{Base: acc})
	Label("blend_done")
	VZEROUPPER()
	RET()
}

// blendRowsRegs holds blendRowsAVX2's arguments: the row pointers of
// every chunk start from w and v, h is the number of row pairs, vh the
// second stream's offset in bytes, odd 1 if a last row follows the pairs.
type blendRowsRegs struct {
	acc, w, v, stride, h, vh, odd Register
}

// rows emits the walk over the rows for one chunk: add gets the rows to
// add as (weight, row) address pairs, row r and row h+r of each pair, then
// the odd last row alone.
func (b blendRowsRegs) rows(name string, add func(rows ...Mem)) {
	w0, w1, v0, v1, r := GP64(), GP64(), GP64(), GP64(), GP64()
	MOVQ(b.w, w0)
	LEAQ(Mem{Base: b.w, Index: b.h, Scale: 4}, w1)
	MOVQ(b.v, v0)
	LEAQ(Mem{Base: b.v, Index: b.vh, Scale: 1}, v1)
	MOVQ(b.h, r)
	Label(name + "_pair")
	TESTQ(r, r)
	JZ(LabelRef(name + "_odd"))
	add(Mem{Base: w0}, Mem{Base: v0}, Mem{Base: w1}, Mem{Base: v1})
	ADDQ(U8(4), w0)
	ADDQ(U8(4), w1)
	ADDQ(b.stride, v0)
	ADDQ(b.stride, v1)
	DECQ(r)
	JMP(LabelRef(name + "_pair"))
	// After h pairs the second stream points at row 2h, the last.
	Label(name + "_odd")
	TESTQ(b.odd, b.odd)
	JZ(LabelRef(name + "_end"))
	add(Mem{Base: w1}, Mem{Base: v1})
	Label(name + "_end")
}

// chunk emits the loop over column chunks of C vectors while at least 8C
// columns remain; acc and v advance past each chunk.
func (b blendRowsRegs) chunk(C int, d Register) {
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
		VMOVUPS(Mem{Base: b.acc, Disp: 32 * k}, a[k])
	}
	col := func(row Mem, k int) Mem {
		row.Disp = 32 * k
		return row
	}
	// Rows given as (weight, row) address pairs, added in order; the
	// accumulators kept in acc are loaded and stored once for all of them.
	add := func(rows ...Mem) {
		wb := make([]VecVirtual, len(rows)/2)
		for i := range wb {
			wb[i] = YMM()
			VBROADCASTSS(rows[2*i], wb[i])
		}
		for i := range wb {
			for k := range a {
				VFMADD231PS(col(rows[2*i+1], k), wb[i], a[k])
			}
		}
		for k := inRegs; k < C; k++ {
			t := YMM()
			VMOVUPS(Mem{Base: b.acc, Disp: 32 * k}, t)
			for i := range wb {
				VFMADD231PS(col(rows[2*i+1], k), wb[i], t)
			}
			VMOVUPS(t, Mem{Base: b.acc, Disp: 32 * k})
		}
	}
	b.rows(fmt.Sprintf("blend%d", C), add)
	for k := range a {
		VMOVUPS(a[k], Mem{Base: b.acc, Disp: 32 * k})
	}
	ADDQ(U32(32*C), b.acc)
	ADDQ(U32(32*C), b.v)
	SUBQ(U8(8*C), d)
	JMP(LabelRef(loop))
	Label(next)
}
