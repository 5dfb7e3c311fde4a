package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The row kernels over 16-bit K/V rows: scoreRows and blendRows with each
// element of k or v widened to float32 as it is loaded, so the loop reads
// half the bytes and does the same FMAs. One generator serves both
// register widths and both formats; lanes16 says what differs.

func init() {
	avx2["scoreRowsF16"] = func() { genScoreRows16(ymm16, widenF16) }
	avx2["scoreRowsBF16"] = func() { genScoreRows16(ymm16bf, widenBF16) }
	avx2["blendRowsF16"] = func() { genBlendRows16(ymm16, widenF16) }
	avx2["blendRowsBF16"] = func() { genBlendRows16(ymm16bf, widenBF16) }
}

// widen16 sets dst to the float32 values of the 16-bit elements at src (a
// memory operand or a register of half dst's width).
type widen16 func(src Op, dst VecVirtual)

// widenF16 converts half-precision values (F16C, or AVX512F for zmm).
func widenF16(src Op, dst VecVirtual) { VCVTPH2PS(src, dst) }

// widenBF16 puts each bfloat16 value into the top half of a float32 lane.
func widenBF16(src Op, dst VecVirtual) {
	VPMOVZXWD(src, dst)
	VPSLLD(U8(16), dst, dst)
}

// lanes16 is what the 16-bit row kernels take from an implementation.
type lanes16 struct {
	lanes int
	// pairsBF16 has the rows kernels take 2·lanes bfloat16 elements a
	// step, through scorePairsBF16 and blendPairsBF16.
	pairsBF16 bool
	vec       func() VecVirtual
	zeros     func(n int) []VecVirtual
	// tail returns the mask of the first n lanes (1 <= n < lanes).
	tail func(n Register) Op
	// load and store move floats, only the lanes of mask if it is not nil.
	load  func(m Mem, mask Op) VecVirtual
	store func(v VecVirtual, m Mem, mask Op)
	// part returns the widened first n elements at m (n the register tail
	// was made from), the other lanes zero, reading no other byte.
	part func(m Mem, n Register, mask Op, w widen16) VecVirtual
	// sums stores the horizontal sums of 1 or 8 accumulators at dst.
	sums func(acc []VecVirtual, dst Register)
}

var ymm16 = lanes16{
	lanes: 8,
	vec:   func() VecVirtual { return YMM() },
	zeros: zeros,
	tail:  func(n Register) Op { return tailMask(n) },
	load: func(m Mem, mask Op) VecVirtual {
		v := YMM()
		if mask == nil {
			VMOVUPS(m, v)
		} else {
			VMASKMOVPS(m, mask, v)
		}
		return v
	},
	store: func(v VecVirtual, m Mem, mask Op) {
		if mask == nil {
			VMOVUPS(v, m)
		} else {
			VMASKMOVPS(v, mask, m)
		}
	},
	part: partYMM,
	sums: storeSums,
}

// ymm16bf is ymm16 for the bfloat16 score rows.
var ymm16bf = func() lanes16 { l := ymm16; l.pairsBF16 = true; return l }()

// parts numbers partYMM's labels within a function.
var parts = map[string]int{}

// partYMM inserts the n < 8 elements at m one halfword at a time into a
// zeroed XMM and widens them from there: VMASKMOVPS masks only whole
// dwords, so a masked load could reach two bytes past the row.
func partYMM(m Mem, n Register, _ Op, w widen16) VecVirtual {
	parts[fn]++
	done := fmt.Sprintf("%s_part%d", fn, parts[fn])
	x, t := XMM(), GP32()
	VXORPS(x, x, x)
	for i := range 7 {
		if i > 0 {
			CMPQ(n, U8(i))
			JBE(LabelRef(done))
		}
		e := m
		e.Disp += 2 * i
		MOVWLZX(e, t)
		VPINSRW(U8(i), t, x, x)
	}
	Label(done)
	v := YMM()
	w(x, v)
	return v
}

