package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The multi-row kernels over 16-bit K/V rows on sixteen lanes: the
// float32 multi-row kernels' blocks, with each chunk of sixteen elements
// widened as it is loaded, once for every row. Each row's results are the
// bits the avx512 16-bit one-row kernels give it, for any number of keys:
// a row's score gathers its products in the same lanes, chunk after chunk,
// and goes through the same sum tree (rowsSums) whatever the block; a
// blended column adds its keys' products in key order, as genBlendRows16
// does (one stream, where the float32 blend has two).

func init() {
	// The int8 kernels of one to four rows: the 16-bit ones' blocks over
	// rows that start with their scale (see rowsI8).
	rowFuncs(avx512, "scoreRowsMultiI8", 1, 4, false, func(R int, ask bool) {
		rowsI8 = true
		defer func() { rowsI8 = false }()
		scoreMultiZ(R, "smultib", widenI8, false)
		epilogue("smultib")
	})
	rowFuncs(avx512, "blendRowsMultiI8", 1, 4, false, func(R int, ask bool) {
		rowsI8 = true
		defer func() { rowsI8 = false }()
		blendMulti16Z(R, widenI8, "bmultib", false)
		epilogue("bmultib")
	})
	for _, f := range []struct {
		name  string
		score func() widen16 // the widening of the scores, made at their entry
		blend widen16
	}{
		{"F16", func() widen16 { return widenF16 }, widenF16},
		{"BF16", widenBF16Perm, widenBF16},
	} {
		// The scores in scoreMultiZ's blocks of keys (8 for one or two
		// rows, 4 for three or four, then single keys; two for five to
		// eight), prefetching multiAhead rows on in address order.
		rowFuncs(avx512, "scoreRowsMulti"+f.name, 1, 4, false, func(R int, ask bool) {
			scoreMultiZ(R, "smulti16z", f.score(), false)
			epilogue("smulti16z")
		})
		rowFuncs(avx512, "scoreRowsMulti8"+f.name, 5, 8, true, func(R int, ask bool) {
			scoreMultiZ(R, askPrefix("smulti8h", ask), f.score(), ask)
			epilogue(askPrefix("smulti8h", ask))
		})
		// The blends of one to four rows ask for nothing (they stream V
		// themselves); those of five to eight rows, in blocks of two
		// vectors of columns, then one, then a masked tail, have a copy
		// that asks for next's lines into L2 as it goes, as blendMultiZ's
		// does.
		rowFuncs(avx512, "blendRowsMulti"+f.name, 1, 4, false, func(R int, ask bool) {
			blendMulti16Z(R, f.blend, "bmulti16z", false)
			epilogue("bmulti16z")
		})
		rowFuncs(avx512, "blendRowsMulti8"+f.name, 5, 8, true, func(R int, ask bool) {
			blendMulti16Z(R, f.blend, askPrefix("bmulti8h", ask), ask)
			epilogue(askPrefix("bmulti8h", ask))
		})
	}
}

// scoreChunk16Z multiplies one chunk of 16 columns (under mask, if not
// nil) of P keys, each widened once, with the same chunk of R query rows
// into acc, row r's key j in acc[r*P+j]. Masked, both factors are zero
// past d, as in genScoreRows16's tail, so those lanes add +0 (and an
// accumulator that starts at +0 never holds -0, so they keep their bits).
// The FMAs take their operands in genScoreRows16's order, which decides
// the NaN a lane with two of them keeps. If next is not nil, P/2 lines
// from next are prefetched, one after every other key's chunk.
func scoreChunk16Z(R, P int, keys rowRegs, k4 Register, q rowRegs, acc []VecVirtual, mask Op, next Register, w widen16) {
	qv := make([]VecVirtual, R)
	for r := range R {
		qv[r] = loadZ(q.at(r), mask)
	}
	// A line holds the chunks of two keys' 16-bit rows, of four int8 ones.
	perLine := 2
	if rowsI8 {
		perLine = 4
	}
	for j := range P {
		key := rowAddr(keys.p, k4, keys.s, keys.s3, j)
		t := ZMM()
		switch {
		case rowsI8:
			key.Disp += 4 // the row's scale
			if mask == nil {
				w(key, t)
			} else {
				x := XMM()
				VMOVDQU8_Z(key, mask, x)
				w(x, t)
			}
		case mask == nil:
			w(key, t)
		default:
			y := YMM()
			VMOVDQU16_Z(key, mask, y)
			w(y, t)
		}
		for r := range R {
			VFMADD231PS(t, qv[r], acc[r*P+j])
		}
		if next != nil && j%perLine == perLine-1 {
			PREFETCHT0(Mem{Base: next, Disp: 64 * (j / perLine)})
		}
	}
}

