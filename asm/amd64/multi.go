package main

import (
	"fmt"

	"github.com/glancelab/attention/internal/kernels"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The multi-row kernels serve the row path when a few query rows (the
// query heads of a grouped decode step) walk the same keys: each key's
// row of K or V is loaded once for all of them, where the one-row kernels
// would read it once per query row. Each takes 1 to 4 rows, with a
// function per row count (the kernel table's variants, which the front
// chooses from); the row count divides the slices' lengths, done by
// multiplying with its reciprocal (the lengths are below 2³²).

func init() {
	rowFuncs(avx2, "scoreRowsMulti", 1, 4, false, func(R int, ask bool) {
		scoreMulti(R)
		epilogue("smulti")
	})
	rowFuncs(avx2, "blendRowsMulti", 1, 4, true, func(R int, ask bool) {
		blendMulti(R, askPrefix("bmulti", ask), ask)
		epilogue(askPrefix("bmulti", ask))
	})
}

// rowFuncs registers gen, for each row count R in lo..hi, as the generator
// of kernel stem's function of R rows, and with asks of its asking copy
// too (gen's ask set), each a variant of the kernel table
// (kernels.Variant).
func rowFuncs(gens map[string]func(), stem string, lo, hi int, asks bool, gen func(R int, ask bool)) {
	for R := lo; R <= hi; R++ {
		for _, ask := range []bool{false, true} {
			if ask && !asks {
				continue
			}
			gens[stem+kernels.Variant{Rows: R, Asks: ask}.Suffix()] = func() { gen(R, ask) }
		}
	}
}

// askPrefix is the prefix of an asking copy's labels: base+"a".
func askPrefix(base string, ask bool) string {
	if ask {
		return base + "a"
	}
	return base
}

// epilogue ends a multi-row function at prefix+"_done", where every path
// of its body ends.
func epilogue(prefix string) {
	Label(prefix + "_done")
	VZEROUPPER()
	RET()
}

// divConst sets x = x/R for R in 1..8 and x < 2³¹ (2³² but for 7): a
// shift, or a product with the reciprocal rounded up and a shift, exact
// for every such x.
func divConst(x Register, R int) {
	mul := func(m uint64, shift uint8) {
		r := GP64()
		if m>>32 == 0 {
			MOVQ(U32(m), r)
		} else {
			MOVQ(U64(m), r)
		}
		IMULQ(r, x)
		SHRQ(U8(shift), x)
	}
	switch R {
	case 2:
		SHRQ(U8(1), x)
	case 3:
		mul(0xAAAAAAAB, 33)
	case 4:
		SHRQ(U8(2), x)
	case 5:
		mul(0xCCCCCCCD, 34)
	case 6:
		mul(0xAAAAAAAB, 34)
	case 7:
		mul(0x124924925, 35) // a 33-bit factor: x·m stays below 2⁶⁴ for x < 2³¹
	case 8:
		SHRQ(U8(3), x)
	}
}

// rowRegs holds a base pointer and the byte distance between its rows, with
// three times that, for rowAddr; p4, if not nil, points four rows on, for
// rows 4 to 7.
type rowRegs struct{ p, s, s3, p4 Register }

func newRows(p, s Register) rowRegs {
	s3 := GP64()
	LEAQ(Mem{Base: s, Index: s, Scale: 2}, s3)
	return rowRegs{p: p, s: s, s3: s3}
}

// newRows8 is newRows for eight rows: p4 is set to p + 4·s.
func newRows8(p, s Register) rowRegs {
	r := newRows(p, s)
	r.p4 = GP64()
	LEAQ(Mem{Base: p, Index: s, Scale: 4}, r.p4)
	return r
}

// advance moves the rows' pointers by n bytes (below 128).
func (r rowRegs) advance(n uint8) {
	ADDQ(U8(n), r.p)
	if r.p4 != nil {
		ADDQ(U8(n), r.p4)
	}
}

func (r rowRegs) at(i int) Mem { return rowAddr(r.p, r.p4, r.s, r.s3, i) }

// multiShape loads the pointers and sizes both multi-row kernels share: the
// output rows (o, n elements a row), the per-row inputs (w, d elements a
// row) and the key rows (kv, stride bytes apart).
type multiShape struct {
	o, n, in, d, kv, stride Register
}

func loadMulti(R int, out, in, keys string) multiShape { return loadMultiOf(R, out, in, keys, 2) }

// loadMultiOf is loadMulti for key rows of 1<<shift bytes an element.
func loadMultiOf(R int, out, in, keys string, shift uint8) multiShape {
	var m multiShape
	m.o = Load(Param(out).Base(), GP64())
	m.n = Load(Param(out).Len(), GP64())
	m.in = Load(Param(in).Base(), GP64())
	m.d = Load(Param(in).Len(), GP64())
	m.kv = Load(Param(keys).Base(), GP64())
	m.stride = Load(Param("stride"), GP64())
	if shift > 0 {
		SHLQ(U8(shift), m.stride)
	}
	divConst(m.n, R)
	divConst(m.d, R)
	return m
}

// scoreMulti: dst[r*n+j] = Σ_c k[j*stride+c]*q[r*d+c] for R rows. Keys go
// in blocks of KP (8/R, 2 for three rows), their chunks of eight columns
// loaded once and multiplied with the same chunk of every query row: R·KP
// independent accumulators, whose sums come out of one horizontal-add
// tree. The last keys go one at a time. It ends at smulti_done.
func scoreMulti(R int) {
	m := loadMulti(R, "dst", "q", "k")
	name := fmt.Sprintf("smulti%d", R)
	db, nb := GP64(), GP64() // bytes of a query row and of an output row
	MOVQ(m.d, db)
	SHLQ(U8(2), db)
	MOVQ(m.n, nb)
	SHLQ(U8(2), nb)
	keyBlocks(name, multiScoreKeys[R], m, func(P int, loop string) { scoreKeys(R, P, m, db, nb, loop) })
}

// keyBlocks emits a multi-row score's loops over its keys, blocks of P
// keys for each P of blocks in turn: body(P, loop) scores the block at the
// current pointers (loop is the loop's label, a prefix for the body's),
// then the output and the key rows move on by P.
func keyBlocks(name string, blocks []int, m multiShape, body func(P int, loop string)) {
	for _, P := range blocks {
		loop, next := fmt.Sprintf("%s_k%d", name, P), fmt.Sprintf("%s_k%d_next", name, P)
		Label(loop)
		CMPQ(m.n, U8(P))
		JL(LabelRef(next))
		body(P, loop)
		ADDQ(U8(4*P), m.o)
		for range P {
			ADDQ(m.stride, m.kv)
		}
		SUBQ(U8(P), m.n)
		JMP(LabelRef(loop))
		Label(next)
	}
}

// multiScoreKeys lists, by row count, the blocks of keys the multi-row
// score takes, widest first: R·P accumulators, P key chunks and a query
// chunk in the sixteen registers, and each block's chunk step loads P + R
// vectors for R·P FMAs. Four rows take three keys (7 loads for 12 FMAs,
// against 6 for 8 with two), then two and one, which pays from cache
// (measured:
// docs/performance/amd-epyc-zen3.md#the-avx2-multi-row-kernels-wider-blocks-from-code-comments).
// Every block sums its accumulators through the tree of scoreRows's blocks
// of eight rows (see storeMulti), so a row's scores keep scoreRows's bits
// while n is a multiple of 8, whichever blocks its keys fall in.
var multiScoreKeys = map[int][]int{1: {8, 1}, 2: {4, 1}, 3: {2, 1}, 4: {3, 2, 1}}

// scoreKeys emits the scores of P keys from m.kv against the R query rows
// at m.in, stored at m.o (row r at m.o + r·nb).
func scoreKeys(R, P int, m multiShape, db, nb Register, name string) {
	keys := newRows(m.kv, m.stride)
	var k4 Register
	if P > 4 {
		k4 = GP64()
		LEAQ(Mem{Base: m.kv, Index: m.stride, Scale: 4}, k4)
	}
	// The rows multiAhead on, in address order, as in scoreKeysZ: each
	// chunk step of P keys' 32 bytes asks for P/2 lines (the blocks of
	// single keys prefetch nothing).
	var next Register
	if P > 1 {
		next = GP64()
		IMUL3Q(U32(multiAhead), m.stride, next)
		ADDQ(m.kv, next)
		reachRows("k", 2, P, m.d, next, m.kv)
	}
	qp := GP64()
	MOVQ(m.in, qp)
	q := newRows(qp, db)
	acc := zeros(R * P)
	cnt := GP64()
	MOVQ(m.d, cnt)
	chunk, tail, done := name+"_chunk", name+"_tail", name+"_sum"
	Label(chunk)
	CMPQ(cnt, U8(8))
	JL(LabelRef(tail))
	scoreChunk(R, P, keys, k4, q, acc, nil)
	if next != nil {
		for i := range P / 2 {
			PREFETCHT0(Mem{Base: next, Disp: 64 * i})
		}
		if P%2 == 1 {
			// An odd block's step straddles a line every other time.
			PREFETCHT0(Mem{Base: next, Disp: 32*P - 1})
		}
		ADDQ(U32(32*P), next)
	}
	ADDQ(U8(32), m.kv)
	ADDQ(U8(32), qp)
	if k4 != nil {
		ADDQ(U8(32), k4)
	}
	SUBQ(U8(8), cnt)
	JMP(LabelRef(chunk))
	Label(tail)
	TESTQ(cnt, cnt)
	JZ(LabelRef(done))
	scoreChunk(R, P, keys, k4, q, acc, tailMask(cnt))
	Label(done)
	// Rewind the column walk: d%8 columns were not stepped over.
	back := GP64()
	MOVQ(m.d, back)
	ANDQ(I32(-8), back)
	SHLQ(U8(2), back)
	SUBQ(back, m.kv)
	storeMulti(R, P, acc, newRows(m.o, nb))
}

// scoreChunk multiplies one chunk of eight columns (masked, if mask is not
// nil) of P keys with the same chunk of R query rows into acc.
func scoreChunk(R, P int, keys rowRegs, k4 Register, q rowRegs, acc []VecVirtual, mask VecVirtual) {
	load := func(m Mem) VecVirtual {
		x := YMM()
		if mask == nil {
			VMOVUPS(m, x)
		} else {
			VMASKMOVPS(m, mask, x)
		}
		return x
	}
	key := func(j int) Mem { return rowAddr(keys.p, k4, keys.s, keys.s3, j) }
	if R == 1 {
		// One query row: each key chunk is used once, straight from
		// memory, or through one register when masked.
		qv := load(q.at(0))
		for j := range P {
			if mask == nil {
				VFMADD231PS(key(j), qv, acc[j])
			} else {
				VFMADD231PS(load(key(j)), qv, acc[j])
			}
		}
		return
	}
	if mask != nil && R*P+P+2 > 16 {
		// No registers for every key's masked chunk and the mask: a key
		// at a time, the query chunks loaded again for each.
		for j := range P {
			kj := load(key(j))
			for r := range R {
				VFMADD231PS(kj, load(q.at(r)), acc[r*P+j])
			}
		}
		return
	}
	kv := make([]VecVirtual, P)
	for j := range P {
		kv[j] = load(key(j))
	}
	for r := range R {
		qv := load(q.at(r))
		for j := range P {
			VFMADD231PS(kv[j], qv, acc[r*P+j])
		}
	}
}

// storeMulti stores the sums of the R·P accumulators (row r's P keys
// consecutive) at row r of out.
func storeMulti(R, P int, acc []VecVirtual, out rowRegs) {
	if P == 1 && R == 4 {
		// The lone keys of four rows: the tree of the blocks, so that
		// their bits do not depend on where the blocks end.
		z := zeros(1)[0]
		y := sums8(append(acc[:4:4], z, z, z, z))
		if i8Keys != nil {
			t := YMM()
			VBROADCASTSS(i8Keys.at(0), t)
			VMULPS(t, y, y)
		}
		s := y.AsX()
		VMOVSS(s, out.at(0))
		for r := 1; r < 4; r++ {
			VEXTRACTPS(U8(r), s, out.at(r))
		}
		return
	}
	if P == 1 {
		for r := range R {
			x := hsum(acc[r])
			if i8Keys != nil {
				VMULSS(i8Keys.at(0), x, x)
			}
			VMOVSS(x, out.at(r))
		}
		return
	}
	for len(acc) < 8 {
		acc = append(acc, zeros(1)...)
	}
	if P == 3 {
		// Four rows of three keys: lanes 0-7 of the first sums and 0-3 of
		// the second, row r's keys at lanes 3r to 3r+2.
		s1 := sums8(acc[:8])
		z := zeros(1)[0] // sums8 only reads its accumulators
		s2 := sums8(append(acc[8:12:12], z, z, z, z))
		if i8Keys != nil {
			VMULPS(keyScalesY([8]int{0, 1, 2, 0, 1, 2, 0, 1}), s1, s1)
			VMULPS(keyScalesY([8]int{2, 0, 1, 2, 0, 0, 0, 0}), s2, s2)
		}
		lo1, hi1, lo2 := s1.AsX(), XMM(), s2.AsX()
		VEXTRACTF128(U8(1), s1, hi1)
		at := func(r, j int) Mem {
			m := out.at(r)
			m.Disp += 4 * j
			return m
		}
		VMOVLPS(lo1, at(0, 0))
		VEXTRACTPS(U8(2), lo1, at(0, 2))
		VEXTRACTPS(U8(3), lo1, at(1, 0))
		VMOVLPS(hi1, at(1, 1))
		VMOVHPS(hi1, at(2, 0))
		VMOVSS(lo2, at(2, 2))
		VEXTRACTPS(U8(1), lo2, at(3, 0))
		VMOVHPS(lo2, at(3, 1))
		return
	}
	s := sums8(acc)
	if i8Keys != nil {
		VMULPS(keyScalesY(map[int][8]int{8: {0, 1, 2, 3, 4, 5, 6, 7}, 4: {0, 1, 2, 3, 0, 1, 2, 3}, 2: {0, 1, 0, 1, 0, 1, 0, 1}}[P]), s, s)
	}
	lo, hi := s.AsX(), XMM()
	VEXTRACTF128(U8(1), s, hi)
	switch P {
	case 8:
		VMOVUPS(s, out.at(0))
	case 4:
		VMOVUPS(lo, out.at(0))
		VMOVUPS(hi, out.at(1))
	case 2:
		VMOVLPS(lo, out.at(0))
		VMOVHPS(lo, out.at(1))
		VMOVLPS(hi, out.at(2))
		if R == 4 {
			VMOVHPS(hi, out.at(3))
		}
	}
}

// multiBlendCols gives the widest block of columns by row count: as many
// vectors as the R·C accumulators leave registers for, beside R broadcast
// weights and a vector of V (C·R + R + 1 ≤ 16), or, for four rows, beside
// C vectors of V and one weight at a time (C·R + C + 1 ≤ 16). Three rows
// take four vectors (three before) and four rows three (two before): 7
// loads for 12 FMAs against 6 for 9 or 8, and fewer passes over the value
// rows (measured:
// docs/performance/amd-epyc-zen3.md#the-avx2-multi-row-kernels-wider-blocks-from-code-comments).
var multiBlendCols = map[int]int{1: 8, 2: 4, 3: 4, 4: 3}

// blendMulti: acc[r*d+c] += Σ_j w[r*n+j]*v[j*stride+c]. The columns
// go in blocks of C vectors (multiBlendCols) whose R·C accumulators stay
// in registers while the keys stream past: per key, R broadcast weights
// and C loads of the value row feed R·C FMAs. Then single vectors, then a
// masked tail.
//
// The keys go in blendRowsAVX2's order, as two streams (key i beside key
// h+i, h = n/2, then the odd last key), so that each row's sums are the
// bits blendRows gives it: the multi-row and one-row kernels may share the
// rows of one computation. Two streams also keep more cache misses in
// flight than one when V comes from memory.
//
// With next not empty the front calls a copy of it that asks for the
// lines of next as it goes (see blendColumns); the copy without asks for
// nothing, which a call whose V is in cache would pay for in load slots.
//
// blendMulti emits the blend of R rows, its labels named from prefix,
// asking for the lines of next if ask is set; it ends at prefix+"_done".
func blendMulti(R int, prefix string, ask bool) {
	m := loadMulti(R, "w", "acc", "v")
	// Here m.n is the keys, m.d the columns, m.in the accumulators and m.o
	// the weights.
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
	for _, P := range []int{multiBlendCols[R], 1} {
		loop, next := fmt.Sprintf("%s_c%d", name, P), fmt.Sprintf("%s_c%d_next", name, P)
		Label(loop)
		CMPQ(m.d, U8(8*P))
		JL(LabelRef(next))
		blendColumns(R, P, m, db, nb, pf, loop, nil)
		ADDQ(U32(32*P), m.in)
		ADDQ(U32(32*P), m.kv)
		SUBQ(U8(8*P), m.d)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(m.d, m.d)
	JZ(LabelRef(done))
	blendColumns(R, 1, m, db, nb, pf, name+"_tail", tailMask(m.d))
}

// blendColumns emits the blend of P vectors of columns (one masked vector
// if mask is not nil) for R rows over every key. The weights' base and
// count (m.o, m.n) are reloaded from the arguments after the key loop,
// which frees their registers for the second stream's pointers.
//
// If pf is not nil, each key's step of each stream asks for the lines of
// the 32·P bytes at pf, in address order from the start of the caller's
// next call's value rows (see blendRowsMulti), as blendColumnsZ does: as
// many bytes as the step reads, so that over the passes the next call's
// rows arrive while this one computes.
func blendColumns(R, P int, m multiShape, db, nb, pf Register, name string, mask VecVirtual) {
	a := make([]VecVirtual, R*P)
	for i := range a {
		a[i] = YMM()
	}
	// The accumulators' row addresses are formed where they move in and
	// out, and hold no register during the key loop.
	move := func(load bool) {
		accs := newRows(m.in, db)
		for r := range R {
			for c := range P {
				at := accs.at(r)
				at.Disp += 32 * c
				switch {
				case load && mask == nil:
					VMOVUPS(at, a[r*P+c])
				case load:
					VMASKMOVPS(at, mask, a[r*P+c])
				case mask == nil:
					VMOVUPS(a[r*P+c], at)
				default:
					VMASKMOVPS(a[r*P+c], mask, at)
				}
			}
		}
	}
	move(true)
	// Stream 0 walks keys [0, h), stream 1 keys [h, 2h) and then the odd
	// last key 2h.
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
	add := func(w rowRegs, vp Register) {
		if pf != nil {
			// A line at each 64 bytes of the step; a step of 96 bytes
			// touches at most the lines of its first and last bytes, and
			// one of 32 at most a line its next step starts in.
			switch {
			case P%2 == 0:
				for i := range P / 2 {
					PREFETCHT1(Mem{Base: pf, Disp: 64 * i})
				}
			case P == 1:
				PREFETCHT1(Mem{Base: pf})
			case P == 3:
				PREFETCHT1(Mem{Base: pf})
				PREFETCHT1(Mem{Base: pf, Disp: 32*P - 1})
			default:
				panic("blendColumns: no prefetch pattern for P")
			}
			ADDQ(U32(32*P), pf)
		}
		if R*P+R+1 > 16 {
			// No registers for every weight: the block's vectors of V
			// first, then a weight at a time.
			t := make([]VecVirtual, P)
			for c := range P {
				t[c] = YMM()
				at := Mem{Base: vp, Disp: 32 * c}
				if mask == nil {
					VMOVUPS(at, t[c])
				} else {
					VMASKMOVPS(at, mask, t[c])
				}
			}
			for r := range R {
				b := YMM()
				VBROADCASTSS(w.at(r), b)
				for c := range P {
					VFMADD231PS(t[c], b, a[r*P+c])
				}
			}
			return
		}
		b := make([]VecVirtual, R)
		for r := range R {
			b[r] = YMM()
			VBROADCASTSS(w.at(r), b[r])
		}
		for c := range P {
			at := Mem{Base: vp, Disp: 32 * c}
			if R == 1 && mask == nil {
				VFMADD231PS(at, b[0], a[c])
				continue
			}
			t := YMM()
			if mask == nil {
				VMOVUPS(at, t)
			} else {
				VMASKMOVPS(at, mask, t)
			}
			for r := range R {
				VFMADD231PS(t, b[r], a[r*P+c])
			}
		}
	}
	pair, done := name+"_pair", name+"_keys_done"
	Label(pair)
	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_odd"))
	add(rowRegs{p: w0, s: nb, s3: s3}, v0)
	add(rowRegs{p: w1, s: nb, s3: s3}, v1)
	ADDQ(U8(4), w0)
	ADDQ(U8(4), w1)
	ADDQ(m.stride, v0)
	ADDQ(m.stride, v1)
	DECQ(cnt)
	JMP(LabelRef(pair))
	Label(name + "_odd")
	Load(Param("w").Len(), m.n)
	divConst(m.n, R)
	TESTQ(U32(1), m.n)
	JZ(LabelRef(done))
	add(rowRegs{p: w1, s: nb, s3: s3}, v1)
	Label(done)
	Load(Param("w").Base(), m.o)
	move(false)
}

// keyScalesY returns a ymm whose lane i holds the scale of key keys[i] of
// the int8 block whose rows i8Keys starts at.
func keyScalesY(keys [8]int) VecVirtual {
	k := *i8Keys
	var k4 Register
	for _, j := range keys {
		if j >= 4 && k4 == nil {
			k4 = GP64()
			LEAQ(Mem{Base: k.p, Index: k.s, Scale: 4}, k4)
		}
	}
	// Each distinct key's scale broadcast and blended into its lanes: two
	// registers, where four lanes inserted at a time into two halves took
	// more than the sixteen beside four rows' sums of three keys.
	y := YMM()
	for i, j := range keys {
		var mask uint8
		for l, jj := range keys {
			if jj == j {
				mask |= 1 << l
			}
		}
		if mask&(1<<i-1) != 0 {
			continue // its lanes are set
		}
		at := rowAddr(k.p, k4, k.s, k.s3, j)
		if i == 0 {
			VBROADCASTSS(at, y)
			continue
		}
		t := YMM()
		VBROADCASTSS(at, t)
		VBLENDPS(U8(mask), t, y, y)
	}
	return y
}
