package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/scalar"
)

// rowPath is the row path of one task: the plan and the task's row
// scratch, which holds none of the block path's buffers (see
// blockPath). Its methods are the task's scaled queries (scaledQueries,
// which the block path reads too), the online softmax tile by tile
// (tailTiles, tileOnline, and tileRows through the multi-row kernels) and
// the whole score rows of weights and logits (wholeRows, rowWithWeights,
// blockOutputs).
type rowPath struct {
	*batchPlan
	sc *rowScratch
}

// rowPathOf returns the row path over the row scratch of sc.
func (p *batchPlan) rowPathOf(sc *taskScratch) rowPath { return rowPath{p, &sc.row} }

// tileOnline adds keys [j0, j0+n) to row r of task tk in the flash-style
// online softmax, and returns the row's new running maximum and running
// sum (sc.m[r] and sc.l[r] hold the old ones). The row's output holds the
// unnormalised partial output, rescaled whenever the maximum grows. A NaN
// or +Inf score makes the sum NaN, which marks the row.
func (p rowPath) tileOnline(tk *batchTask, r, j0, n int) (float32, float32) {
	sc := p.sc
	b, h, kh, i := tk.b, tk.hs[r], tk.kh, tk.is[r]
	o, qs, s, tmp, keep := p.acc(tk, r), sc.qs[r*p.q.cols:(r+1)*p.q.cols], sc.s[:n], sc.tmp, p.keep(i)
	m, l := sc.m[r], sc.l[r]
	p.scoreKeys(s, b, kh, j0, qs)
	if p.adjust {
		p.adjustScores(s, tmp, b, h, i, j0)
	}
	if keep != nil {
		maskScores(s, keep[j0:j0+n])
	}
	mt := maxf(s)
	switch {
	case mt != mt || math.IsInf(float64(mt), 1):
		return m, float32(math.NaN())
	case math.IsInf(float64(mt), -1):
		// Every score of the tile -Inf: the weights are 0, and the value
		// rows of the keys that are not masked (scored -Inf by a bias or
		// by their data) are still multiplied by them, as on the block
		// path: a value row that is not finite makes the row NaN, unless
		// nothing is attended at all.
		clear(s)
		p.blendValues(o, s, b, kh, j0, maybe(keep, j0, n))
		return m, l
	}
	m, l = rescale(o, m, l, mt)
	l += expSum(s, s, m)
	p.blendValues(o, s, b, kh, j0, maybe(keep, j0, n))
	return m, l
}

// common returns the keys [js, js+n) that every row of task tk attends in
// the tile of keys from j0, if they are the same for all rows (the query
// heads of one decode step), else n = 0.
func (tk *batchTask) common(j0, tile int) (js, n int) {
	js, e := max(j0, tk.starts[0]), min(j0+tile, tk.ends[0])
	for r := 1; r < tk.R; r++ {
		if max(j0, tk.starts[r]) != js || min(j0+tile, tk.ends[r]) != e {
			return 0, 0
		}
	}
	return js, e - js
}

// tileRows adds keys [j0, j0+n) to every row of task tk, as tileOnline
// does for one, through the multi-row kernels in groups of up to four
// rows, each key's K and V rows read once per group (16-bit elements
// widened once for the group). The rows accumulate in tk.part; the tile
// takes no keep-mask (see batchPlan.multi).
func (p rowPath) tileRows(tk *batchTask, j0, n int) {
	sc := p.sc
	r0, _ := p.keyRun(tk.b, j0)
	// The blends ask for the V of the tile the worker takes next (see
	// batch_ahead.go): its entry, head and stored row.
	cold := !sc.ahead.is(p.call, tk.t, j0)
	nt, t, j := p.nextTile(tk, j0, n, sc.claim)
	b, kh, r := tk.b, tk.kh, 0
	if t >= 0 {
		if t != tk.t {
			b, kh = nt.b, nt.kh
		}
		r, _ = p.keyRun(b, j)
	}
	switch p.kt {
	case F32:
		var next []float32
		if t >= 0 && !kernel.MultiBlendSplits(tk.R, p.v.cols) {
			next = p.values32(b, kh, r)
		}
		next, t = asksFit(next, n, p.v.cols, t)
		sc.ahead.mark(p.call, t, j)
		tileRowsOf(p, tk, j0, n, tileRows[float32]{p.keys32(tk.b, tk.kh, r0), p.values32(tk.b, tk.kh, r0), next, cold, &rowKernels32})
	case F16, BF16:
		var next []uint16
		if t >= 0 {
			next = p.values16(b, kh, r)
		}
		next, t = asksFit(next, n, p.v.cols, t)
		sc.ahead.mark(p.call, t, j)
		ks := &rowKernelsF16
		if p.kt == BF16 {
			ks = &rowKernelsBF16
		}
		tileRowsOf(p, tk, j0, n, tileRows[uint16]{p.keys16(tk.b, tk.kh, r0), p.values16(tk.b, tk.kh, r0), next, cold, ks})
	case I8:
		var next []int8
		if t >= 0 {
			next = p.values8(b, kh, r)
		}
		next, t = asksFit(next, n, p.v.rs, t)
		sc.ahead.mark(p.call, t, j)
		tileRowsOf(p, tk, j0, n, tileRows[int8]{p.keys8(tk.b, tk.kh, r0), p.values8(tk.b, tk.kh, r0), next, cold, &rowKernelsI8})
	}
}

