package main

import (
	"github.com/mmcloughlin/avo/gotypes"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
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

// A kernel's prefetches ahead of its loads stay inside its slices. A
// prefetch never faults, but past the rows a caller holds it can land in
// memory nothing has written yet, such as the unused capacity of a new
// cache, which the system backs with pages only when first written: there
// each prefetch costs a page walk that finds no page, and no walk's failure
// is remembered: a short score over such rows took several times as long
// (measured: docs/performance/amd-epyc-zen1.md#prefetches-past-the-rows-from-code-comments).

// keepInside compares reach, the end of the bytes a block's prefetches ask
// for, with the end of the slice argument arg (elements of 1<<shift bytes),
// in elements from the slice's start and against its length in the frame,
// which takes no register beside reach (which it consumes). Where reach
// passes it, each pair's second register is set to its first, an address
// the block reads itself, so that the prefetches ask for lines it has
// anyway.
func keepInside(arg string, shift uint8, reach Register, moves ...[2]Register) {
	SUBQ(argAddr(Param(arg).Base()), reach)
	if shift > 0 {
		SHRQ(U8(shift), reach)
	}
	CMPQ(reach, argAddr(Param(arg).Len()))
	for _, m := range moves {
		CMOVQHI(m[0], m[1])
	}
}

// argAddr is the address of an argument's word in the frame.
func argAddr(c gotypes.Component) Mem {
	b, err := c.Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// reachRows sets next's block to keep inside arg: its prefetches ask for
// the P rows' bytes (P·d elements of 1<<shift bytes, d in elements) from
// next, and at is where the block's own rows start.
func reachRows(arg string, shift uint8, P int, d, next, at Register) {
	reach := GP64()
	IMUL3Q(U32(P<<shift), d, reach)
	ADDQ(next, reach)
	keepInside(arg, shift, reach, [2]Register{at, next})
}
