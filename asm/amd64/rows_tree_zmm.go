package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The horizontal sums of the avx512 score kernels. Every accumulator's 16
// lanes are added in one fixed tree, hsumZ's: lane j + lane j+8, then
// j + j+4, then neighbours, then the two pairs. Whether a row is summed
// alone (hsumZ) or with others (rowsSums), in a block of any size, by the
// one-row or the multi-row kernel, its score is the same bits.

// rowsPart is a register of the tree at some level: 2^level blocks of
// 16>>level lanes, each the partial sums of the accumulator ids names (-1
// for a copy, when a register was paired with itself).
type rowsPart struct {
	v   VecVirtual
	ids []int
}

// rowsLevel emits one level of the tree: pairs of registers folded into
// one, a lone last register paired with itself.
func rowsLevel(level int, parts []rowsPart) []rowsPart {
	var out []rowsPart
	for i := 0; i < len(parts); i += 2 {
		x, y := parts[i], parts[i]
		dup := i+1 == len(parts)
		if !dup {
			y = parts[i+1]
		}
		lo, hi := ZMM(), ZMM()
		var ids []int
		yid := func(id int) int {
			if dup {
				return -1
			}
			return id
		}
		switch level {
		case 0: // whole registers: halves side by side
			VSHUFF32X4(U8(0b01_00_01_00), y.v, x.v, lo)
			VSHUFF32X4(U8(0b11_10_11_10), y.v, x.v, hi)
			ids = []int{x.ids[0], yid(y.ids[0])}
		case 1: // halves: quarters side by side
			VSHUFF32X4(U8(0b10_00_10_00), y.v, x.v, lo)
			VSHUFF32X4(U8(0b11_01_11_01), y.v, x.v, hi)
			ids = []int{x.ids[0], x.ids[1], yid(y.ids[0]), yid(y.ids[1])}
		case 2, 3: // within each 128-bit lane: even and odd lanes
			VSHUFPS(U8(0b10_00_10_00), y.v, x.v, lo)
			VSHUFPS(U8(0b11_01_11_01), y.v, x.v, hi)
			n := len(x.ids) / 4 // blocks per 128-bit lane
			for q := range 4 {
				for b := range n {
					ids = append(ids, x.ids[n*q+b])
				}
				for b := range n {
					ids = append(ids, yid(y.ids[n*q+b]))
				}
			}
		}
		VADDPS(hi, lo, lo)
		out = append(out, rowsPart{lo, ids})
	}
	return out
}

// rowsSums adds the lanes of each accumulator and returns a register whose
// lane i holds acc[i]'s sum (len(acc) <= 16; lanes past it are undefined).
// Sixteen accumulators are fed to the tree in the order that leaves their
// sums in place; fewer take a permute at the end.
func rowsSums(acc []VecVirtual) VecVirtual {
	final := rowsLayout(len(acc))
	order := acc
	if len(acc) == 16 {
		order = make([]VecVirtual, 16)
		for lane, id := range final {
			order[id] = acc[lane]
		}
	}
	parts := make([]rowsPart, len(order))
	for i, v := range order {
		parts[i] = rowsPart{v, []int{i}}
	}
	for level := range 4 {
		parts = rowsLevel(level, parts)
	}
	s := parts[0].v
	if len(acc) == 16 {
		return s
	}
	// Lane i of the result is lane idx[i] of the tree's.
	var idx [16]uint32
	for lane, id := range final {
		if id >= 0 {
			idx[id] = uint32(lane)
		}
	}
	p := ZMM()
	ix := ZMM()
	VMOVUPS(permZ(idx), ix)
	VPERMPS(s, ix, p)
	return p
}

// rowsLayout returns, for n accumulators fed to the tree in order, which
// accumulator's sum each lane of the last register holds (-1: a copy).
func rowsLayout(n int) []int {
	parts := make([][]int, n)
	for i := range parts {
		parts[i] = []int{i}
	}
	for level := range 4 {
		var out [][]int
		for i := 0; i < len(parts); i += 2 {
			x := parts[i]
			y := make([]int, len(x))
			for j := range y {
				y[j] = -1
			}
			if i+1 < len(parts) {
				y = parts[i+1]
			}
			var ids []int
			switch level {
			case 0:
				ids = []int{x[0], y[0]}
			case 1:
				ids = []int{x[0], x[1], y[0], y[1]}
			default:
				m := len(x) / 4
				for q := range 4 {
					ids = append(ids, x[m*q:m*q+m]...)
					ids = append(ids, y[m*q:m*q+m]...)
				}
			}
			out = append(out, ids)
		}
		parts = out
	}
	return parts[0]
}

// storeRowsSums writes the sums of the accumulators to dst[0..len(acc)),
// len(acc) one of 1, 4, 8 and 16.
func storeRowsSums(acc []VecVirtual, dst Register) {
	if len(acc) == 1 {
		VMOVSS(hsumZ(acc[0]), Mem{Base: dst})
		return
	}
	s := rowsSums(acc)
	switch len(acc) {
	case 4:
		VMOVUPS(s.AsX(), Mem{Base: dst})
	case 8:
		VMOVUPS(s.AsY(), Mem{Base: dst})
	case 16:
		VMOVUPS(s, Mem{Base: dst})
	default:
		panic("storeRowsSums: unsupported block")
	}
}