// genScoreRows16: dst[i] = Σ_j widen(k[i*stride+j])*q[j], genScoreRows's
// blocks of eight rows (one accumulator each, each chunk of q loaded once
// for eight FMAs) and then single rows, with the 16-bit elements widened
// on the way in. Each row's sum goes through the tree of sums its block
// size implies, as in scoreRows.
func genScoreRows16(l lanes16, w widen16) {
	dst := Load(Param("dst").Base(), GP64())
	rows := Load(Param("dst").Len(), GP64())
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	q := Load(Param("q").Base(), GP64())
	d := Load(Param("q").Len(), GP64())
	SHLQ(U8(1), stride) // bytes
	rem := GP64()       // d%lanes columns, after the full chunks
	MOVQ(d, rem)
	ANDQ(U32(l.lanes-1), rem)
	full := GP64() // bytes of k's full chunks in a row
	MOVQ(d, full)
	ANDQ(I32(-l.lanes), full)
	SHLQ(U8(1), full)

	for _, R := range []int{8, 1} {
		name := fmt.Sprintf("%s_rows%d", fn, R)
		Label(name)
		CMPQ(rows, U8(R))
		JL(LabelRef(name + "_next"))
		s3, k4 := GP64(), GP64()
		LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
		if R == 8 {
			LEAQ(Mem{Base: k, Index: stride, Scale: 4}, k4)
		}
		row := func(r int) Mem { return rowAddr(k, k4, stride, s3, r) }
		ahead := scoreAhead16(l, R, d, k, stride)
		acc := l.zeros(R)
		c := GP64() // bytes of k's row done; q is twice as far along
		XORQ(c, c)
		if l.pairsBF16 {
			scorePairsBF16(name, acc, q, c, full, row, func() {
				ahead(32)
				ADDQ(U8(32), k)
				if R == 8 {
					ADDQ(U8(32), k4)
				}
			})
		}
		Label(name + "_chunk")
		CMPQ(c, full)
		JAE(LabelRef(name + "_tail"))
		qv := l.load(Mem{Base: q, Index: c, Scale: 2}, nil)
		for r := range R {
			t := l.vec()
			w(row(r), t)
			VFMADD231PS(t, qv, acc[r])
		}
		step := 2 * l.lanes
		ahead(step)
		ADDQ(U8(step), c)
		ADDQ(U8(step), k)
		if R == 8 {
			ADDQ(U8(step), k4)
		}
		JMP(LabelRef(name + "_chunk"))

		// The tail's lanes past d are zero in both factors and add +0.
		Label(name + "_tail")
		TESTQ(rem, rem)
		JZ(LabelRef(name + "_reduce"))
		mask := l.tail(rem)
		qt := l.load(Mem{Base: q, Index: c, Scale: 2}, mask)
		for r := range R {
			VFMADD231PS(l.part(row(r), rem, mask, w), qt, acc[r])
		}

		Label(name + "_reduce")
		l.sums(acc, dst)
		SUBQ(c, k)
		blk := GP64()
		MOVQ(stride, blk)
		if R > 1 {
			IMUL3Q(U8(R), blk, blk)
		}
		ADDQ(blk, k)
		ADDQ(U8(4*R), dst)
		SUBQ(U8(R), rows)
		JMP(LabelRef(name))
		Label(name + "_next")
	}
	VZEROUPPER()
	RET()
}

// scoreAhead16 returns what a step of an R-row block of genScoreRows16
// that reads step bytes of each row calls to prefetch, in address order,
// as many bytes multiAhead rows on (nothing for the single rows). Without
// it the blocks, which read eight rows side by side, streamed K from
// memory at the rate of one stream; from memory the prefetches ask for
// more lines at once, as scoreRowsMulti's do (measured:
// docs/performance/amd-epyc-zen5.md#the-decode-step-against-its-roofline-2026-12-07,
// and for avx2 docs/performance/amd-epyc-zen3.md#the-one-row-kernels-over-16-bit-and-int8-rows-ask-ahead).
func scoreAhead16(l lanes16, R int, d, k, stride Register) func(step int) {
	if R == 1 {
		return func(int) {}
	}
	next := GP64()
	IMUL3Q(U32(multiAhead), stride, next)
	ADDQ(k, next)
	reachRows("k", 1, R, d, next, k)
	return func(step int) {
		for j := range R * step / 64 {
			PREFETCHT0(Mem{Base: next, Disp: 64 * j})
		}
		ADDQ(U32(R*step), next)
	}
}

