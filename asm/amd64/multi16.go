package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The multi-row kernels over 16-bit K/V rows on eight lanes: the float32
// multi-row kernels' blocks (multi.go), each chunk of a key or value row
// widened once for every row, in the avx2 16-bit one-row kernels' lanes
// and order (rows16.go), so that each row gets their bits: the scores
// while the keys come in whole blocks (as for the float32 kernels, the
// blocks and the single keys after them are summed by different trees),
// the blends always.

func init() {
	rowFuncs(avx2, "scoreRowsMultiF16", 1, 4, false, func(R int, ask bool) {
		scoreMulti16(R, widenF16, false)
		epilogue("smulti16")
	})
	rowFuncs(avx2, "scoreRowsMultiBF16", 1, 4, false, func(R int, ask bool) {
		scoreMulti16(R, widenBF16, true)
		epilogue("smulti16")
	})
	rowFuncs(avx2, "scoreRowsMultiPairedBF16", 1, 4, false, func(R int, ask bool) {
		paired = true
		defer func() { paired = false }()
		scoreMulti16(R, widenBF16, true)
		epilogue("smulti16")
	})
	rowFuncs(avx2, "blendRowsMultiF16", 1, 4, true, func(R int, ask bool) {
		blendMulti16(R, askPrefix("bmulti16", ask), ask, widenF16, false)
		epilogue(askPrefix("bmulti16", ask))
	})
	// The int8 score: the f16 one's blocks over rows that start with
	// their scale (see rowsI8). The int8 blend has its own generator
	// (blendMultiI8Y, multi8.go).
	rowFuncs(avx2, "scoreRowsMultiI8", 1, 4, false, func(R int, ask bool) {
		rowsI8 = true
		defer func() { rowsI8 = false }()
		scoreMulti16(R, widenI8YOp, false)
		epilogue("smulti16")
	})
	rowFuncs(avx2, "blendRowsMultiI8", 1, 4, false, func(R int, ask bool) {
		blendMultiI8Y(R)
		epilogue("bmulti8y")
	})
	rowFuncs(avx2, "blendRowsMultiBF16", 1, 4, true, func(R int, ask bool) {
		blendMulti16(R, askPrefix("bmulti16", ask), ask, widenBF16, true)
		epilogue(askPrefix("bmulti16", ask))
	})
}

// scoreMulti16: dst[r*n+j] = Σ_c widen(k[j*stride+c])*q[r*d+c] for R
// rows, in scoreMulti's blocks of keys; it ends at smulti16_done. With
// pairs (bfloat16) the columns go sixteen at a time first, as in
// scorePairsBF16, which fixes which lane each product is added in.
func scoreMulti16(R int, w widen16, pairs bool) {
	m := loadMultiOf(R, "dst", "q", "k", elemShift())
	name := fmt.Sprintf("smulti16%d", R)
	db, nb := GP64(), GP64()
	MOVQ(m.d, db)
	SHLQ(U8(2), db)
	MOVQ(m.n, nb)
	SHLQ(U8(2), nb)
	keys := multiScoreKeys[R]
	if pairs {
		// Four rows' pairs of key halves beside twelve accumulators
		// would not fit: two keys a block. In pair order one half of
		// three keys at a time fits (scorePairs16), and three keys a
		// block took 0.88 of the time from L1 and L2 (measured:
		// docs/performance/amd-epyc-zen3.md#the-zen-3-on-2026-12-07-night-three-key-blocks-of-bfloat16).
		// Otherwise the 16-bit kernels take the float32 kernels' wider
		// blocks, which pay over an f16 cache too (measured:
		// docs/performance/amd-epyc-zen3.md#the-avx2-multi-row-kernels-wider-blocks-from-code-comments).
		keys = map[int][]int{1: {8, 1}, 2: {4, 1}, 3: {2, 1}, 4: {2, 1}}[R]
		if paired && R == 4 {
			keys = []int{3, 1}
		}
	}
	keyBlocks(name, keys, m, func(P int, loop string) { scoreKeys16(R, P, m, db, nb, loop, w, pairs) })
}