// asksFit returns next and the task t of the tile it starts, or nil and
// -1 where next holds fewer elements than a tile of n keys' blends ask for
// (as many as they read of each value row of dv, in vectors of up to 16,
// per key; see blendRowsMulti): next ends where the rows its entry holds
// end (see keys32), and its tile is shorter than this one.
func asksFit[E float32 | uint16 | int8](next []E, n, dv, t int) ([]E, int) {
	if len(next) < n*((dv+15)&^15) {
		return nil, -1
	}
	return next, t
}

// rowKernels are the row path's kernels over K and V rows of E.
type rowKernels[E float32 | uint16 | int8] struct {
	score      func(dst []float32, k []E, stride int, q []float32)
	blend      func(acc, w []float32, v []E, stride int)
	scoreMulti func(dst []float32, k []E, stride int, q []float32, rows int)
	blendMulti func(acc, w []float32, v []E, stride int, rows int, next []E)
	// multiFirst: row 0's blend goes through blendMulti with the rest of
	// its group, not through blend first, where that streams V (see
	// multiBlendStreams and tileRowsOf).
	multiFirst bool
	// multiWarm: so does it where an earlier tile asked for the tile's V
	// (see batch_ahead.go) and the multi-row blends ask so (multiAsksAhead),
	// which then read it from cache; a cold tile's V is streamed by the
	// one-row blend.
	multiWarm bool
	// The wide kernels of five to eight rows, nil where there are none (see
	// multiWide).
	scoreMulti8 func(dst []float32, k []E, stride int, q []float32, rows int, also []E)
	blendMulti8 func(acc, w []float32, v []E, stride int, rows int, next []E)
	// scorePaired is scoreMulti over query rows in pair order, where the
	// task's scratch holds them so (see rowScratch.qp); nil for none.
	scorePaired func(dst []float32, k []E, stride int, q []float32, rows int)
	// splits reports whether blendMulti streams V itself for rows rows of
	// dv columns (see multiBlendSplits); nil for never.
	splits func(rows, dv int) bool
	// scoreNear is scoreMulti for four rows where the call's K and V are
	// in cache (batchPlan.near); nil for none.
	scoreNear func(dst []float32, k []E, stride int, q []float32, rows int)
}

// multiGroup returns how many of R rows (R > 0) one call of the row
// path's multi-row kernels takes: five to multiWideRows where the job has
// the wide kernels (see multiWide) and R is at least five, otherwise up to
// multiRows, as on AttendMany's tiled path.
func (p *batchPlan) multiGroup(R int) int {
	if p.wide && R > multiRows {
		return min(R, multiWideRows)
	}
	return min(R, multiRows)
}

// multiWideRows is the most rows one call of the wide multi-row kernels
// takes.
const multiWideRows = 8

var (
	rowKernels32   = rowKernels[float32]{kernel.ScoreRows, kernel.BlendRows, kernel.ScoreRowsMulti, kernel.BlendRowsMulti, false, true, kernel.ScoreRowsMulti8, kernel.BlendRowsMulti8, nil, kernel.MultiBlendSplits, kernel.ScoreRowsMultiNear}
	rowKernelsF16  = rowKernels[uint16]{kernel.ScoreRowsF16, kernel.BlendRowsF16Runs, kernel.ScoreRowsMultiF16, kernel.BlendRowsMultiF16, true, true, kernel.ScoreRowsMulti8F16, kernel.BlendRowsMulti8F16, nil, nil, nil}
	rowKernelsBF16 = rowKernels[uint16]{kernel.ScoreRowsBF16, kernel.BlendRowsBF16Runs, kernel.ScoreRowsMultiBF16, kernel.BlendRowsMultiBF16, true, true, kernel.ScoreRowsMulti8BF16, kernel.BlendRowsMulti8BF16, kernel.ScoreRowsMultiPairedBF16, nil, nil}
	rowKernelsI8   = rowKernels[int8]{kernel.ScoreRowsI8, kernel.BlendRowsI8, kernel.ScoreRowsMultiI8, kernel.BlendRowsMultiI8, true, true, nil, nil, nil, nil, nil}
)