// genBlendRows16: acc[j] += Σ_i w[i]*widen(v[i*stride+j]), over column
// chunks of up to eight vectors held in registers while the rows stream
// past, each row's FMAs in row order (the generic twin's order, with
// fused products); then the last d%lanes columns under a mask.
func genBlendRows16(l lanes16, wd widen16) {
	acc := Load(Param("acc").Base(), GP64())
	d := Load(Param("acc").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	rows := Load(Param("w").Len(), GP64())
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(1), stride) // bytes

	ahead := blendAhead16(l, v, stride)
	// over emits the loop over the rows: add(wb, row) for each.
	over := func(name string, add func(wb VecVirtual, row Register)) {
		wp, vp, r := GP64(), GP64(), GP64()
		MOVQ(w, wp)
		MOVQ(v, vp)
		MOVQ(rows, r)
		Label(name + "_row")
		TESTQ(r, r)
		JZ(LabelRef(name + "_end"))
		wb := l.vec()
		VBROADCASTSS(Mem{Base: wp}, wb)
		add(wb, vp)
		ADDQ(U8(4), wp)
		ADDQ(stride, vp)
		DECQ(r)
		JMP(LabelRef(name + "_row"))
		Label(name + "_end")
	}

	if l.pairsBF16 {
		blendPairsBF16(acc, d, v, over, ahead)
	}
	for _, C := range []int{8, 4, 2, 1} {
		name := fmt.Sprintf("%s_cols%d", fn, C)
		Label(name)
		CMPQ(d, U32(l.lanes*C))
		JL(LabelRef(name + "_next"))
		a := make([]VecVirtual, C)
		for j := range a {
			a[j] = l.load(Mem{Base: acc, Disp: 4 * l.lanes * j}, nil)
		}
		over(name, func(wb VecVirtual, row Register) {
			for j := range a {
				t := l.vec()
				wd(Mem{Base: row, Disp: 2 * l.lanes * j}, t)
				VFMADD231PS(t, wb, a[j])
			}
			ahead(row, 2*l.lanes*C)
		})
		for j := range a {
			l.store(a[j], Mem{Base: acc, Disp: 4 * l.lanes * j}, nil)
		}
		ADDQ(U32(4*l.lanes*C), acc)
		ADDQ(U32(2*l.lanes*C), v)
		SUBQ(U32(l.lanes*C), d)
		JMP(LabelRef(name))
		Label(name + "_next")
	}
	TESTQ(d, d)
	JZ(LabelRef(fn + "_done"))
	mask := l.tail(d)
	a := l.load(Mem{Base: acc}, mask)
	over(fn+"_part", func(wb VecVirtual, row Register) {
		VFMADD231PS(l.part(Mem{Base: row}, d, mask, wd), wb, a)
	})
	l.store(a, Mem{Base: acc}, mask)
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}

// blendAhead16 returns what genBlendRows16's loop over the rows calls
// with each row and the bytes of it a pass reads, to prefetch those bytes
// of the row multiAhead rows on where they lie inside v: a prefetch stays
// inside its kernel's slice (see keepInside). A compare and a branch per
// row, where clamping the address (two LEAQs and a CMOV) took 5-7% more
// time from the L3.
func blendAhead16(l lanes16, v, stride Register) func(row Register, bytes int) {
	widest := 2 * l.lanes * 8 // the bytes of the widest pass, eight vectors
	far, limit := GP64(), GP64()
	IMUL3Q(U32(multiAhead), stride, far)
	MOVQ(argAddr(Param("v").Len()), limit)
	LEAQ(Mem{Base: v, Index: limit, Scale: 2, Disp: -widest}, limit)
	SUBQ(far, limit) // the last row whose prefetch stays inside v
	n := 0
	return func(row Register, bytes int) {
		n++
		skip := fmt.Sprintf("%s_ahead%d", fn, n)
		CMPQ(row, limit)
		JA(LabelRef(skip))
		for j := range max(1, bytes/64) {
			PREFETCHT0(Mem{Base: row, Index: far, Scale: 1, Disp: 64 * j})
		}
		Label(skip)
	}
}

// scorePairsBF16 emits the avx2 bfloat16 score loop over sixteen elements
// of each row a step, while that many remain before full: the eight
// dwords of a 32-byte load hold each an even element in the low half and
// an odd one in the high half, which a shift and an AND make floats of,
// and q's sixteen floats are split into its even and odd elements to
// match. That is two integer instructions per sixteen elements where
// widening eight at a time takes four (VPMOVZXWD and VPSLLD per eight),
// on the ports the FMAs need. advance moves k's row pointers on by 32
// bytes.
func scorePairsBF16(name string, acc []VecVirtual, q, c, full Register, row func(r int) Mem, advance func()) {
	hi := YMM()
	VBROADCASTSS(vec32("bf16_hi", 0xffff0000), hi)
	Label(name + "_pairs")
	end := GP64()
	LEAQ(Mem{Base: c, Disp: 32}, end)
	CMPQ(end, full)
	JA(LabelRef(name + "_chunk"))
	q0, q1 := YMM(), YMM()
	VMOVUPS(Mem{Base: q, Index: c, Scale: 2}, q0)
	VMOVUPS(Mem{Base: q, Index: c, Scale: 2, Disp: 32}, q1)
	qe, qo := splitPairs(q0, q1)
	for r := range acc {
		x, e := YMM(), YMM()
		VMOVDQU(row(r), x)
		VPSLLD(U8(16), x, e)
		VPAND(hi, x, x)
		VFMADD231PS(e, qe, acc[r])
		VFMADD231PS(x, qo, acc[r])
	}
	ADDQ(U8(32), c)
	advance()
	JMP(LabelRef(name + "_pairs"))
}

