package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx512["blockScores"] = func() { genBlockScoresZ(false) }
	avx512["blockBlend"] = func() { genBlockBlendZ(false) }
	avx512["blockScoresAsk"] = func() { genBlockScoresZ(true) }
	avx512["blockBlendAsk"] = func() { genBlockBlendZ(true) }
}

// askStep is how many bytes of the argument ask the Ask kernels ask for
// per prefetch slot of the kernels without (per line of a full group's key
// rows in the scores, per key and full group of columns in the blend):
// both make d/16 slots a key, so 32 bytes a slot asks for the 2·d bytes
// of a 16-bit row a key, spread evenly over the kernel's FMAs. The engine
// widens the rows it asks for next (see blockKeys): in one burst from
// memory, with the FMA pipes idle, the widening took several times as long
// as from cache, a good part of a 4-row verify over an f16 cache (measured:
// docs/performance/amd-epyc-zen4.md#the-block-kernels-ask-for-the-rows-widened-next-from-code-comments).
// A prefetch burst before the kernels cost as much: at most a few dozen
// lines are in flight at once, and the kernels' steady pace keeps that
// many going.
const askStep = 32

// askAt returns a register at the argument ask's first element, whose
// lines the Ask kernels ask for, askStep bytes a slot, in address order
// (into L2: the widening reads them once, soon after); nil without ask.
func askAt(ask bool) Register {
	if !ask {
		return nil
	}
	return Load(Param("ask").Base(), GP64())
}

// The block score and blend kernels on sixteen lanes: the block's sixteen
// query rows are one ZMM register, so a key (scores) or a value column
// (blend) costs one accumulator, and the K or V element meets it through
// an embedded broadcast, one load per FMA. That load is what bounds them:
// from L1 both kernels come about as near the FMA peak as a bare loop of
// such FMAs, and only a second row vector per broadcast (32 query rows a
// block) would lift it (measured:
// docs/performance/amd-epyc-zen5.md#two-blocks-per-broadcast-from-code-comments).

// blockGroupZ is how many keys (scores) or value columns (blend) share one
// pass: 16 accumulators are twice the chains that two FMA pipes of 4
// cycles' latency need, and 16 columns are one cache line of a value row.
// Groups of 12 keys measured the same as 16 in the engine; 20 or more
// leave too few general registers for the rows' addresses.
const blockGroupZ = 16

// blockRowsZ returns the address of row w of a group of W rows stride
// bytes apart, from bases[w/4] (row 4b of the group) and s3 = 3*stride.
func blockRowsZ(bases []Register, stride, s3 Register) func(w int) Mem {
	return func(w int) Mem {
		base := bases[w/4]
		switch w % 4 {
		case 1:
			return Mem{Base: base, Index: stride, Scale: 1}
		case 2:
			return Mem{Base: base, Index: stride, Scale: 2}
		case 3:
			return Mem{Base: base, Index: s3, Scale: 1}
		}
		return Mem{Base: base}
	}
}

func genBlockScoresZ(ask bool) {
	ap := askAt(ask)
	st := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(4), n)
	qt := Load(Param("qt").Base(), GP64())
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)

	keyGroupsZ("scoresz", blockGroupZ, n, k, qt, stride, s3, "qt", func(W int, row func(int) Mem, qp, cnt Register, advance func(U int)) {
		acc := zerosZ(W)
		// step(u) emits dimension u of a block of dimensions at the
		// current pointers.
		step := func(u int) {
			q := ZMM()
			VMOVUPS(Mem{Base: qp, Disp: 64 * u}, q)
			for w := range W {
				m := row(w)
				m.Disp += 4 * u
				VFMADD231PS_BCST(m, q, acc[w])
			}
		}
		if W == blockGroupZ {
			scoresLinesZ(acc, row, qp, cnt, stride, s3, k, ap, advance)
		}
		unrolled(fmt.Sprintf("scoresz%d", W), cnt, step, advance)

		for w, a := range acc {
			VMOVUPS(a, Mem{Base: st, Disp: 64 * w})
		}
		ADDQ(U32(64*W), st)
	})
	VZEROUPPER()
	RET()
}

