package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The multi-row kernels on sixteen lanes. Each row's results are the bits
// the avx512 one-row kernels give it, for any number of keys: the scores
// go through the same sum tree (rowsSums) whatever the block, and the
// blend keeps genBlendRowsZ's two streams with accumulators of their own.

func init() {
	rowFuncs(avx512, "scoreRowsMulti", 1, 4, false, func(R int, ask bool) {
		scoreMultiZ(R, "smultiz", nil, false)
		epilogue("smultiz")
	})
	rowFuncs(avx512, "scoreRowsMultiNear", 4, 4, false, func(R int, ask bool) {
		scoreNear = true
		defer func() { scoreNear = false }()
		scoreMultiZ(R, "smultinz", nil, false)
		epilogue("smultinz")
	})
	rowFuncs(avx512, "blendRowsMulti", 1, 4, true, func(R int, ask bool) {
		blendMultiZ(R, askPrefix("bmultiz", ask), ask)
		epilogue(askPrefix("bmultiz", ask))
	})
	rowFuncs(avx512, "scoreRowsMulti8", 5, 8, true, func(R int, ask bool) {
		scoreMultiZ(R, askPrefix("smulti8z", ask), nil, ask)
		epilogue(askPrefix("smulti8z", ask))
	})
	rowFuncs(avx512, "blendRowsMulti8", 5, 8, true, func(R int, ask bool) {
		blendMultiZ(R, askPrefix("bmulti8z", ask), ask)
		epilogue(askPrefix("bmulti8z", ask))
	})
}

// scoreMultiZ: dst[r*n+j] = Σ_c k[j*stride+c]*q[r*d+c] for R rows, over
// keys of float32 (w nil) or of 16-bit elements widened by w as they are
// loaded, its labels named from prefix; it ends at prefix+"_done".
//
// One to four rows: keys go in blocks of KP (8 for one or two rows, 4 for
// three or four), their 16-float chunks loaded once and multiplied with
// the same chunk of every query row: R·KP accumulators summed by one
// tree. The last keys go one at a time. The blocks prefetch the rows
// multiAhead keys on, in address order (prefetches past the end of k
// never fault).
//
// Five to eight rows (scoreRowsMulti8): keys in blocks of two, whose ten
// to sixteen accumulators fill one sum tree, so that the query heads of a
// group of that size read each key row once. The copy for a non-empty
// also (ask set) asks for the lines of also as it goes; the copy without
// asks for nothing.
func scoreMultiZ(R int, prefix string, w widen16, ask bool) {
	shift := uint8(2)
	if w != nil {
		shift = 1
	}
	if rowsI8 {
		shift = 0
	}
	m := loadMultiOf(R, "dst", "q", "k", shift)
	name := fmt.Sprintf("%s%d", prefix, R)
	db, nb := GP64(), GP64() // bytes of a query row and of an output row
	MOVQ(m.d, db)
	SHLQ(U8(2), db)
	MOVQ(m.n, nb)
	SHLQ(U8(2), nb)
	KP := map[int]int{1: 8, 2: 8, 3: 4, 4: 4, 5: 2, 6: 2, 7: 2, 8: 2}[R]
	// The wide kernel's copy for a non-empty also asks for its lines as it
	// goes.
	var also Register
	if R > 4 && ask {
		also = Load(Param("also").Base(), GP64())
	}
	if w == nil {
		scoreRowMajorMultiZ(R, m, db, nb, name)
	}
	keyBlocks(name, []int{KP, 1}, m, func(P int, loop string) {
		if P == 1 {
			also = nil
		}
		scoreKeysZ(R, P, m, db, nb, loop, shift, w, also)
	})
}