// blendPairsBF16 emits the avx2 bfloat16 blend over chunks of 16·C
// columns while that many remain, scorePairsBF16's split applied to
// acc: each 16 columns are held as their even and odd floats, widened
// from a 32-byte load of every row by a shift and an AND, and put back
// in order as the chunk is stored. Each column still adds its rows in
// order, so the sums are those of the plain loop. over(name, add) emits
// the walk over the rows; acc, d and v advance past each chunk.
func blendPairsBF16(acc, d, v Register, over func(name string, add func(wb VecVirtual, row Register)), ahead func(row Register, bytes int)) {
	hi := YMM()
	VBROADCASTSS(vec32("bf16_hi", 0xffff0000), hi)
	for _, C := range []int{4, 2, 1} {
		name := fmt.Sprintf("%s_pairs%d", fn, C)
		Label(name)
		CMPQ(d, U32(16*C))
		JL(LabelRef(name + "_next"))
		ae, ao := make([]VecVirtual, C), make([]VecVirtual, C)
		for j := range C {
			a0, a1 := YMM(), YMM()
			VMOVUPS(Mem{Base: acc, Disp: 64 * j}, a0)
			VMOVUPS(Mem{Base: acc, Disp: 64*j + 32}, a1)
			ae[j], ao[j] = splitPairs(a0, a1)
		}
		over(name, func(wb VecVirtual, row Register) {
			for j := range C {
				x, e := YMM(), YMM()
				VMOVDQU(Mem{Base: row, Disp: 32 * j}, x)
				VPSLLD(U8(16), x, e)
				VPAND(hi, x, x)
				VFMADD231PS(e, wb, ae[j])
				VFMADD231PS(x, wb, ao[j])
			}
			ahead(row, 32*C)
		})
		for j := range C {
			lo, hi2 := joinPairs(ae[j], ao[j])
			VMOVUPS(lo, Mem{Base: acc, Disp: 64 * j})
			VMOVUPS(hi2, Mem{Base: acc, Disp: 64*j + 32})
		}
		ADDQ(U32(64*C), acc)
		ADDQ(U32(32*C), v)
		SUBQ(U32(16*C), d)
		JMP(LabelRef(name))
		Label(name + "_next")
	}
}

// splitPairs returns the even and the odd floats of the sixteen in a0 and
// a1 (a register or memory), each in the lane order of a block of sixteen
// bfloat16 elements split by a shift and a mask: VSHUFPS picks the even
// (odd) floats of each 128-bit lane of a0 and a1 as qwords a0lo a1lo |
// a0hi a1hi, and VPERMPD puts them in order.
func splitPairs(a0 VecVirtual, a1 Op) (ae, ao VecVirtual) {
	ae, ao = YMM(), YMM()
	VSHUFPS(U8(0x88), a1, a0, ae)
	VPERMPD(U8(0xd8), ae, ae)
	VSHUFPS(U8(0xdd), a1, a0, ao)
	VPERMPD(U8(0xd8), ao, ao)
	return ae, ao
}

// joinPairs undoes splitPairs, overwriting ae and ao: in 128-bit lanes the
// even floats are a0 a2 a8 a10 | a4 a6 a12 a14 once VPERMPD has swapped
// their middle qwords back, and the odd ones likewise, so unpacking
// interleaves them in order.
func joinPairs(ae, ao VecVirtual) (lo, hi VecVirtual) {
	VPERMPD(U8(0xd8), ae, ae)
	VPERMPD(U8(0xd8), ao, ao)
	lo, hi = YMM(), YMM()
	VUNPCKLPS(ao, ae, lo)
	VUNPCKHPS(ao, ae, hi)
	return lo, hi
}
