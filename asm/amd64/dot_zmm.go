package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx512["dot"] = genDotZ
	avx512["scoreRows"] = genScoreRowsZ
}

// genDotZ is genDot on sixteen lanes: eight accumulators over blocks of
// 128 elements, then single vectors, then an opmask tail.
func genDotZ() {
	x := Load(Param("x").Base(), GP64())
	y := Load(Param("y").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	acc := zerosZ(8)
	i := GP64()
	XORQ(i, i)
	end := GP64() // bytes in whole 128-element blocks
	MOVQ(n, end)
	ANDQ(I32(-128), end)
	SHLQ(U8(2), end)
	JZ(LabelRef("dotz_loop16"))

	Label("dotz_loop128")
	for k := range 8 {
		t := ZMM()
		VMOVUPS(Mem{Base: x, Index: i, Scale: 1, Disp: 64 * k}, t)
		VFMADD231PS(Mem{Base: y, Index: i, Scale: 1, Disp: 64 * k}, t, acc[k])
	}
	ADDQ(U32(512), i)
	CMPQ(i, end)
	JB(LabelRef("dotz_loop128"))

	// Up to seven single vectors, spread over accumulators so that their
	// FMAs do not wait on each other.
	Label("dotz_loop16")
	MOVQ(n, end)
	ANDQ(I8(-16), end)
	SHLQ(U8(2), end)
	for k := range 7 {
		CMPQ(i, end)
		JAE(LabelRef("dotz_tail"))
		t := ZMM()
		VMOVUPS(Mem{Base: x, Index: i, Scale: 1}, t)
		VFMADD231PS(Mem{Base: y, Index: i, Scale: 1}, t, acc[k])
		ADDQ(U8(64), i)
	}

	Label("dotz_tail")
	ANDQ(U8(15), n)
	JZ(LabelRef("dotz_reduce"))
	k := tailK(n)
	a := loadZ(Mem{Base: x, Index: i, Scale: 1}, k)
	// Merge masking: the lanes past the end keep their sums, and the
	// memory operand's masked-off lanes are never read.
	VFMADD231PS(Mem{Base: y, Index: i, Scale: 1}, a, k, acc[7])

	Label("dotz_reduce")
	sumTree(acc)
	Store(hsumZ(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genScoreRowsZ is genScoreRows on sixteen lanes: blocks of eight rows,
// one accumulator each, every 16-float chunk of q loaded once for eight
// FMAs; then blocks of four rows, then single rows. A large K streams
// with the prefetches of scoreStream (one line of the next block per FMA
// here). Every row's sum goes through rowsSums's tree, so the block a row
// falls in does not change its bits.
func genScoreRowsZ() {
	dst := Load(Param("dst").Base(), GP64())
	rows := Load(Param("dst").Len(), GP64())
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	q := Load(Param("q").Base(), GP64())
	d := Load(Param("q").Len(), GP64())
	SHLQ(U8(2), stride) // bytes

	rem := GP64() // d%16 columns, under an opmask after the full chunks
	MOVQ(d, rem)
	ANDQ(U8(15), rem)
	full := GP64() // bytes of full chunks
	MOVQ(d, full)
	SHRQ(U8(4), full)
	SHLQ(U8(6), full)

	// stream: 0 for a small K, 1 for a large K with contiguous rows, 2
	// for a large K with rows further apart.
	stream := GP64()
	t := GP64()
	MOVQ(d, t)
	SHLQ(U8(2), t)
	MOVQ(rows, stream)
	IMULQ(t, stream)
	CMPQ(stream, U32(scoreStreamBytes))
	JL(LabelRef("scorez_small"))
	MOVQ(U32(1), stream)
	CMPQ(t, stride)
	JE(LabelRef("scorez_setup"))
	INCQ(stream)
	JMP(LabelRef("scorez_setup"))
	Label("scorez_small")
	XORQ(stream, stream)
	Label("scorez_setup")

	for _, nc := range chunksOf("scoreRows") {
		next := fmt.Sprintf("scorezrm%d_skip", nc)
		CMPQ(full, U32(64*nc))
		JNE(LabelRef(next))
		scoreRowMajorZ(nc, dst, rows, k, stride, q, rem, stream)
		Label(next)
	}
	for _, R := range []int{8, 4, 1} {
		scoreBlockZ(R, dst, rows, k, stride, q, full, rem, stream)
	}
	VZEROUPPER()
	RET()
}

// scoreRowMajorZ emits the eight-row blocks for a q of nc whole chunks
// (and maybe a tail) held in registers: each row's chunks are read one
// after the other, so K is read in address order, where the chunk-major
// blocks read eight rows side by side. Each row's FMAs come in the same
// order as there, so its bits are the same. The rows left over go to the
// four-row blocks. The kernel alone took less time this way than with the
// chunk-major blocks, most at d = 128 with K in L2 (measured:
// docs/performance/amd-epyc-zen5.md#scorerows-in-address-order-from-code-comments).
// It serves d = 64 and 128 and their tails (d < 80, 128 <= d < 144);
// other d keep the chunk-major blocks.
//
// A large K of contiguous rows streams without software prefetches, the
// hardware prefetchers following the address order: asking for the next
// block's lines as well only slowed the kernel. Rows further apart keep
// them, and stream slower without (measured:
// docs/performance/amd-epyc-zen4.md#scores-in-address-order-from-code-comments).
func scoreRowMajorZ(nc int, dst, rows, k, stride, q, rem, stream Register) {
	name := fmt.Sprintf("scorezrm%d", nc)
	qs := make([]VecVirtual, nc)
	for c := range qs {
		qs[c] = ZMM()
		VMOVUPS(Mem{Base: q, Disp: 64 * c}, qs[c])
	}
	TESTQ(rem, rem)
	JZ(LabelRef(name + "_full"))
	mask := tailK(rem)
	qt := loadZ(Mem{Base: q, Disp: 64 * nc}, mask)
	for _, tail := range []bool{true, false} {
		variant := name
		if !tail {
			variant += "_full"
			Label(variant)
		}
		// Contiguous rows stream without prefetches: the hardware
		// prefetchers follow the address order (see scoreRowMajorZ).
		CMPQ(stream, U8(2))
		JE(LabelRef(variant + "_pf"))
		for _, pf := range []bool{false, true} {
			loop := variant + "_loop"
			if pf {
				loop = variant + "_pf"
			}
			Label(loop)
			CMPQ(rows, U8(8))
			JL(LabelRef("scorez4_loop"))
			s3, k4 := GP64(), GP64()
			LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
			LEAQ(Mem{Base: k, Index: stride, Scale: 4}, k4)
			var kn, kn4 Register
			if pf {
				// The next block's rows, prefetched line by line as this
				// block's are read.
				kn, kn4 = GP64(), GP64()
				LEAQ(Mem{Base: k, Index: stride, Scale: 8}, kn)
				LEAQ(Mem{Base: k4, Index: stride, Scale: 8}, kn4)
				reach := GP64()
				LEAQ(Mem{Base: kn4, Index: stride, Scale: 4}, reach)
				keepInside("k", 2, reach, [2]Register{k, kn}, [2]Register{k4, kn4})
			}
			acc := zerosZ(8)
			for r := range acc {
				at := func(base, base4 Register, c int) Mem {
					m := rowAddr(base, base4, stride, s3, r)
					m.Disp += 64 * c
					return m
				}
				for c := range nc {
					VFMADD231PS(at(k, k4, c), qs[c], acc[r])
					if pf {
						PREFETCHT0(at(kn, kn4, c))
					}
				}
				if tail {
					VFMADD231PS(at(k, k4, nc), qt, mask, acc[r])
				}
			}
			storeRowsSums(acc, dst)
			blk := GP64()
			MOVQ(stride, blk)
			SHLQ(U8(3), blk)
			ADDQ(blk, k)
			ADDQ(U8(32), dst)
			SUBQ(U8(8), rows)
			JMP(LabelRef(loop))
		}
	}
}

// scoreBlockZ emits the loop that scores R rows at a time while at least R
// rows remain.
func scoreBlockZ(R int, dst, rows, k, stride, q, full, rem, stream Register) {
	name := fmt.Sprintf("scorez%d", R)
	Label(name + "_loop")
	CMPQ(rows, U8(R))
	JL(LabelRef(name + "_next"))

	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	k4 := GP64()
	if R == 8 {
		LEAQ(Mem{Base: k, Index: stride, Scale: 4}, k4)
	}
	row := func(r int) Mem { return rowAddr(k, k4, stride, s3, r) }

	acc := zerosZ(R)
	cnt := GP64()
	MOVQ(full, cnt)
	chunk, tail := name+"_chunk", name+"_tail"
	if R == 8 {
		CMPQ(stream, U8(1))
		JL(LabelRef(chunk))
		JG(LabelRef(name + "_strided"))
		scoreStreamZ(name, acc, q, k, k4, stride, s3, cnt)
		JMP(LabelRef(chunk))
		scoreStreamStridedZ(name, acc, q, k, k4, stride, s3, cnt)
	}
	Label(chunk)
	TESTQ(cnt, cnt)
	JZ(LabelRef(tail))
	qv := ZMM()
	VMOVUPS(Mem{Base: q}, qv)
	for r := range R {
		VFMADD231PS(row(r), qv, acc[r])
	}
	ADDQ(U8(64), q)
	ADDQ(U8(64), k)
	if R == 8 {
		ADDQ(U8(64), k4)
	}
	SUBQ(U8(64), cnt)
	JMP(LabelRef(chunk))

	Label(tail)
	TESTQ(rem, rem)
	JZ(LabelRef(name + "_reduce"))
	mask := tailK(rem)
	qt := loadZ(Mem{Base: q}, mask)
	for r := range R {
		VFMADD231PS(row(r), qt, mask, acc[r]) // merge masking: lanes past d keep their sums
	}

	Label(name + "_reduce")
	storeRowsSums(acc, dst)
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
	JMP(LabelRef(name + "_loop"))
	Label(name + "_next")
}

// scoreStreamZ is scoreStream for sixteen lanes: each step reads one
// 64-byte line of each of the eight rows and prefetches 512 bytes of the
// next block, in address order.
func scoreStreamZ(name string, acc []VecVirtual, q, k, k4, stride, s3, cnt Register) {
	next := GP64()
	LEAQ(Mem{Base: k, Index: stride, Scale: 8}, next)
	reach := GP64()
	LEAQ(Mem{Base: next, Index: stride, Scale: 8}, reach)
	keepInside("k", 2, reach, [2]Register{k, next})
	scoreStepsZ(name+"_stream", name+"_chunk", acc, q, k, k4, stride, s3, cnt,
		func(r int) { PREFETCHT0(Mem{Base: next, Disp: 64 * r}) },
		func() { ADDQ(U32(512), next) })
}

// scoreStreamStridedZ is scoreStreamStrided for sixteen lanes: each step
// prefetches, for every row of the next block, the line at the column the
// step reads.
func scoreStreamStridedZ(name string, acc []VecVirtual, q, k, k4, stride, s3, cnt Register) {
	Label(name + "_strided")
	kn, kn4 := GP64(), GP64()
	LEAQ(Mem{Base: k, Index: stride, Scale: 8}, kn)
	LEAQ(Mem{Base: k4, Index: stride, Scale: 8}, kn4)
	reach := GP64()
	LEAQ(Mem{Base: kn4, Index: stride, Scale: 4}, reach)
	keepInside("k", 2, reach, [2]Register{k, kn}, [2]Register{k4, kn4})
	scoreStepsZ(name+"_strided_step", name+"_chunk", acc, q, k, k4, stride, s3, cnt,
		func(r int) { PREFETCHT0(rowAddr(kn, kn4, stride, s3, r)) },
		func() {
			ADDQ(U8(64), kn)
			ADDQ(U8(64), kn4)
		})
}

// scoreStepsZ emits the eight-row block's loop over one 16-float chunk of
// every row per step, each FMA followed by prefetch(r), while a chunk
// remains; the chunk loop then finds none and goes to the tail.
func scoreStepsZ(label, done string, acc []VecVirtual, q, k, k4, stride, s3, cnt Register, prefetch func(r int), advance func()) {
	Label(label)
	TESTQ(cnt, cnt)
	JZ(LabelRef(done))
	qv := ZMM()
	VMOVUPS(Mem{Base: q}, qv)
	for r := range acc {
		VFMADD231PS(rowAddr(k, k4, stride, s3, r), qv, acc[r])
		prefetch(r)
	}
	for _, p := range []Register{q, k, k4} {
		ADDQ(U8(64), p)
	}
	advance()
	SUBQ(U8(64), cnt)
	JMP(LabelRef(label))
}