// keyGroupsZ emits the block score kernels' walk over the keys at k (n of
// them, stride bytes apart, s3 = 3·stride) in groups of first keys, then
// of 8, 4, 2 and 1 while that many remain. For each group, group(W, row,
// qp, cnt, advance) emits its dimensions and stores its scores: row(w)
// addresses key w's current element, qp the current query dimension (from
// qt, of param qtParam's length in dimensions, counted down in cnt), and
// advance(U) steps both U dimensions on. Then k moves past the group.
func keyGroupsZ(prefix string, first int, n, k, qt, stride, s3 Register, qtParam string, group func(W int, row func(int) Mem, qp, cnt Register, advance func(U int))) {
	blockGroupsZ(prefix, first, n, func(W int) {
		bases := []Register{GP64()}
		MOVQ(k, bases[0])
		for b := 1; b < (W+3)/4; b++ {
			bases = append(bases, GP64())
			LEAQ(Mem{Base: bases[b-1], Index: stride, Scale: 4}, bases[b])
		}
		qp, cnt := GP64(), GP64()
		MOVQ(qt, qp)
		Load(Param(qtParam).Len(), cnt)
		SHRQ(U8(4), cnt) // dimensions
		group(W, blockRowsZ(bases, stride, s3), qp, cnt, func(U int) {
			ADDQ(U32(64*U), qp)
			for _, b := range bases {
				ADDQ(U8(4*U), b)
			}
		})
		adv := GP64()
		MOVQ(stride, adv)
		if W > 1 {
			IMUL3Q(U8(W), adv, adv)
		}
		ADDQ(adv, k)
	})
}

// blockGroupsZ emits a walk over n keys or columns in groups of first,
// then of 8, 4, 2 and 1, each size while that many remain: body(W) emits a
// group of W (and moves the pointers past it), then n drops by W.
func blockGroupsZ(prefix string, first int, n Register, body func(W int)) {
	for _, W := range []int{first, 8, 4, 2, 1} {
		loop, next := fmt.Sprintf("%s%d_loop", prefix, W), fmt.Sprintf("%s%d_next", prefix, W)
		Label(loop)
		CMPQ(n, U8(W))
		JL(LabelRef(next))
		body(W)
		SUBQ(U8(W), n)
		JMP(LabelRef(loop))
		Label(next)
	}
}

func genBlockBlendZ(ask bool) {
	ap := askAt(ask)
	ot := Load(Param("ot").Base(), GP64())
	dv := Load(Param("ot").Len(), GP64())
	SHRQ(U8(4), dv)
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	// Unlike the avx2 kernel, which fetches the next call's rows, each
	// step fetches, into L2, the columns of its own row that the next
	// group reads (at that group's last column: every cache line of a
	// row holds the last column of some group), so that the engine can
	// blend a whole tile in one call (see wholeTileBlend): only the first
	// group's lines are not asked for ahead, and the hardware's stride
	// prefetcher sees them coming. The last group asks for the line past
	// its row's columns, which costs a fetch and changes nothing.
	// An empty c means no rescale (a later run of the same tile).
	cz := ZMM()
	scale := GP64()
	Load(Param("c").Len(), scale)
	TESTQ(scale, scale)
	JZ(LabelRef("blendz_noc"))
	Load(Param("c").Base(), scale)
	VMOVUPS(Mem{Base: scale}, cz)
	MOVQ(U32(1), scale)
	Label("blendz_noc")

	blockGroupsZ("blendz", blockGroupZ, dv, func(W int) {
		acc := make([]VecVirtual, W)
		for i := range acc {
			acc[i] = loadZ(Mem{Base: ot, Disp: 64 * i}, nil)
		}
		scaled := fmt.Sprintf("blendz%d_scaled", W)
		TESTQ(scale, scale)
		JZ(LabelRef(scaled))
		for _, a := range acc {
			VMULPS(cz, a, a)
		}
		Label(scaled)
		var wap Register
		if W == blockGroupZ {
			wap = ap
		}
		valueKeysOwnZ(fmt.Sprintf("blendz%d", W), W, v, stride, s3, "st", wap, func(sp Register, u int) func(row Mem) {
			p := loadZ(Mem{Base: sp, Disp: 64 * u}, nil)
			return func(row Mem) {
				for w := range W {
					m := row
					m.Disp = 4 * w
					VFMADD231PS_BCST(m, p, acc[w])
				}
			}
		})
		for i, a := range acc {
			storeZ(a, Mem{Base: ot, Disp: 64 * i}, nil)
		}
		ADDQ(U32(64*W), ot)
		ADDQ(U8(4*W), v)
	})
	VZEROUPPER()
	RET()
}