// scoreKeys16 emits the scores of P keys from m.kv against the R query
// rows at m.in, stored at m.o (row r at m.o + r·nb).
func scoreKeys16(R, P int, m multiShape, db, nb Register, name string, w widen16, pairs bool) {
	keys := newRows(m.kv, m.stride)
	var k4 Register
	if P > 4 {
		k4 = GP64()
		LEAQ(Mem{Base: m.kv, Index: m.stride, Scale: 4}, k4)
	}
	key := func(j int) Mem {
		at := rowAddr(keys.p, k4, keys.s, keys.s3, j)
		if rowsI8 {
			at.Disp += 4 // the row's scale
		}
		return at
	}
	eb := 2 // an element's bytes
	if rowsI8 {
		eb = 1
	}
	// The rows multiAhead on, in address order, as in scoreKeysZ: a step
	// of P keys' elems elements asks for their bytes' lines, at least one
	// (the blocks of single keys prefetch nothing).
	var next Register
	if P > 1 {
		next = GP64()
		IMUL3Q(U32(multiAhead), m.stride, next)
		ADDQ(m.kv, next)
		reachRows("k", elemShift(), P, m.d, next, m.kv)
	}
	qp := GP64()
	MOVQ(m.in, qp)
	q := newRows(qp, db)
	acc := zeros(R * P)
	cnt := GP64()
	MOVQ(m.d, cnt)
	step := func(elems int) {
		if next != nil {
			for i := range max(1, (eb*elems*P+63)/64) {
				PREFETCHT0(Mem{Base: next, Disp: 64 * i})
			}
			ADDQ(U32(eb*elems*P), next)
		}
		ADDQ(U8(eb*elems), m.kv)
		ADDQ(U8(4*elems), qp)
		if k4 != nil {
			ADDQ(U8(eb*elems), k4)
		}
		SUBQ(U8(elems), cnt)
	}
	if pairs {
		Label(name + "_pairs")
		CMPQ(cnt, U8(16))
		JL(LabelRef(name + "_chunk"))
		scorePairs16(R, P, key, q, acc)
		step(16)
		JMP(LabelRef(name + "_pairs"))
	}
	// Where the R query chunks do not fit beside the accumulators (four
	// rows of three keys), the P widened key chunks are held instead and
	// each query chunk is loaded in turn, as in scoreChunk.
	keysHeld := R*P+R+1 > 16
	Label(name + "_chunk")
	CMPQ(cnt, U8(8))
	JL(LabelRef(name + "_tail"))
	qv := make([]VecVirtual, R)
	if keysHeld {
		t := make([]VecVirtual, P)
		for j := range P {
			t[j] = YMM()
			w(key(j), t[j])
		}
		for r := range R {
			x := YMM()
			VMOVUPS(q.at(r), x)
			for j := range P {
				VFMADD231PS(t[j], x, acc[r*P+j])
			}
		}
	} else {
		for r := range R {
			qv[r] = YMM()
			VMOVUPS(q.at(r), qv[r])
		}
		for j := range P {
			t := YMM()
			w(key(j), t)
			for r := range R {
				VFMADD231PS(t, qv[r], acc[r*P+j])
			}
		}
	}
	step(8)
	JMP(LabelRef(name + "_chunk"))

	// As in genScoreRows16's tail, both factors are zero past d.
	Label(name + "_tail")
	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_sum"))
	mask := tailMask(cnt)
	if keysHeld {
		// A key at a time, the query chunks loaded again for each.
		for j := range P {
			t := part16or8(key(j), cnt, mask, w)
			for r := range R {
				x := YMM()
				VMASKMOVPS(q.at(r), mask, x)
				VFMADD231PS(t, x, acc[r*P+j])
			}
		}
	} else {
		for r := range R {
			qv[r] = YMM()
			VMASKMOVPS(q.at(r), mask, qv[r])
		}
		for j := range P {
			t := part16or8(key(j), cnt, mask, w)
			for r := range R {
				VFMADD231PS(t, qv[r], acc[r*P+j])
			}
		}
	}
	Label(name + "_sum")
	// Rewind the column walk: d%8 columns were not stepped over.
	back := GP64()
	MOVQ(m.d, back)
	ANDQ(I32(-8), back)
	if !rowsI8 {
		SHLQ(U8(1), back)
	}
	SUBQ(back, m.kv)
	if rowsI8 {
		i8Keys = &keys
	}
	storeMulti(R, P, acc, newRows(m.o, nb))
	i8Keys = nil
}