// scoreKeysZ emits the scores of P keys from m.kv (elements of 1<<shift
// bytes, widened by w unless it is nil) against the R query rows at m.in,
// stored at m.o (row r at m.o + r·nb). If also is not nil, each step of
// whole chunks asks for P lines from it, in address order.
func scoreKeysZ(R, P int, m multiShape, db, nb Register, name string, shift uint8, w widen16, also Register) {
	keys := newRows(m.kv, m.stride)
	var k4 Register
	if P > 4 {
		k4 = GP64()
		LEAQ(Mem{Base: m.kv, Index: m.stride, Scale: 4}, k4)
	}
	// The rows multiAhead on, in address order: each chunk step asks for
	// the P chunks' bytes (P lines of float32, P/2 of 16-bit elements), so
	// a block's steps cover P rows of d elements (rows of K side by side;
	// the blocks of single keys prefetch nothing).
	var next Register
	if P > 1 && !scoreNear {
		next = GP64()
		IMUL3Q(U32(multiAhead), m.stride, next)
		ADDQ(m.kv, next)
		reachRows("k", shift, P, m.d, next, m.kv)
	}
	chunkBytes := 16 << shift
	qp := GP64()
	MOVQ(m.in, qp)
	q := rowsOf(R, qp, db)
	acc := zerosZ(R * P)
	cnt := GP64()
	MOVQ(m.d, cnt)
	chunk, tail, done := name+"_chunk", name+"_tail", name+"_sum"
	scoreChunk := func(mask Op, next Register) {
		if w == nil {
			scoreChunkZ(R, P, keys, k4, q, acc, mask, next)
		} else {
			scoreChunk16Z(R, P, keys, k4, q, acc, mask, next, w)
		}
	}
	Label(chunk)
	CMPQ(cnt, U8(16))
	JL(LabelRef(tail))
	scoreChunk(nil, next)
	if also != nil {
		// As many lines as the step reads of k.
		for j := range max(1, P*chunkBytes/64) {
			prefetchAhead(w, Mem{Base: also, Disp: 64 * j})
		}
		ADDQ(U8(P*chunkBytes), also)
	}
	ADDQ(U8(chunkBytes), m.kv)
	q.advance(64)
	if k4 != nil {
		ADDQ(U8(chunkBytes), k4)
	}
	if next != nil {
		ADDQ(U32(chunkBytes*P), next)
	}
	SUBQ(U8(16), cnt)
	JMP(LabelRef(chunk))
	Label(tail)
	TESTQ(cnt, cnt)
	JZ(LabelRef(done))
	scoreChunk(tailK(cnt), nil)
	Label(done)
	// Rewind the column walk: d%16 columns were not stepped over.
	back := GP64()
	MOVQ(m.d, back)
	ANDQ(I32(-16), back)
	SHLQ(U8(shift), back)
	SUBQ(back, m.kv)
	if rowsI8 {
		i8Keys = &keys
	}
	storeMultiZ(R, P, acc, rowsOf(R, m.o, nb))
	i8Keys = nil
}

// rowsOf is newRows, or newRows8 for more than four rows.
func rowsOf(R int, p, s Register) rowRegs {
	if R > 4 {
		return newRows8(p, s)
	}
	return newRows(p, s)
}

// scoreChunkZ multiplies one chunk of 16 columns (under mask, if not nil)
// of P keys with the same chunk of R query rows into acc, row r's key j in
// acc[r*P+j]. Masked, the FMAs merge, as genScoreRowsZ's do, so the lanes
// past d keep exactly what they held. If next is not nil, the P lines
// from next are prefetched, one after each key's chunk.
func scoreChunkZ(R, P int, keys rowRegs, k4 Register, q rowRegs, acc []VecVirtual, mask Op, next Register) {
	fma := func(a Op, b, dst VecVirtual) {
		if mask == nil {
			VFMADD231PS(a, b, dst)
		} else {
			VFMADD231PS(a, b, mask, dst)
		}
	}
	key := func(j int) Mem { return rowAddr(keys.p, k4, keys.s, keys.s3, j) }
	prefetch := func(j int) {
		if next != nil {
			prefetchAhead(nil, Mem{Base: next, Disp: 64 * j})
		}
	}
	if R == 1 {
		qv := loadZ(q.at(0), mask)
		for j := range P {
			fma(key(j), qv, acc[j])
			prefetch(j)
		}
		return
	}
	qv := make([]VecVirtual, R)
	for r := range R {
		qv[r] = loadZ(q.at(r), mask)
	}
	for j := range P {
		kv := loadZ(key(j), mask)
		for r := range R {
			fma(kv, qv[r], acc[r*P+j])
		}
		prefetch(j)
	}
}

