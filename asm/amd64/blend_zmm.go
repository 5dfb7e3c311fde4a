package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx512["axpy"] = genAxpyZ
	avx512["blendRows"] = genBlendRowsZ
}

// genAxpyZ is genAxpy on sixteen lanes, the tail under an opmask.
func genAxpyZ() {
	a := ZMM()
	VBROADCASTSS(paramAddr("alpha"), a)
	x := Load(Param("x").Base(), GP64())
	y := Load(Param("y").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	streamZ("axpyz", n, []Register{x, y}, func(u int, mask Op) {
		xm, ym := Mem{Base: x, Disp: 64 * u}, Mem{Base: y, Disp: 64 * u}
		t := loadZ(ym, mask)
		if mask == nil {
			VFMADD231PS(xm, a, t)
		} else {
			VFMADD231PS(xm, a, mask, t)
		}
		storeZ(t, ym, mask)
	})
	VZEROUPPER()
	RET()
}

// genBlendRowsZ: acc[j] += Σ_i w[i]*v[i*stride+j], genBlendRows on sixteen
// lanes: the rows as two streams (row i beside row h+i, h = len(w)/2, then
// the odd last row), over column chunks of up to eight vectors. Each
// stream has accumulators of its own, the first starting from acc and the
// second from -0 (which adds nothing, not even to a -0), added at the end
// of the chunk: a single set would hold four chains of dependent FMAs at
// d = 64 where the two FMA pipes need eight. blendRowsMulti adds in the
// same order.
//
// There is no software prefetch: ahead of each stream it saved time with
// V in L3 but cost about as much with V in L2, which a call cannot tell
// apart (the fronts split V into calls of 256 KiB), and decode steps took
// the same time either way (measured:
// docs/performance/amd-epyc-zen5.md#no-prefetch-in-the-zmm-blend-from-code-comments).
func genBlendRowsZ() {
	acc := Load(Param("acc").Base(), GP64())
	d := Load(Param("acc").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	rows := Load(Param("w").Len(), GP64())
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	odd := GP64()
	XORQ(odd, odd)
	SHRQ(U8(1), rows)
	ADCQ(U8(0), odd)
	vh := GP64()
	MOVQ(rows, vh)
	IMULQ(stride, vh)
	b := blendRowsRegs{acc: acc, w: w, v: v, stride: stride, h: rows, vh: vh, odd: odd}
	nz := ZMM()
	VBROADCASTSS(vec32("rows_negzero", 0x80000000), nz)

	for _, C := range []int{8, 4, 2, 1} {
		name := fmt.Sprintf("blendz%d", C)
		Label(name + "_chunk")
		CMPQ(d, U8(16*C))
		JL(LabelRef(name + "_next"))
		blendChunkZ(b, C, name, nz, nil)
		ADDQ(U32(64*C), b.acc)
		ADDQ(U32(64*C), b.v)
		SUBQ(U8(16*C), d)
		JMP(LabelRef(name + "_chunk"))
		Label(name + "_next")
	}
	TESTQ(d, d)
	JZ(LabelRef("blendz_done"))
	blendChunkZ(b, 1, "blendzm", nz, tailK(d))
	Label("blendz_done")
	VZEROUPPER()
	RET()
}

// blendChunkZ emits the blend of one chunk of C vectors (one vector under
// mask if mask is not nil) over every row.
func blendChunkZ(b blendRowsRegs, C int, name string, nz VecVirtual, mask Op) {
	a, s := make([]VecVirtual, C), make([]VecVirtual, C)
	for c := range C {
		a[c] = loadZ(Mem{Base: b.acc, Disp: 64 * c}, mask)
		s[c] = ZMM()
		VMOVAPS(nz, s[c])
	}
	fma := func(m Mem, wb, dst VecVirtual) {
		if mask == nil {
			VFMADD231PS(m, wb, dst)
		} else {
			VFMADD231PS(m, wb, mask, dst)
		}
	}
	b.rowsZ(name, func(rows ...Mem) {
		sets := [][]VecVirtual{a, s}
		if len(rows) == 2 { // the odd last row, of the second stream
			sets = sets[1:]
		}
		wb := make([]VecVirtual, len(rows)/2)
		for i := range wb {
			wb[i] = ZMM()
			VBROADCASTSS(rows[2*i], wb[i])
		}
		for c := range C {
			for i := range wb {
				m := rows[2*i+1]
				m.Disp = 64 * c
				fma(m, wb[i], sets[i][c])
			}
		}
	})
	for c := range C {
		VADDPS(s[c], a[c], a[c])
		storeZ(a[c], Mem{Base: b.acc, Disp: 64 * c}, mask)
	}
}

// rowsZ is rows with two pairs of rows a step while two remain, which
// halves the loop's overhead against the FMAs of a chunk of four vectors
// or fewer; the rows are added in the same order.
func (b blendRowsRegs) rowsZ(name string, add func(rows ...Mem)) {
	w0, w1, v0, v1, r := GP64(), GP64(), GP64(), GP64(), GP64()
	MOVQ(b.w, w0)
	LEAQ(Mem{Base: b.w, Index: b.h, Scale: 4}, w1)
	MOVQ(b.v, v0)
	LEAQ(Mem{Base: b.v, Index: b.vh, Scale: 1}, v1)
	MOVQ(b.h, r)
	Label(name + "_pairs")
	CMPQ(r, U8(2))
	JL(LabelRef(name + "_pair"))
	add(Mem{Base: w0}, Mem{Base: v0}, Mem{Base: w1}, Mem{Base: v1})
	add(Mem{Base: w0, Disp: 4}, Mem{Base: v0, Index: b.stride, Scale: 1},
		Mem{Base: w1, Disp: 4}, Mem{Base: v1, Index: b.stride, Scale: 1})
	ADDQ(U8(8), w0)
	ADDQ(U8(8), w1)
	LEAQ(Mem{Base: v0, Index: b.stride, Scale: 2}, v0)
	LEAQ(Mem{Base: v1, Index: b.stride, Scale: 2}, v1)
	SUBQ(U8(2), r)
	JMP(LabelRef(name + "_pairs"))
	Label(name + "_pair")
	TESTQ(r, r)
	JZ(LabelRef(name + "_odd"))
	add(Mem{Base: w0}, Mem{Base: v0}, Mem{Base: w1}, Mem{Base: v1})
	ADDQ(U8(4), w1)
	ADDQ(b.stride, v1)
	// After h pairs the second stream points at row 2h, the last.
	Label(name + "_odd")
	TESTQ(b.odd, b.odd)
	JZ(LabelRef(name + "_end"))
	add(Mem{Base: w1}, Mem{Base: v1})
	Label(name + "_end")
}