// tileRows is what tileRowsOf works on: the key and value rows from the
// tile's first key, next, where the value rows of the tile the worker takes
// next start, for the multi-row blends to ask for (nil for none), cold,
// whether this tile's V was not asked for so (see batch_ahead.go), and the
// row kernels of the rows' type.
type tileRows[E float32 | uint16 | int8] struct {
	k, v, next []E
	cold       bool
	ks         *rowKernels[E]
}

// tileRowsOf is tileRows over the rows k and v of the tile's first key.
//
// Which kernel reads the tile from memory first depends on the
// implementation (see multiScoreStreams): the one-row kernels stream K
// and V at close to a plain read, and the multi-row kernels then find them
// in cache; where the multi-row score prefetches well enough to stream K
// itself, every row is scored by it, and V goes first through the one-row
// blend for row 0 unless ks.multiFirst and multiBlendStreams.
//
// Where a task has five to eight rows and the wide kernels (see
// multiWide), they read each key row and each value row once for all of
// them, from memory, where two groups of four would have the second read
// the tile again from L2 while nothing streamed (measured:
// docs/performance/intel-xeon.md#eight-query-heads-in-the-eight-row-kernels-from-code-comments).
//
// The float32 multi-row blend (two streams of keys, like blendRows)
// streams V the slower (measured:
// docs/performance/amd-epyc-zen5.md#row-0s-blend-from-code-comments). So
// each tile's multi-row blend asks for the next tile's V as it goes (see
// batch_ahead.go), and a tile whose V was asked for goes through it whole
// (measured: docs/performance/intel-xeon.md#the-multi-row-blends-ask-ahead-from-code-comments);
// a cold tile still has row 0 through the one-row blend first, and the
// eight-row score asks for its V. On avx512 the 16-bit one (one stream of
// keys) streams V itself and widens each element once for the group, so
// row 0 goes through it too.
//
// t holds the tile's rows and the kernels of their type.
func tileRowsOf[E float32 | uint16 | int8](p rowPath, tk *batchTask, j0, n int, t tileRows[E]) {
	sc := p.sc
	k, v, next, cold, ks := t.k, t.v, t.next, t.cold, t.ks
	dk, dv := p.q.cols, p.v.cols
	first := 0
	if !kernel.MultiScoreStreams() {
		s := sc.s[:n]
		ks.score(s, k, p.k.rs, sc.qs[:dk])
		p.weighTile(tk, 0, s, j0)
		ks.blend(tk.part[:dv], s, v, p.v.rs)
		first = 1
	}
	// Where no earlier tile asked for this one's V, the one-row blend
	// streams it for row 0, or the eight-row score asks for it.
	for g0, step := first, 0; g0 < tk.R; g0 += step {
		g := p.multiGroup(tk.R - g0)
		step = g
		s, o := sc.s[:g*n], tk.part[g0*dv:(g0+g)*dv]
		if g > multiRows {
			var also []E
			if cold {
				also = v
			}
			ks.scoreMulti8(s, k, p.k.rs, sc.qs[g0*dk:(g0+g)*dk], g, also)
		} else if ks.scorePaired != nil && sc.qp != nil {
			ks.scorePaired(s, k, p.k.rs, sc.qp[g0*dk:(g0+g)*dk], g)
		} else if g == 4 && p.near && ks.scoreNear != nil {
			ks.scoreNear(s, k, p.k.rs, sc.qs[g0*dk:(g0+g)*dk], g)
		} else {
			ks.scoreMulti(s, k, p.k.rs, sc.qs[g0*dk:(g0+g)*dk], g)
		}
		for r := g0; r < g0+g; r++ {
			p.weighTile(tk, r, s[(r-g0)*n:(r-g0+1)*n], j0)
		}
		if g0 > first {
			next = nil // asked for by the first group
		}
		if g > multiRows {
			ks.blendMulti8(o, s, v, p.v.rs, g, next)
			continue
		}
		streams := kernel.MultiBlendStreams() && ks.multiFirst || ks.splits != nil && ks.splits(g, dv)
		if g0 == 0 && !(streams || kernel.MultiAsksAhead() && ks.multiWarm && !cold) {
			ks.blend(o[:dv], s[:n], v, p.v.rs)
			s, o, g = s[n:], o[dv:], g-1
			if g == 0 {
				continue
			}
		}
		ks.blendMulti(o, s, v, p.v.rs, g, next)
	}
}