// storeMultiZ stores the sums of the R·P accumulators (row r's P keys
// consecutive) at row r of out.
func storeMultiZ(R, P int, acc []VecVirtual, out rowRegs) {
	if P == 1 {
		for r := range R {
			x := hsumZ(acc[r])
			if i8Keys != nil {
				VMULSS(i8Keys.at(0), x, x)
			}
			VMOVSS(x, out.at(r))
		}
		return
	}
	s := rowsSums(acc)
	if i8Keys != nil {
		mulKeyScales(s, P, *i8Keys)
	}
	for r := range R {
		switch {
		case P == 8 && r == 0:
			VMOVUPS(s.AsY(), out.at(r))
		case P == 8:
			VEXTRACTF32X8(U8(r), s, out.at(r))
		case P == 4 && r == 0:
			VMOVUPS(s.AsX(), out.at(r))
		case P == 4:
			VEXTRACTF32X4(U8(r), s, out.at(r))
		case P == 2 && r%2 == 1:
			// Stored with row r-1's pair.
		case P == 2:
			x := s.AsX()
			if r > 0 {
				x = XMM()
				VEXTRACTF32X4(U8(r/2), s, x)
			}
			VMOVLPS(x, out.at(r))
			if r+1 < R {
				VMOVHPS(x, out.at(r+1))
			}
		default:
			panic("storeMultiZ: unsupported block")
		}
	}
}