// paired says that the query rows come in pair order
// (scoreRowsMultiPairedBF16): each block's even and odd halves are loaded,
// not split, which brings four rows' scores from L2 near f16's speed
// (measured: docs/performance/amd-epyc-zen3.md#bfloat16-in-pair-order-from-code-comments).
var paired bool

// scorePairs16 emits one step of sixteen bfloat16 columns of P keys
// against R query rows, scorePairsBF16's: a key's 32 bytes make its even
// elements (shifted up) and its odd ones (masked), and each query row's
// sixteen floats are split into its even and odd ones to match; each
// accumulator takes the even products, then the odd. With up to three
// rows every row's halves are split first and the keys go past them;
// four rows' halves would not fit in the sixteen registers beside the
// accumulators, so there each row's are split in turn and the keys' held.
func scorePairs16(R, P int, key func(j int) Mem, q rowRegs, acc []VecVirtual) {
	hi := vec32("bf16_hi", 0xffff0000)
	split := func(r int) (qe, qo VecVirtual) {
		at := q.at(r)
		if paired {
			// The block's halves as the caller laid them out.
			at1 := at
			at1.Disp += 32
			qe, qo = YMM(), YMM()
			VMOVUPS(at, qe)
			VMOVUPS(at1, qo)
			return qe, qo
		}
		at1 := at
		at1.Disp += 32
		q0 := YMM()
		VMOVUPS(at, q0)
		return splitPairs(q0, at1)
	}
	halves := func(j int) (e, x VecVirtual) {
		x, e = YMM(), YMM()
		VMOVDQU(key(j), x)
		VPSLLD(U8(16), x, e)
		VPAND(hi, x, x)
		return e, x
	}
	if R <= 3 {
		qe, qo := make([]VecVirtual, R), make([]VecVirtual, R)
		for r := range R {
			qe[r], qo[r] = split(r)
		}
		for j := range P {
			e, x := halves(j)
			for r := range R {
				VFMADD231PS(e, qe[r], acc[r*P+j])
				VFMADD231PS(x, qo[r], acc[r*P+j])
			}
		}
		return
	}
	if 2*P+2+R*P > 16 {
		// Four rows of three keys (in pair order): the keys' even halves,
		// then their odd ones (the keys loaded again), each row's half
		// loaded in turn.
		if !paired {
			panic("scorePairs16: the rows' halves held apart need pair order")
		}
		half := func(odd bool) {
			t := make([]VecVirtual, P)
			for j := range P {
				t[j] = YMM()
				VMOVDQU(key(j), t[j])
				if odd {
					VPAND(hi, t[j], t[j])
				} else {
					VPSLLD(U8(16), t[j], t[j])
				}
			}
			for r := range R {
				at := q.at(r)
				if odd {
					at.Disp += 32
				}
				x := YMM()
				VMOVUPS(at, x)
				for j := range P {
					VFMADD231PS(t[j], x, acc[r*P+j])
				}
			}
		}
		half(false)
		half(true)
		return
	}
	e, x := make([]VecVirtual, P), make([]VecVirtual, P)
	for j := range P {
		e[j], x[j] = halves(j)
	}
	for r := range R {
		qe, qo := split(r)
		for j := range P {
			VFMADD231PS(e[j], qe, acc[r*P+j])
			VFMADD231PS(x[j], qo, acc[r*P+j])
		}
	}
}