// weighTile turns s, row r's scores of keys [j0, j0+len(s)), into its
// weights against its running max, rescaling its output and sum when the
// max grows, as tileOnline does before its blend. A NaN or +Inf score
// marks the row NaN (whatever is blended into it then no longer matters);
// a tile of -Inf scores gets weights 0, whose blend still carries a value
// row that is not finite into the row, as on every path.
func (p rowPath) weighTile(tk *batchTask, r int, s []float32, j0 int) {
	sc := p.sc
	if p.adjust {
		p.adjustScores(s, sc.tmp, tk.b, tk.hs[r], tk.is[r], j0)
	}
	m, l := sc.m[r], sc.l[r]
	switch mt := maxf(s); {
	case mt != mt || math.IsInf(float64(mt), 1):
		sc.l[r] = float32(math.NaN())
	case math.IsInf(float64(mt), -1):
		clear(s)
	default:
		m, l = rescale(p.acc(tk, r), m, l, mt)
		sc.m[r], sc.l[r] = m, l+expSum(s, s, m)
	}
}

// rescale takes a row's output o, running max m and sum l to a new max
// mt when it is larger, and returns the new max and sum. The factor is
// the exp of a non-positive difference, at most 1; while nothing was
// attended yet (m = -Inf) it is 0, and o (which then holds only what 0·v
// left: zeros, or NaN from a value row that is not finite) and l (0 or
// NaN) would come out of the product unchanged, so it is skipped.
func rescale(o []float32, m, l, mt float32) (float32, float32) {
	switch {
	case !(mt > m):
		return m, l
	case math.IsInf(float64(m), -1):
		return mt, l
	}
	c := scalar.Exp32(m - mt)
	scale(c, o)
	return mt, l * c
}

// rowWithWeights is the path for callers who want the weights or the
// logits: the whole score row of row r of task tk, keys [start, end), is
// formed in w (the weights output, or scratch), as in Memory.Attend; its
// LSE is set too.
func (p rowPath) rowWithWeights(tk *batchTask, r int, w []float32) {
	sc := p.sc
	b, h, kh, i, start, end := tk.b, tk.hs[r], tk.kh, tk.is[r], min(tk.starts[r], tk.ends[r]), tk.ends[r]
	o, qs, tmp, keep := p.out.Row(b, h, i), sc.qs[r*p.q.cols:(r+1)*p.q.cols], sc.tmp, maybe(p.keep(i), start, end-start)
	clear(o)
	clear(w[:start])
	clear(w[end:])
	sw := w[start:end]
	p.scoreKeys(sw, b, kh, start, qs)
	if p.adjust {
		p.adjustScores(sw, tmp, b, h, i, start)
	}
	if keep != nil {
		maskScores(sw, keep)
	}
	if p.logits != nil {
		lg := p.logits.Row(b, h, i)
		fillWith(lg[:start], float32(math.Inf(-1)))
		copy(lg[start:], sw)
		fillWith(lg[end:], float32(math.Inf(-1)))
	}
	// Without a sink the factor is 1/l: softmax's normalisation.
	mx, l := softmaxTerms(sw, sw)
	f, lse := p.rowFinish(h, mx, l)
	p.setLSE(b, h, i, lse)
	switch {
	case f != f:
		// A NaN or +Inf score or sink: NaN weights at the attended keys.
		fillNaN(o)
		fillNaN(sw)
		if keep != nil {
			zeroMasked(sw, keep)
		}
		return
	case math.IsInf(float64(mx), -1):
		return
	}
	scale(f, sw)
	p.blendValues(o, sw, b, kh, start, keep)
}

func maybe(keep []bool, j0, n int) []bool {
	if keep == nil {
		return nil
	}
	return keep[j0 : j0+n]
}

// maskScores sets the scores of keys not kept to -Inf.
func maskScores(s []float32, keep []bool) {
	ninf := float32(math.Inf(-1))
	for i, k := range keep[:len(s)] {
		if !k {
			s[i] = ninf
		}
	}
}

// zeroMasked sets the weights of keys not kept to +0.
func zeroMasked(w []float32, keep []bool) {
	for i, k := range keep[:len(w)] {
		if !k {
			w[i] = 0
		}
	}
}

func fillNaN(x []float32) { fillWith(x, float32(math.NaN())) }

func fillWith(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}
