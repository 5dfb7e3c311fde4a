package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

func init() {
	avx2["prefetch"] = genPrefetchRows
}

// genPrefetchRows emits a loop of PREFETCHT0 over the cache lines of a
// block of rows. The batched engine asks for a block's rows a tile before
// it reads the queries or writes the outputs: rows that are not yet cached
// otherwise cost a miss per line with the FMA pipes idle.
func genPrefetchRows() {
	p := Load(Param("x").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	rows := Load(Param("rows"), GP64())
	cols := Load(Param("cols"), GP64())
	SHLQ(U8(2), cols)

	Label("rows")
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	a, end := GP64(), GP64()
	MOVQ(p, a)
	LEAQ(Mem{Base: p, Index: cols, Scale: 1}, end)
	Label("lines")
	PREFETCHT0(Mem{Base: a})
	ADDQ(U8(64), a)
	CMPQ(a, end)
	JB(LabelRef("lines"))
	// A row that does not start on a line boundary ends in one more line.
	PREFETCHT0(Mem{Base: end, Disp: -4})
	ADDQ(stride, p)
	DECQ(rows)
	JMP(LabelRef("rows"))

	Label("done")
	VZEROUPPER() // no YMM register is used, but the generator tests ask it of every kernel
	RET()
}