// blendMulti16: acc[r*d+c] += Σ_j w[r*n+j]*widen(v[j*stride+c]) for R
// rows, in blendMulti's blocks of columns (multiBlendCols, then single
// vectors, then a masked tail) but one stream of keys in order,
// genBlendRows16's. Its bfloat16 pairs change no column's order of sums,
// so the plain widening serves both formats.
//
// With next not empty the front calls a copy of it that asks for the
// lines of next as it goes (see blendColumns16), as blendMulti's does;
// the copy without asks for nothing.
//
// With pairs (bfloat16) the columns go sixteen at a time first, in pair
// order (see blendPairs16).
//
// Its labels are named from prefix, and it ends at prefix+"_done".
func blendMulti16(R int, prefix string, ask bool, wd widen16, pairs bool) {
	m := loadMultiOf(R, "w", "acc", "v", 1)
	name := fmt.Sprintf("%s%d", prefix, R)
	done := prefix + "_done"
	db, nb := GP64(), GP64()
	MOVQ(m.d, db)
	SHLQ(U8(2), db)
	MOVQ(m.n, nb)
	SHLQ(U8(2), nb)
	var pf Register // where the lines asked for ahead go on
	if ask {
		pf = Load(Param("next").Base(), GP64())
	}
	if pairs {
		for _, C := range multiBlendPairs[R] {
			loop, next := fmt.Sprintf("%s_p%d", name, C), fmt.Sprintf("%s_p%d_next", name, C)
			Label(loop)
			CMPQ(m.d, U8(16*C))
			JL(LabelRef(next))
			blendPairs16(R, C, m, db, nb, pf, loop)
			ADDQ(U32(64*C), m.in)
			ADDQ(U32(32*C), m.kv)
			SUBQ(U8(16*C), m.d)
			JMP(LabelRef(loop))
			Label(next)
		}
	}
	for _, P := range []int{multiBlendCols[R], 1} {
		loop, next := fmt.Sprintf("%s_c%d", name, P), fmt.Sprintf("%s_c%d_next", name, P)
		Label(loop)
		CMPQ(m.d, U8(8*P))
		JL(LabelRef(next))
		blendColumns16(R, P, m, db, nb, pf, loop, nil, wd)
		ADDQ(U32(32*P), m.in)
		ADDQ(U32(16*P), m.kv)
		SUBQ(U8(8*P), m.d)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(m.d, m.d)
	JZ(LabelRef(done))
	blendColumns16(R, 1, m, db, nb, pf, name+"_tail", tailMask(m.d), wd)
}

// blendColumns16 emits the blend of P vectors of columns (one masked
// vector, the last m.d columns, if mask is not nil) for R rows over every
// key, in key order, the FMAs taking genBlendRows16's operands.
//
// If pf is not nil, each key's step asks for the lines at pf, which then
// moves on by the 16·P bytes the step reads (see blendColumns): a line
// for each 64 bytes of a step, so that every line of the caller's next
// call's rows is asked for.
func blendColumns16(R, P int, m multiShape, db, nb, pf Register, name string, mask VecVirtual, wd widen16) {
	a := make([]VecVirtual, R*P)
	move := func(load bool) {
		accs := newRows(m.in, db)
		for r := range R {
			for c := range P {
				at := accs.at(r)
				at.Disp += 32 * c
				switch {
				case load:
					a[r*P+c] = ymm16.load(at, mask)
				default:
					ymm16.store(a[r*P+c], at, mask)
				}
			}
		}
	}
	move(true)
	wp, vp, cnt := GP64(), GP64(), GP64()
	MOVQ(m.o, wp)
	MOVQ(m.kv, vp)
	MOVQ(m.n, cnt)
	ws := newRows(wp, nb)
	Label(name + "_key")
	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_keys_done"))
	widened := func(c int) VecVirtual {
		if mask != nil {
			return partYMM(Mem{Base: vp}, m.d, mask, wd)
		}
		t := YMM()
		wd(Mem{Base: vp, Disp: 16 * c}, t)
		return t
	}
	if pf != nil {
		if 16*P > 64 && 16*P%64 != 0 {
			panic("blendColumns16: no prefetch pattern for P")
		}
		for i := 0; 64*i < 16*P; i++ {
			PREFETCHT1(Mem{Base: pf, Disp: 64 * i})
		}
		ADDQ(U32(16*P), pf)
	}
	blockFMAs(R, P, a, widened, func(r int) VecVirtual { return weightY(ws.at(r)) })
	ADDQ(U8(4), wp)
	ADDQ(m.stride, vp)
	DECQ(cnt)
	JMP(LabelRef(name + "_key"))
	Label(name + "_keys_done")
	move(false)
}

// multiBlendPairs lists, by row count, the blocks of sixteen bfloat16
// columns the multi-row blend takes a pass in pair order, widest first:
// as many as their 2·R·C accumulators, the C loaded vectors widened into
// 2·C, a broadcast weight and the mask leave registers for.
var multiBlendPairs = map[int][]int{1: {3, 2, 1}, 2: {2, 1}, 3: {1}, 4: {1}}

// blendPairs16 emits the bfloat16 blend of C blocks of sixteen columns for
// R rows over every key, in key order, as blendPairsBF16 does for one row:
// each block of V is loaded once as sixteen 16-bit elements and split into
// its even elements (shifted into the top halves) and its odd ones (the
// top halves masked), two FMAs per broadcast weight. Widening eight
// columns at a time instead (VPMOVZXWD and VPSLLD for each) took two
// shuffle-port instructions per eight columns beside the FMAs, and the
// bfloat16 blend was far slower than the float16 one (measured:
// docs/performance/amd-epyc-zen3.md#bfloat16-in-pair-order-from-code-comments).
// The accumulators are split into even and odd columns as they are loaded
// and put back in order as they are stored, so every column's sums are the
// bits of key order.
//
// pf, if not nil, is asked for as in blendColumns16: a line for each 64
// bytes of a key's step, then it moves on by the step's 32·C bytes.
func blendPairs16(R, C int, m multiShape, db, nb, pf Register, name string) {
	hi := YMM()
	VBROADCASTSS(vec32("bf16_hi", 0xffff0000), hi)
	accs := newRows(m.in, db)
	accAt := func(r, j, half int) Mem {
		at := accs.at(r)
		at.Disp += 64*j + 32*half
		return at
	}
	ae, ao := make([]VecVirtual, R*C), make([]VecVirtual, R*C)
	for r := range R {
		for j := range C {
			i := r*C + j
			a0, a1 := YMM(), YMM()
			VMOVUPS(accAt(r, j, 0), a0)
			VMOVUPS(accAt(r, j, 1), a1)
			ae[i], ao[i] = splitPairs(a0, a1)
		}
	}
	wp, vp, cnt := GP64(), GP64(), GP64()
	MOVQ(m.o, wp)
	MOVQ(m.kv, vp)
	MOVQ(m.n, cnt)
	ws := newRows(wp, nb)
	Label(name + "_key")
	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_keys_done"))
	if pf != nil {
		for i := 0; 64*i < 32*C; i++ {
			PREFETCHT1(Mem{Base: pf, Disp: 64 * i})
		}
		ADDQ(U32(32*C), pf)
	}
	e, x := make([]VecVirtual, C), make([]VecVirtual, C)
	for j := range C {
		x[j], e[j] = YMM(), YMM()
		VMOVDQU(Mem{Base: vp, Disp: 32 * j}, x[j])
		VPSLLD(U8(16), x[j], e[j])
		VPAND(hi, x[j], x[j])
	}
	for r := range R {
		b := YMM()
		VBROADCASTSS(ws.at(r), b)
		for j := range C {
			VFMADD231PS(e[j], b, ae[r*C+j])
			VFMADD231PS(x[j], b, ao[r*C+j])
		}
	}
	ADDQ(U8(4), wp)
	ADDQ(m.stride, vp)
	DECQ(cnt)
	JMP(LabelRef(name + "_key"))
	Label(name + "_keys_done")
	for r := range R {
		for j := range C {
			lo, hi2 := joinPairs(ae[r*C+j], ao[r*C+j])
			VMOVUPS(lo, accAt(r, j, 0))
			VMOVUPS(hi2, accAt(r, j, 1))
		}
	}
}

// elemShift is the log2 of a 16-bit or (rowsI8) an int8 element's bytes.
func elemShift() uint8 {
	if rowsI8 {
		return 0
	}
	return 1
}

// part16or8 is partYMM, or partI8 for int8 rows (rowsI8; m already past the
// row's scale).
func part16or8(m Mem, n Register, mask VecVirtual, w widen16) VecVirtual {
	if rowsI8 {
		return partI8(m, n)
	}
	return partYMM(m, n, mask, w)
}

// widenI8YOp is widenI8Y as a widen16: eight int8 elements at src (an m64)
// widened to floats.
func widenI8YOp(src Op, dst VecVirtual) {
	VPMOVSXBD(src, dst)
	VCVTDQ2PS(dst, dst)
}

// weightY broadcasts the weight at w.
func weightY(w Mem) VecVirtual {
	b := YMM()
	VBROADCASTSS(w, b)
	return b
}