// valueKeysZ emits the block blend kernels' walk over the keys for a
// group of W columns from v (value rows stride bytes apart, s3 =
// 3·stride), their weights from param stParam, unrolled by four keys
// (rows vp, vp+s, vp+2s, vp+3s), then one at a time. For key u of a step,
// weights(sp, u) loads its weights (at sp) and returns what emits its FMAs
// on the value row at row; each key first fetches into L2 the columns of
// its row that the next group reads (see genBlockBlendZ).
func valueKeysZ(name string, W int, v, stride, s3 Register, stParam string, weights func(sp Register, u int) func(row Mem)) {
	vp, sp, cnt, nx := GP64(), GP64(), GP64(), GP64()
	MOVQ(v, vp)
	Load(Param(stParam).Base(), sp)
	Load(Param(stParam).Len(), cnt)
	SHRQ(U8(4), cnt) // keys
	LEAQ(Mem{Base: v, Disp: 4 * (2*W - 1)}, nx)
	step := func(u int) {
		fmas := weights(sp, u)
		row := blockRowsZ([]Register{vp}, stride, s3)(u)
		pf := row
		pf.Base = nx
		PREFETCHT1(pf)
		fmas(row)
	}
	unrolled(name, cnt, step, nextKeys(sp, vp, nx, stride))
}

// valueKeysOwnZ is valueKeysZ for kernels whose FMAs take the value
// rows as broadcast memory operands (one block of lanes). Each of the four
// keys of a step has a base register of its own: an FMA whose operand
// has an index register is two uops from rename on, one with a base alone
// stays one. The one-block blend gained from it; the two-block blend,
// which broadcasts into a register for two FMAs, lost with its own bases
// (measured: docs/performance/intel-xeon.md#base-registers-for-the-one-block-kernels-from-code-comments).
//
// With ap not nil, the keys ask for the lines at ap instead, askStep bytes
// a key (see askStep), and move ap on.
func valueKeysOwnZ(name string, W int, v, stride, s3 Register, stParam string, ap Register, weights func(sp Register, u int) func(row Mem)) {
	vp, sp, cnt := GP64(), GP64(), GP64()
	MOVQ(v, vp)
	Load(Param(stParam).Base(), sp)
	Load(Param(stParam).Len(), cnt)
	SHRQ(U8(4), cnt) // keys
	vps := []Register{vp, GP64(), GP64(), GP64()}
	LEAQ(Mem{Base: vp, Index: stride, Scale: 1}, vps[1])
	LEAQ(Mem{Base: vp, Index: stride, Scale: 2}, vps[2])
	LEAQ(Mem{Base: vp, Index: s3, Scale: 1}, vps[3])
	step := func(u int) {
		fmas := weights(sp, u)
		switch {
		case ap == nil:
			PREFETCHT1(Mem{Base: vps[u], Disp: 4 * (2*W - 1)})
		case u%2 == 0:
			// A line for two keys; a lone key asks for the line of its
			// own askStep bytes.
			PREFETCHT1(Mem{Base: ap, Disp: askStep * u})
		}
		fmas(Mem{Base: vps[u]})
	}
	unrolled(name, cnt, step, func(U int) {
		ADDQ(U32(64*U), sp)
		if ap != nil {
			ADDQ(U8(askStep*U), ap)
		}
		if U == 4 {
			for _, r := range vps {
				LEAQ(Mem{Base: r, Index: stride, Scale: 4}, r)
			}
		} else {
			ADDQ(stride, vp) // the steps of one key use vp alone
		}
	})
}

// nextKeys returns the block blends' step of U keys: the weights at sp one
// 64-byte lane vector a key on, the value rows at vp and the rows fetched
// at nx (nil for none) stride bytes a key on.
func nextKeys(sp, vp, nx, stride Register) func(U int) {
	return func(U int) {
		ADDQ(U32(64*U), sp)
		if U == 4 {
			LEAQ(Mem{Base: vp, Index: stride, Scale: 4}, vp)
			if nx != nil {
				LEAQ(Mem{Base: nx, Index: stride, Scale: 4}, nx)
			}
		} else {
			ADDQ(stride, vp)
			if nx != nil {
				ADDQ(stride, nx)
			}
		}
	}
}