// blendMulti16Z: acc[r*d+c] += Σ_j w[r*n+j]*widen(v[j*stride+c]) for R
// rows. The columns go in blocks of P vectors (multi16BlendBlocks) whose
// R·P accumulators stay in registers while the keys stream past in order:
// per key, R broadcast weights and P widened chunks of the value row feed
// R·P FMAs. Then narrower blocks, then a masked tail. Its labels are
// named from prefix; it asks for the lines of next as it goes if ask is
// set, and ends at prefix+"_done".
func blendMulti16Z(R int, wd widen16, prefix string, ask bool) {
	shift, elems := uint8(1), 32 // an element's shift, a vector's bytes
	if rowsI8 {
		shift, elems = 0, 16
		// Minus the bytes v has moved past the rows' starts, where their
		// scales are.
		i8Back = GP64()
		XORQ(i8Back, i8Back)
		defer func() { i8Back = nil }()
	}
	m := loadMultiOf(R, "w", "acc", "v", shift)
	// Here m.n is the keys, m.d the columns, m.in the accumulators and m.o
	// the weights.
	name, done := fmt.Sprintf("%s%d", prefix, R), prefix+"_done"
	db, nb := GP64(), GP64()
	MOVQ(m.d, db)
	SHLQ(U8(2), db)
	MOVQ(m.n, nb)
	SHLQ(U8(2), nb)
	var pf Register
	if ask {
		pf = Load(Param("next").Base(), GP64())
	}
	for _, P := range multi16BlendBlocks[R] {
		loop, next := fmt.Sprintf("%s_c%d", name, P), fmt.Sprintf("%s_c%d_next", name, P)
		Label(loop)
		CMPQ(m.d, U8(16*P))
		JL(LabelRef(next))
		blendColumns16Z(R, P, m, db, nb, pf, loop, nil, wd)
		ADDQ(U32(64*P), m.in)
		ADDQ(U32(elems*P), m.kv)
		if i8Back != nil {
			SUBQ(U32(elems*P), i8Back)
		}
		SUBQ(U8(16*P), m.d)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(m.d, m.d)
	JZ(LabelRef(done))
	blendColumns16Z(R, 1, m, db, nb, pf, name+"_tail", tailK(m.d), wd)
}

// blendColumns16Z emits the blend of P vectors of columns (one vector
// under mask if mask is not nil) for R rows over every key, in key order.
// The FMAs take the weights as their broadcast operands (weightOperand),
// so their operands come in the other order than genBlendRows16's.
func blendColumns16Z(R, P int, m multiShape, db, nb, pf Register, name string, mask Op, wd widen16) {
	a := make([]VecVirtual, R*P)
	accAt := func(accs rowRegs, r, c int) Mem {
		at := accs.at(r)
		at.Disp += 64 * c
		return at
	}
	accs := rowsOf(R, m.in, db)
	for r := range R {
		for c := range P {
			a[r*P+c] = loadZ(accAt(accs, r, c), mask)
		}
	}
	wp, vp, cnt := GP64(), GP64(), GP64()
	MOVQ(m.o, wp)
	MOVQ(m.kv, vp)
	MOVQ(m.n, cnt)
	ws := rowsOf(R, wp, nb)
	Label(name + "_key")
	TESTQ(cnt, cnt)
	JZ(LabelRef(name + "_keys_done"))
	// Every row takes its weight as the FMAs' broadcast operand (see
	// weightOperand), which costs a load of each weight per vector of
	// columns. An int8 row's weights are multiplied by its scale first,
	// once a key, as genBlendRowsI8's are.
	var wb []VecVirtual
	if i8Back != nil {
		for r := range R {
			x, b := XMM(), ZMM()
			VMOVSS(ws.at(r), x)
			VMULSS(Mem{Base: vp, Index: i8Back, Scale: 1}, x, x)
			VBROADCASTSS(x, b)
			wb = append(wb, b)
		}
	}
	for c := range P {
		at := Mem{Base: vp, Disp: 32 * c}
		if wb != nil {
			at.Disp = 4 + 16*c
		}
		t := ZMM()
		switch {
		case wb != nil:
			if mask == nil {
				wd(at, t)
			} else {
				x := XMM()
				VMOVDQU8_Z(at, mask, x)
				wd(x, t)
			}
		case mask == nil:
			wd(at, t)
		default:
			y := YMM()
			VMOVDQU16_Z(at, mask, y)
			wd(y, t)
		}
		for r := range R {
			if wb != nil {
				VFMADD231PS(t, wb[r], a[r*P+c])
			} else {
				VFMADD231PS_BCST(ws.at(r), t, a[r*P+c])
			}
		}
	}
	if pf != nil {
		// As many lines as the step reads (into L2, as blendColumnsZ's).
		for i := range max(1, P/2) {
			PREFETCHT1(Mem{Base: pf, Disp: 64 * i})
		}
		ADDQ(U32(32*P), pf)
	}
	ws.advance(4)
	ADDQ(m.stride, vp)
	DECQ(cnt)
	JMP(LabelRef(name + "_key"))
	Label(name + "_keys_done")
	accs = rowsOf(R, m.in, db)
	for r := range R {
		for c := range P {
			storeZ(a[r*P+c], accAt(accs, r, c), mask)
		}
	}
}

// i8Back is set while an int8 multi-row blend is generated: the register
// holding minus the bytes its passes have moved v past the rows' starts.
var i8Back Register

// multi16BlendBlocks lists, by row count, the blocks of column vectors
// the 16-bit multi-row blend takes, widest first: R·P accumulators and a
// widened chunk within 32 registers (one stream of keys needs no second
// set of accumulators, as the float32 blend's two do), then halving, so
// that a few columns still keep several FMAs in flight. Four rows keep six
// vectors, chosen when R broadcast weights needed registers too; seven
// would fit now, but d = 128 takes two blocks either way.
var multi16BlendBlocks = map[int][]int{1: {8, 4, 2, 1}, 2: {8, 4, 2, 1}, 3: {8, 4, 2, 1}, 4: {6, 4, 2, 1}, 5: {2, 1}, 6: {2, 1}, 7: {2, 1}, 8: {2, 1}}

// widenBF16Perm returns a widen16 that puts sixteen bfloat16 values into
// the top halves of float32 lanes with one word permutation (VPERMW, the
// even words zero-masked) of a 32-byte load, against widenBF16's
// zero-extension and shift: one operation on the vector pipes where there
// were two, and the same bits. Its index and mask are loaded where it is
// made, at the kernel's entry, and held through it. The multi-row
// bfloat16 scores gained from it (measured:
// docs/performance/amd-epyc-zen4.md#bfloat16-widening-by-one-permutation-from-code-comments).
func widenBF16Perm() widen16 {
	name := "bf16perm"
	if _, ok := consts[name]; !ok {
		m := GLOBL(name, RODATA|NOPTR)
		for j := range 32 {
			DATA(2*j, U16(uint16(j/2)))
		}
		consts[name] = m
	}
	idx := ZMM()
	VMOVDQU64(consts[name], idx)
	g := GP32()
	MOVL(U32(0xaaaaaaaa), g)
	k := K()
	KMOVD(g, k)
	return func(src Op, dst VecVirtual) {
		var z VecVirtual
		if m, ok := src.(Mem); ok {
			y := YMM()
			VMOVDQU32(m, y)
			z = y.AsZ().(VecVirtual)
		} else {
			z = src.(VecVirtual).AsZ().(VecVirtual)
		}
		VPERMW_Z(z, idx, k, dst)
	}
}
