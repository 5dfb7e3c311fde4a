package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx2["dot"] = genDot
	avx2["scoreRows"] = genScoreRows
}

// genDot: Σ x[i]*y[i]. Eight accumulators hide the 4-cycle FMA latency;
// each FMA needs two loads (one fused), so the loop runs at the load ports'
// rate. One index register walks both slices and the loop is tested at the
// bottom, so its overhead is one add and one fused compare-and-branch.
func genDot() {
	x := Load(Param("x").Base(), GP64())
	y := Load(Param("y").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	acc := zeros(8)
	i := GP64()
	XORQ(i, i)
	end := GP64() // bytes in whole 64-element blocks
	MOVQ(n, end)
	ANDQ(I32(-64), end)
	SHLQ(U8(2), end)
	JZ(LabelRef("dot_loop8"))

	Label("dot_loop64")
	for k := range 8 {
		t := YMM()
		VMOVUPS(Mem{Base: x, Index: i, Scale: 1, Disp: 32 * k}, t)
		VFMADD231PS(Mem{Base: y, Index: i, Scale: 1, Disp: 32 * k}, t, acc[k])
	}
	ADDQ(U32(256), i)
	CMPQ(i, end)
	JB(LabelRef("dot_loop64"))

	Label("dot_loop8")
	MOVQ(n, end)
	ANDQ(I8(-8), end)
	SHLQ(U8(2), end)
	Label("dot_loop8b")
	CMPQ(i, end)
	JAE(LabelRef("dot_tail"))
	t := YMM()
	VMOVUPS(Mem{Base: x, Index: i, Scale: 1}, t)
	VFMADD231PS(Mem{Base: y, Index: i, Scale: 1}, t, acc[(0)])
	ADDQ(U8(32), i)
	JMP(LabelRef("dot_loop8b"))

	Label("dot_tail")
	ANDQ(U8(7), n)
	JZ(LabelRef("dot_reduce"))
	mask := tailMask(n)
	a, b := YMM(), YMM()
	VMASKMOVPS(Mem{Base: x, Index: i, Scale: 1}, mask, a)
	VMASKMOVPS(Mem{Base: y, Index: i, Scale: 1}, mask, b)
	VFMADD231PS(b, a, acc[1])

	Label("dot_reduce")
	sumTree(acc)
	Store(hsum(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genScoreRows: dst[i] = K[i]·q for a block of rows. Eight rows are scored
// together so that each 8-float chunk of q is loaded once for eight FMAs
// (one fused load per FMA), with one accumulator per row; then blocks of
// four rows, then single rows.
func genScoreRows() {
	dst := Load(Param("dst").Base(), GP64())
	rows := Load(Param("dst").Len(), GP64())
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	q := Load(Param("q").Base(), GP64())
	d := Load(Param("q").Len(), GP64())
	SHLQ(U8(2), stride) // bytes

	// Column tail: d%8 lanes, handled with masked loads after the full chunks.
	rem := GP64()
	MOVQ(d, rem)
	ANDQ(U8(7), rem)
	full := GP64() // bytes of full chunks
	MOVQ(d, full)
	SHRQ(U8(3), full)
	SHLQ(U8(5), full)

	// stream: 0 for a small K, 1 for a large K with contiguous rows, 2
	// for a large K with rows further apart (see scoreStream).
	stream := GP64()
	t := GP64()
	MOVQ(d, t)
	SHLQ(U8(2), t)
	MOVQ(rows, stream)
	IMULQ(t, stream)
	CMPQ(stream, U32(scoreStreamBytes))
	JL(LabelRef("score_small"))
	MOVQ(U32(1), stream)
	CMPQ(t, stride)
	JE(LabelRef("score_setup"))
	INCQ(stream)
	JMP(LabelRef("score_setup"))
	Label("score_small")
	XORQ(stream, stream)
	Label("score_setup")

	for _, R := range []int{8, 4, 1} {
		scoreBlock(R, dst, rows, k, stride, q, full, rem, stream)
	}
	Label("score_done")
	VZEROUPPER()
	RET()
}

// scoreBlock emits the loop that scores R rows at a time while at least R
// rows remain.
func scoreBlock(R int, dst, rows, k, stride, q, full, rem, stream Register) {
	loop := fmt.Sprintf("score%d_loop", R)
	next := fmt.Sprintf("score%d_next", R)
	Label(loop)
	CMPQ(rows, U8(R))
	JL(LabelRef(next))

	// Row r of the block: with s = stride and s3 = 3s, rows 0..3 are at
	// k, k+s, k+2s, k+s3 and rows 4..7 the same from k4 = k+4s. The bases
	// walk along the columns with q and are rewound after the block.
	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	k4 := GP64()
	if R == 8 {
		LEAQ(Mem{Base: k, Index: stride, Scale: 4}, k4)
	}
	row := func(r int) Mem { return rowAddr(k, k4, stride, s3, r) }

	acc := zeros(R)
	cnt := GP64()
	MOVQ(full, cnt)
	chunk := fmt.Sprintf("score%d_chunk", R)
	tail := fmt.Sprintf("score%d_tail", R)
	if R == 8 {
		CMPQ(stream, U8(1))
		JL(LabelRef(chunk))
		JG(LabelRef("score8_strided"))
		scoreStream(acc, q, k, k4, stride, s3, cnt)
		Label("score8_strided")
		scoreStreamStrided(acc, q, k, k4, stride, s3, cnt)
	}
	Label(chunk)
	TESTQ(cnt, cnt)
	JZ(LabelRef(tail))
	qv := YMM()
	VMOVUPS(Mem{Base: q}, qv)
	for r := range R {
		VFMADD231PS(row(r), qv, acc[r])
	}
	ADDQ(U8(32), q)
	ADDQ(U8(32), k)
	if R == 8 {
		ADDQ(U8(32), k4)
	}
	SUBQ(U8(32), cnt)
	JMP(LabelRef(chunk))

	Label(tail)
	reduce := fmt.Sprintf("score%d_reduce", R)
	TESTQ(rem, rem)
	JZ(LabelRef(reduce))
	mask := tailMask(rem)
	qt := YMM()
	VMASKMOVPS(Mem{Base: q}, mask, qt)
	for r := range R {
		kt := YMM()
		VMASKMOVPS(row(r), mask, kt)
		VFMADD231PS(kt, qt, acc[r])
	}

	Label(reduce)
	storeSums(acc, dst)
	// Rewind the column walk, then step to the next block of rows.
	SUBQ(full, q)
	SUBQ(full, k)
	blk := GP64()
	MOVQ(stride, blk)
	if R > 1 {
		IMUL3Q(U8(R), blk, blk)
	}
	ADDQ(blk, k)
	ADDQ(U8(4*R), dst)
	SUBQ(U8(R), rows)
	JMP(LabelRef(loop))
	Label(next)
}

// scoreStreamBytes is the size of K's rows (rows times d floats, in bytes)
// from which scoreRowsAVX2 prefetches: below it K is usually in L1 or L2,
// where the prefetches only cost issue slots (10-15% at 16-32 KiB).
const scoreStreamBytes = 128 << 10

// scoreStream emits the eight-row block's loop for a large K with
// contiguous rows: two 8-float chunks of every row per step, and a
// prefetch of the next block, 512 bytes per step in address order, so it
// is all requested by the time this block is done. The eight rows are read
// side by side, each only d floats long, and the hardware prefetchers lose
// track of them at every jump to the next block. One block ahead gained
// more than two or four, or than scoreStreamStrided's order on contiguous
// rows (measured:
// docs/performance/amd-epyc-zen3.md#the-avx2-score-prefetches-the-next-block-from-code-comments).
// The loop leaves fewer than 64 bytes of each row to the single-chunk loop,
// and the prefetches of the last block keep inside k (see keepInside).
func scoreStream(acc []VecVirtual, q, k, k4, stride, s3, cnt Register) {
	next := GP64()
	LEAQ(Mem{Base: k, Index: stride, Scale: 8}, next)
	reach := GP64()
	LEAQ(Mem{Base: next, Index: stride, Scale: 8}, reach)
	keepInside("k", 2, reach, [2]Register{k, next})
	scorePairs("score8_stream", acc, q, k, k4, stride, s3, cnt,
		func(half, r int) {
			if r%2 == 1 {
				PREFETCHT0(Mem{Base: next, Disp: 256*half + 64*(r/2)})
			}
		},
		func() { ADDQ(U32(512), next) })
}

// scoreStreamStrided is scoreStream for rows further apart than d floats
// (K a view into a wider projection output): each step prefetches, for
// every row of the next block, the line at the column this step reads.
// With rows 3d apart the kernel took 10-24% less time (d = 64 and 128,
// T = 1024 to 8192); scoreStream's address order would fetch the gaps.
func scoreStreamStrided(acc []VecVirtual, q, k, k4, stride, s3, cnt Register) {
	kn, kn4 := GP64(), GP64()
	LEAQ(Mem{Base: k, Index: stride, Scale: 8}, kn)
	LEAQ(Mem{Base: k4, Index: stride, Scale: 8}, kn4)
	reach := GP64()
	LEAQ(Mem{Base: kn4, Index: stride, Scale: 4}, reach)
	keepInside("k", 2, reach, [2]Register{k, kn}, [2]Register{k4, kn4})
	scorePairs("score8_strided_step", acc, q, k, k4, stride, s3, cnt,
		func(half, r int) {
			if half == 0 {
				PREFETCHT0(rowAddr(kn, kn4, stride, s3, r))
			}
		},
		func() {
			ADDQ(U8(64), kn)
			ADDQ(U8(64), kn4)
		})
}

// scorePairs emits the eight-row block's loop over two 8-float chunks of
// every row per step, while 64 bytes or more of each row remain, then
// goes on to the single-chunk loop. prefetch(half, r) follows the FMA of
// row r in each half; advance moves the prefetch pointers on by a step.
func scorePairs(label string, acc []VecVirtual, q, k, k4, stride, s3, cnt Register, prefetch func(half, r int), advance func()) {
	Label(label)
	CMPQ(cnt, U8(64))
	JL(LabelRef("score8_chunk"))
	for half := range 2 {
		qv := YMM()
		VMOVUPS(Mem{Base: q, Disp: 32 * half}, qv)
		for r := range acc {
			m := rowAddr(k, k4, stride, s3, r)
			m.Disp += 32 * half
			VFMADD231PS(m, qv, acc[r])
			prefetch(half, r)
		}
	}
	for _, p := range []Register{q, k, k4} {
		ADDQ(U8(64), p)
	}
	advance()
	SUBQ(U8(64), cnt)
	JMP(LabelRef(label))
}

// storeSums writes the horizontal sum of each accumulator to dst[0..len).
func storeSums(acc []VecVirtual, dst Register) {
	switch len(acc) {
	case 1:
		VMOVSS(hsum(acc[0]), Mem{Base: dst})
	case 4, 8:
		// Pairwise horizontal adds leave, per 128-bit lane, the partial sums
		// of four accumulators side by side.
		h := make([]VecVirtual, len(acc)/2)
		for i := range h {
			h[i] = YMM()
			VHADDPS(acc[2*i+1], acc[2*i], h[i])
		}
		g := make([]VecVirtual, len(h)/2)
		for i := range g {
			g[i] = YMM()
			VHADDPS(h[2*i+1], h[2*i], g[i])
		}
		if len(acc) == 4 {
			hi := XMM()
			VEXTRACTF128(U8(1), g[0], hi)
			lo := g[0].AsX()
			VADDPS(hi, lo, lo)
			VMOVUPS(lo, Mem{Base: dst})
			return
		}
		VMOVUPS(mergeLanes(g), Mem{Base: dst})
	default:
		panic("storeSums: unsupported block")
	}
}

// sums8 returns a register whose lane i holds the sum of the lanes of
// acc[i], for eight accumulators.
func sums8(acc []VecVirtual) VecVirtual {
	h := make([]VecVirtual, 4)
	for i := range h {
		h[i] = YMM()
		VHADDPS(acc[2*i+1], acc[2*i], h[i])
	}
	g := []VecVirtual{YMM(), YMM()}
	VHADDPS(h[1], h[0], g[0])
	VHADDPS(h[3], h[2], g[1])
	return mergeLanes(g)
}

// mergeLanes adds the 128-bit lanes of the two registers of partial sums
// that two rounds of VHADDPS leave, into one register in accumulator order.
func mergeLanes(g []VecVirtual) VecVirtual {
	lo, hi := YMM(), YMM()
	VPERM2F128(U8(0x20), g[1], g[0], lo)
	VPERM2F128(U8(0x31), g[1], g[0], hi)
	VADDPS(hi, lo, lo)
	return lo
}