// scoresLinesZ emits the score loop of a full group over blocks of sixteen
// dimensions, a cache line of each key row: the block's sixteen query
// vectors are loaded once into registers (with the sixteen accumulators,
// all 32), then the group's rows are taken eight at a time, each line
// consumed by sixteen FMAs in a row. Rows a multiple of 4 KiB apart (the
// heads of a [T][H][d] tensor with H·d = 1024) put the lines of every row
// in one L1 set; the dimension-major order kept all sixteen of them live
// at once, more than the set's ways, and missed on nearly every load.
// Eight rows at a time keep as many FMA chains in flight as the two
// pipes need.
//
// As the group goes, it fetches the rows two groups ahead into L2, one
// prefetch per row and line: a head larger than L2 otherwise reaches the
// kernel as a demand miss per line. Into L1 (PREFETCHT0) the lines of rows
// 4 KiB apart evicted the group's own from their set: measured here, a
// [T][H][d] prefill with H·d = 1024 took 16% longer that way, and the
// packed shapes gained nothing from it.
//
// With ap not nil, the group asks for the lines at ap instead, askStep
// bytes a row and line (see askStep), and moves ap on.
func scoresLinesZ(acc []VecVirtual, row func(w int) Mem, qp, cnt, stride, s3, k, ap Register, advance func(U int)) {
	W := len(acc)
	var pa, pw Register
	if ap == nil {
		pa, pw = GP64(), GP64()
		MOVQ(stride, pa)
		IMUL3Q(U8(2*W), pa, pa)
		ADDQ(k, pa)
		reach := GP64()
		IMUL3Q(U8(W), stride, reach)
		ADDQ(pa, reach)
		keepInside("k", 2, reach, [2]Register{k, pa})
	} else {
		pa = ap
	}
	scoresLinesLoopZ("scoresz_lines", acc, row, qp, cnt, stride, s3, pa, pw, advance)
}

// scoresLinesLoopZ emits one of scoresLinesZ's loops over the lines of
// the group's rows, row(w) addressing row w's current line; pa is the
// group two groups ahead, pw its row being fetched.
func scoresLinesLoopZ(name string, acc []VecVirtual, row func(w int) Mem, qp, cnt, stride, s3, pa, pw Register, advance func(U int)) {
	W := len(acc)
	inner, after := name+"_inner", name+"_after"
	Label(inner)
	CMPQ(cnt, U8(16))
	JL(LabelRef(after))
	if pw != nil {
		MOVQ(pa, pw)
	}
	q := make([]VecVirtual, 16)
	for u := range q {
		q[u] = loadZ(Mem{Base: qp, Disp: 64 * u}, nil)
	}
	pf := 0 // the next row of the group ahead to fetch
	for h := 0; h < W; h += 8 {
		for u := range q {
			if (h/8*16+u)%2 == 0 && pf < W {
				switch {
				case pw == nil:
					// Asking: a line for two slots.
					if pf%2 == 0 {
						PREFETCHT1(Mem{Base: pa, Disp: askStep * pf})
					}
				case pf%4 == 0:
					PREFETCHT1(Mem{Base: pw})
				case pf%4 == 1:
					PREFETCHT1(Mem{Base: pw, Index: stride, Scale: 1})
				case pf%4 == 2:
					PREFETCHT1(Mem{Base: pw, Index: stride, Scale: 2})
				default:
					PREFETCHT1(Mem{Base: pw, Index: s3, Scale: 1})
					if pf < W-1 {
						LEAQ(Mem{Base: pw, Index: stride, Scale: 4}, pw)
					}
				}
				pf++
			}
			for w := h; w < min(W, h+8); w++ {
				m := row(w)
				m.Disp += 4 * u
				VFMADD231PS_BCST(m, q[u], acc[w])
			}
		}
	}
	advance(16)
	if pw == nil {
		ADDQ(U32(askStep*W), pa)
	} else {
		ADDQ(U8(64), pa)
	}
	SUBQ(U8(16), cnt)
	JMP(LabelRef(inner))
	Label(after)
}