// blendMultiZ: acc[r*d+c] += Σ_j w[r*n+j]*v[j*stride+c]. The columns go
// in blocks of C vectors (multiBlendBlocks) whose accumulators, a set for
// each of genBlendRowsZ's two key streams, stay in registers while the
// keys stream past: per key, R broadcast weights and C loads of the value
// row feed R·C FMAs. Then narrower blocks, then a masked tail. Five to
// eight rows (blendRowsMulti8) take a vector of columns at a time (two
// accumulators a row, the weights the FMAs' broadcast operands).
//
// With next not empty the front calls a copy of it that asks for the
// lines of next as it goes (see blendColumnsZ); the copy without asks for
// nothing, which a call whose V is in cache would pay for in load slots.
//
// blendMultiZ emits the blend of R rows, its labels named from prefix,
// asking for the lines of next if ask is set; it ends at prefix+"_done".
func blendMultiZ(R int, prefix string, ask bool) {
	m := loadMulti(R, "w", "acc", "v")
	// Here m.n is the keys, m.d the columns, m.in the accumulators and m.o
	// the weights.
	name := fmt.Sprintf("%s%d", prefix, R)
	done := prefix + "_done"
	// Five to eight rows need every register they can get in the key loop:
	// their accumulator rows' distance is loaded where it is used (db nil).
	var db Register
	if R <= 4 {
		db = GP64()
		MOVQ(m.d, db)
		SHLQ(U8(2), db)
	}
	nb := GP64()
	MOVQ(m.n, nb)
	SHLQ(U8(2), nb)
	var pf Register // where the lines asked for ahead go on
	if ask {
		pf = Load(Param("next").Base(), GP64())
	}
	nz := ZMM()
	VBROADCASTSS(vec32("rows_negzero", 0x80000000), nz)
	if R >= 2 && R <= 4 {
		blendSplitZ(R, m, db, nb, pf, nz, name)
	}
	for _, P := range multiBlendBlocks[R] {
		loop, next := fmt.Sprintf("%s_c%d", name, P), fmt.Sprintf("%s_c%d_next", name, P)
		Label(loop)
		CMPQ(m.d, U8(16*P))
		JL(LabelRef(next))
		blendColumnsZ(R, P, m, db, nb, pf, nz, loop, nil)
		ADDQ(U32(64*P), m.in)
		ADDQ(U32(64*P), m.kv)
		SUBQ(U8(16*P), m.d)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(m.d, m.d)
	JZ(LabelRef(done))
	blendColumnsZ(R, 1, m, db, nb, pf, nz, name+"_tail", tailK(m.d))
}

// blendColumnsZ emits the blend of P vectors of columns (one vector under
// mask if mask is not nil) for R rows over every key. As in blendColumns,
// the weights' base and count (m.o, m.n) are reloaded from the arguments
// after the key loop, which frees their registers for the second stream.
//
// If pf is not nil, each key's step of each stream asks for P lines at
// pf, in address order from the start of the caller's next call's value
// rows (see blendRowsMulti): as many lines as the step reads, so that over
// the passes the next call's rows arrive in L2 while this one computes,
// and that call reads V from there. Into L2 (PREFETCHT1): into L1 they
// held the fill buffers that this call's own loads from L2 wait for.
// Asking instead, in each pass, for the pass's own line some rows on (a
// strided walk for each pass), or for it in the next call's rows, was
// slower; before, with no prefetch, the one-row blend streamed V first
// for the others (measured:
// docs/performance/intel-xeon.md#the-multi-row-blends-ask-ahead-from-code-comments).
func blendColumnsZ(R, P int, m multiShape, db, nb, pf Register, nz VecVirtual, name string, mask Op) {
	a, s := make([]VecVirtual, R*P), make([]VecVirtual, R*P)
	// The accumulators' row addresses are formed where they move in and
	// out, and hold no register during the key loop.
	var accs rowRegs
	accAt := func(r, c int) Mem {
		at := accs.at(r)
		at.Disp += 64 * c
		return at
	}
	accs = rowsOf(R, m.in, accBytes(db, R))
	for r := range R {
		for c := range P {
			a[r*P+c] = loadZ(accAt(r, c), mask)
			s[r*P+c] = ZMM()
			VMOVAPS(nz, s[r*P+c])
		}
	}
	// Stream 0 walks keys [0, h) into a, stream 1 keys [h, 2h) and then
	// the odd last key 2h into s.
	w0, w1, v0, v1, cnt := GP64(), GP64(), GP64(), GP64(), GP64()
	MOVQ(m.n, cnt)
	SHRQ(U8(1), cnt)
	MOVQ(m.o, w0)
	LEAQ(Mem{Base: m.o, Index: cnt, Scale: 4}, w1)
	MOVQ(m.kv, v0)
	MOVQ(cnt, v1)
	IMULQ(m.stride, v1)
	ADDQ(m.kv, v1)
	s3 := GP64()
	LEAQ(Mem{Base: nb, Index: nb, Scale: 2}, s3)
	ws0, ws1 := rowRegs{p: w0, s: nb, s3: s3}, rowRegs{p: w1, s: nb, s3: s3}
	if R > 4 {
		ws0.p4, ws1.p4 = GP64(), GP64()
		LEAQ(Mem{Base: w0, Index: nb, Scale: 4}, ws0.p4)
		LEAQ(Mem{Base: w1, Index: nb, Scale: 4}, ws1.p4)
	}
	add := func(w rowRegs, vp Register, set []VecVirtual) {
		if pf != nil {
			for c := range P {
				PREFETCHT1(Mem{Base: pf, Disp: 64 * c})
			}
			ADDQ(U32(64*P), pf)
		}
		if weightOperands(R) {
			// Each weight is its FMAs' broadcast operand (see
			// weightOperand), which holds no register.
			for c := range P {
				t := loadZ(Mem{Base: vp, Disp: 64 * c}, mask)
				for r := range R {
					VFMADD231PS_BCST(w.at(r), t, set[r*P+c])
				}
			}
			return
		}
		b := make([]VecVirtual, R)
		for r := range R {
			b[r] = ZMM()
			VBROADCASTSS(w.at(r), b[r])
		}
		for c := range P {
			at := Mem{Base: vp, Disp: 64 * c}
			if R == 1 {
				if mask == nil {
					VFMADD231PS(at, b[0], set[c])
				} else {
					VFMADD231PS(at, b[0], mask, set[c])
				}
				continue
			}
			t := loadZ(at, mask)
			for r := range R {
				VFMADD231PS(t, b[r], set[r*P+c])
			}
		}
	}
	pair, done := name+"_pair", name+"_keys_done"
	Label(pair)
	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_odd"))
	add(ws0, v0, a)
	add(ws1, v1, s)
	ws0.advance(4)
	ws1.advance(4)
	ADDQ(m.stride, v0)
	ADDQ(m.stride, v1)
	DECQ(cnt)
	JMP(LabelRef(pair))
	Label(name + "_odd")
	Load(Param("w").Len(), m.n)
	divConst(m.n, R)
	TESTQ(U32(1), m.n)
	JZ(LabelRef(done))
	add(ws1, v1, s)
	Label(done)
	Load(Param("w").Base(), m.o)
	accs = rowsOf(R, m.in, accBytes(db, R))
	for r := range R {
		for c := range P {
			VADDPS(s[r*P+c], a[r*P+c], a[r*P+c])
			storeZ(a[r*P+c], accAt(r, c), mask)
		}
	}
}

// prefetchAhead asks for the line at m as the zmm multi-row scores ask for
// the rows ahead of them (K multiAhead rows on, and the eight-row score's
// also): into L2 (PREFETCHT1) over float32 rows (w nil), into L1 over
// 16-bit ones. Into L2 the float32 scores stream K from DRAM faster where
// PREFETCHT1 stops at L2 (a Zen 4; older Zen cores fill L1 at every
// level); over 16-bit rows the scores are bound by their arithmetic, and
// the level made no difference (measured:
// docs/performance/amd-epyc-zen4.md#the-scores-prefetches-into-l2-from-code-comments).
func prefetchAhead(w widen16, m Mem) {
	if w == nil {
		PREFETCHT1(m)
	} else {
		PREFETCHT0(m)
	}
}

// weightOperand: the wide blends (five to eight rows), the float32 one of
// three rows (see weightOperands), and the 16-bit ones of any row count,
// take each row's weight as the FMA's broadcast memory operand ({1to16})
// rather than through a VBROADCASTSS of its own, which on a Zen 4 takes a
// slot of the FMA pipes; the float32 four-row blend, three vectors a key
// and no widening, did not gain and keeps its broadcasts (measured:
// docs/performance/amd-epyc-zen4.md#weights-as-the-fmas-broadcast-operand-from-code-comments).
// Intel cores split an FMA whose memory operand has an index register into a
// load and the FMA, the two uops the separate broadcast and FMA were. The
// sums are the same products in the same order; only the operands' order
// changes, and with it which NaN's payload an FMA keeps where a weight and a
// value are both NaN (x86 keeps the first NaN operand's, and a broadcast
// operand comes last), so such sums may differ from the one-row kernels' in
// the payload.

// multiAhead is how many rows ahead scoreRowsMulti prefetches K. Its
// blocks read four or eight rows side by side, a chunk of each at a time,
// and R FMAs per chunk loaded; from memory the hardware prefetchers do not
// keep up with that order, and of the distances tried in address order 32
// rows streamed K the fastest (measured:
// docs/performance/amd-epyc-zen5.md#multi-row-scores-stream-k-from-code-comments).
const multiAhead = 32

// scoreNear is set while scoreRowsMultiNear is generated: its blocks ask
// for no row ahead. Where a step's K and V fit the L3 the prefetches only
// cost time: without them the four-row score took gqa-512 (4 MiB) 0.90
// of the time, and took steps from memory up to 1.7 times as long
// (measured:
// docs/performance/amd-epyc-zen5.md#the-decode-step-against-its-roofline-2026-12-07).
var scoreNear bool

// multiBlendBlocks lists, by row count, the blocks of column vectors the
// multi-row blend takes, widest first: as wide as the accumulators (two
// sets of R per vector) and R broadcast weights fit in 32 registers, as
// every block is one more pass over the value rows. Three rows took 4
// vectors and four rows 3 then 2 (at d = 128, two passes and three where
// both took four with blocks of 2), which paid with V in L2 (measured:
// docs/performance/amd-epyc-zen5.md#the-zmm-multi-row-blends-column-blocks-from-code-comments).
//
// From memory the first pass is what streams V, and the more of each row
// it reads the nearer its reads come to one stream. So two rows take 7
// vectors (28 accumulators, 2 weights and a value vector: 31 registers)
// and then 1, and three rows take their weights as the FMAs' broadcast
// operands (see weightOperand), which frees the registers for 5 vectors
// (30 accumulators) and then 3, which pays in decode steps from memory and
// costs nothing from L2 (measured:
// docs/performance/amd-epyc-zen4.md#wider-first-passes-for-two-and-three-rows-from-code-comments).
// At d = 64 and 128 two to four rows now take their first columns a key
// stream at a time (see blendSplitZ), and these blocks serve the rest: four
// rows' eighth vector, and other d.
//
// weightOperands reports whether the float32 multi-row blend of R rows
// takes its weights as the FMAs' broadcast operands: the wide ones, whose
// two sets of R accumulators leave no registers for R weights, and three
// rows, for the width of their first block (see multiBlendBlocks).
func weightOperands(R int) bool { return R == 3 || R > 4 }

var multiBlendBlocks = map[int][]int{1: {8, 1}, 2: {7, 1}, 3: {5, 3, 1}, 4: {3, 2, 1}, 5: {1}, 6: {1}, 7: {1}, 8: {1}}

// accBytes returns db, or where it is nil the bytes of a row of the R-row
// blend's accumulators, len(acc)/R·4.
func accBytes(db Register, R int) Register {
	if db != nil {
		return db
	}
	t := GP64()
	Load(Param("acc").Len(), t)
	divConst(t, R)
	SHLQ(U8(2), t)
	return t
}

// scoreRowMajorMultiZ emits, for d = 64 and 128, blocks that hold the
// query rows in registers and read each key row's chunks one after the
// other, so that K is read in address order, and prefetch nothing: the
// hardware prefetchers follow that order, where they do not follow the
// chunk-major blocks' (see multiAhead). Each accumulator takes its FMAs in
// the order the chunk-major blocks give them, so its bits are the same.
// Other d, and the keys left over, go on to the chunk-major blocks.
//
// Read so, K streams from memory faster than through the chunk-major
// blocks, with or without their prefetches, and so do decode steps from
// DRAM (measured:
// docs/performance/amd-epyc-zen4.md#scores-in-address-order-from-code-comments).
// Four rows of 128 do not fit: with two of them as the FMAs' memory
// operands their loads bound the block. The 16-bit kernels keep their
// blocks: two rows of f16 or bf16 keys this way did not speed a decode
// step.
func scoreRowMajorMultiZ(R int, m multiShape, db, nb Register, name string) {
	end := name + "_rm_end"
	for _, nc := range chunksOf("scoreRowsMulti") {
		P := rowMajorKeys(R, nc)
		if P == 0 {
			continue
		}
		next := fmt.Sprintf("%s_rm%d_next", name, nc)
		CMPQ(m.d, U8(16*nc))
		JNE(LabelRef(next))
		scoreRowMajorBlocksZ(R, nc, P, m, db, nb, fmt.Sprintf("%s_rm%d", name, nc))
		JMP(LabelRef(end))
		Label(next)
	}
	Label(end)
}

// rowMajorKeys is the keys of a row-major block of R rows of nc chunks,
// 0 for none: R·nc query chunks and R·P accumulators, with a register for
// a key's chunk, in 32.
func rowMajorKeys(R, nc int) int {
	if nc == 4 {
		return map[int]int{1: 8, 2: 8, 3: 4, 4: 2}[R]
	}
	return map[int]int{1: 8, 2: 4, 3: 2}[R]
}

// scoreRowMajorBlocksZ emits the loop of row-major blocks of P keys for d
// = 16·nc, which falls through once fewer than P keys are left.
func scoreRowMajorBlocksZ(R, nc, P int, m multiShape, db, nb Register, name string) {
	qs := make([]VecVirtual, R*nc)
	qp := GP64()
	MOVQ(m.in, qp)
	for r := range R {
		for c := range nc {
			qs[r*nc+c] = ZMM()
			VMOVUPS(Mem{Base: qp, Disp: 64 * c}, qs[r*nc+c])
		}
		if r+1 < R {
			ADDQ(db, qp)
		}
	}
	Label(name)
	CMPQ(m.n, U8(P))
	JL(LabelRef(name + "_done"))
	keys := newRows(m.kv, m.stride)
	if P > 4 {
		keys = newRows8(m.kv, m.stride)
	}
	acc := zerosZ(R * P)
	for j := range P {
		for c := range nc {
			kv := ZMM()
			at := keys.at(j)
			at.Disp += 64 * c
			VMOVUPS(at, kv)
			for r := range R {
				VFMADD231PS(kv, qs[r*nc+c], acc[r*P+j])
			}
		}
	}
	storeMultiZ(R, P, acc, newRows(m.o, nb))
	ADDQ(U8(4*P), m.o)
	for range P {
		ADDQ(m.stride, m.kv)
	}
	SUBQ(U8(P), m.n)
	JMP(LabelRef(name))
	Label(name + "_done")
}

// blendSplitZ emits, for d = 64 and 128, the multi-row blend's first
// columns a key stream at a time (blendStreamZ): four or eight vectors,
// as many as R·P accumulators allow in 28 registers (seven of eight for
// four rows, whose eighth goes on with both streams as before). Each pass
// then reads the rows of one stream in address order, most of each row,
// and the hardware prefetchers follow it, where they do not follow the
// passes of a few vectors of both streams at once: the blend streams V
// from memory without asking ahead faster than the blend of both streams
// did asking ahead, and about as fast from L2 (measured:
// docs/performance/amd-epyc-zen4.md#the-float32-blend-a-key-stream-at-a-time-from-code-comments).
// Other d keep the blocks of both streams.
func blendSplitZ(R int, m multiShape, db, nb, pf Register, nz VecVirtual, name string) {
	for _, nc := range chunksOf("blendRowsMulti") {
		P := min(nc, 28/R)
		skip := fmt.Sprintf("%s_split%d_skip", name, nc)
		CMPQ(m.d, U8(16*nc))
		JNE(LabelRef(skip))
		blendStreamZ(R, P, m, db, nb, pf, nz, fmt.Sprintf("%s_split%d_s0", name, nc), 0)
		blendStreamZ(R, P, m, db, nb, pf, nz, fmt.Sprintf("%s_split%d_s1", name, nc), 1)
		ADDQ(U32(64*P), m.in)
		ADDQ(U32(64*P), m.kv)
		SUBQ(U8(16*P), m.d)
		Label(skip)
	}
}

// blendStreamZ emits one of blendColumnsZ's two key streams alone over P
// vectors of columns: stream 0 (keys [0, h)) from the accumulators in acc
// back into acc; stream 1 (keys [h, 2h) and the odd last) from -0, added
// to acc as blendColumnsZ adds its two sets. Each accumulator takes the
// FMAs it takes there, in the same order, so the sums are the same bits.
func blendStreamZ(R, P int, m multiShape, db, nb, pf Register, nz VecVirtual, name string, stream int) {
	set := make([]VecVirtual, R*P)
	accs := rowsOf(R, m.in, accBytes(db, R))
	accAt := func(r, c int) Mem {
		at := accs.at(r)
		at.Disp += 64 * c
		return at
	}
	for r := range R {
		for c := range P {
			set[r*P+c] = ZMM()
			if stream == 0 {
				VMOVUPS(accAt(r, c), set[r*P+c])
			} else {
				VMOVAPS(nz, set[r*P+c])
			}
		}
	}
	wp, vp, cnt := GP64(), GP64(), GP64()
	MOVQ(m.n, cnt)
	SHRQ(U8(1), cnt)
	MOVQ(m.o, wp)
	MOVQ(m.kv, vp)
	if stream == 1 {
		LEAQ(Mem{Base: m.o, Index: cnt, Scale: 4}, wp)
		t := GP64()
		MOVQ(cnt, t)
		IMULQ(m.stride, t)
		ADDQ(t, vp)
	}
	s3 := GP64()
	LEAQ(Mem{Base: nb, Index: nb, Scale: 2}, s3)
	ws := rowRegs{p: wp, s: nb, s3: s3}
	add := func() {
		if pf != nil {
			for c := range P {
				PREFETCHT1(Mem{Base: pf, Disp: 64 * c})
			}
			ADDQ(U32(64*P), pf)
		}
		for c := range P {
			t := ZMM()
			VMOVUPS(Mem{Base: vp, Disp: 64 * c}, t)
			for r := range R {
				VFMADD231PS_BCST(ws.at(r), t, set[r*P+c])
			}
		}
	}
	loop, done := name+"_keys", name+"_keys_done"
	Label(loop)
	TESTQ(cnt, cnt)
	JZ(LabelRef(done))
	add()
	ws.advance(4)
	ADDQ(m.stride, vp)
	DECQ(cnt)
	JMP(LabelRef(loop))
	Label(done)
	if stream == 1 {
		// The odd last key (m.n, the keys, is still whole here).
		even := name + "_even"
		TESTQ(U32(1), m.n)
		JZ(LabelRef(even))
		add()
		Label(even)
	}
	accs = rowsOf(R, m.in, accBytes(db, R))
	for r := range R {
		for c := range P {
			if stream == 1 {
				t := ZMM()
				VMOVUPS(accAt(r, c), t)
				VADDPS(set[r*P+c], t, t)
				VMOVUPS(t, accAt(r, c))
			} else {
				VMOVUPS(set[r*P+c], accAt(r, c))
			}
		}
	}
}

// rowsI8 is set while the int8 multi-row kernels are generated: their key
// and value rows are a float32 scale and then int8 elements (see
// genScoreRowsI8), each chunk of which is widened by widenI8. i8Keys is
// set while such a block of keys' sums are stored: the rows it starts at,
// whose scales multiply their scores.
var (
	rowsI8 bool
	i8Keys *rowRegs
)

// mulKeyScales multiplies the sums s of a block of P keys (row r's key j
// in lane r·P+j) by the keys' scales, at the starts of the key rows.
func mulKeyScales(s VecVirtual, P int, keys rowRegs) {
	gather := func(base Register) VecVirtual {
		x := XMM()
		VMOVSS(rowAddr(base, nil, keys.s, keys.s3, 0), x)
		for j := 1; j < 4; j++ {
			VINSERTPS(U8(j<<4), rowAddr(base, nil, keys.s, keys.s3, j), x, x)
		}
		return x
	}
	z := ZMM()
	switch P {
	case 4:
		x := gather(keys.p).AsZ()
		VSHUFF32X4(U8(0), x, x, z)
	case 8:
		k4 := GP64()
		LEAQ(Mem{Base: keys.p, Index: keys.s, Scale: 4}, k4)
		lo, hi := gather(keys.p), gather(k4)
		y := lo.AsY().(VecVirtual)
		VINSERTF32X4(U8(1), hi, y, y)
		VSHUFF64X2(U8(0x44), y.AsZ(), y.AsZ(), z)
	default:
		panic("mulKeyScales: unsupported block")
	}
	VMULPS(z, s, s)
}
