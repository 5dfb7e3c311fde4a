package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// taskScratch is a worker's scratch memory as one task uses it, carved by
// scratchFor.
type taskScratch struct {
	qs []float32 // the task's scaled queries, row by row
	// qp holds them in pair order for the bfloat16 multi-row score where
	// it takes them so (see pairedBF16), else nil.
	qp   []float32
	s    []float32 // a tile of one row's scores
	m, l []float32 // each row's running max and running sum
	// The block path's lanes (see internal/kernel/block_generic.go): the queries, the
	// scores of a tile, the output, and the softmax state.
	qt, st, ot, ml []float32
	kw, vw         []float32 // 16-bit key and value rows, widened (see widenKeys)
	seen           []float32 // keepCut's marks of the keys it checked
	tmp            []float32 // the score stage's tile (see tmpLen)
	row            []float32 // a score row when logits are wanted without the weights
	// For rows cut into chunks: a chunk's partial (see partLen) and the
	// running max and sum of the chunks folded so far.
	part, rm, rl []float32
	// The block path's ALiBi distances as two keys of the blend kernel,
	// their lane weights and value rows, and each lane's slope (see
	// alibiLanes); lanesALiBi says they hold the task's.
	alibiW, alibiV, slopes []float32
	lanesALiBi             bool
	// wide is the worker's widened head, shared by its tasks (see
	// wideHead).
	wide *wideHead
	// ahead names the tile whose value rows the worker asked for last
	// (see batch_ahead.go).
	ahead *aheadMark
	// claim is the work item the worker has taken ahead (see itemClaim).
	claim *itemClaim
}

// scratchFor carves the worker's scratch for a task of R rows, growing it
// first if it is too small.
func (p *batchJob) scratchFor(ws *workerScratch, R int) taskScratch {
	n := p.scratchLen(R)
	if cap(ws.buf) < n {
		ws.buf = make([]float32, n)
	}
	var sc taskScratch
	p.carve(&sc, ws.buf[:n], R)
	sc.wide, sc.ahead, sc.claim = &ws.wide, &ws.ahead, &ws.claim
	return sc
}

// scratchPair carves the worker's scratch for two tasks of sixteen rows
// run together (see runPair), growing it first if it is too small.
func (p *batchJob) scratchPair(ws *workerScratch, sc0, sc1 *taskScratch) {
	n := p.scratchLen(kernel.BlockRows)
	if cap(ws.buf) < 2*n {
		ws.buf = make([]float32, 2*n)
	}
	x := ws.buf[:2*n]
	p.carve(sc0, x[:n], kernel.BlockRows)
	p.carve(sc1, x[n:], kernel.BlockRows)
	sc0.wide, sc1.wide = &ws.wide, &ws.wide
	sc0.ahead, sc1.ahead = &ws.ahead, &ws.ahead
}

// scratchLen returns how many floats a task of R rows needs. Beyond the
// online softmax's state a task needs a tile of exponentials for Softcap,
// and a score row when logits are wanted without the weights.
func (p *batchJob) scratchLen(R int) int {
	dk, dv := p.q.cols, p.v.cols
	need := R*dk + p.tile + 2*R
	if p.pairsQueries() {
		need += R * dk
	}
	if p.multi {
		need += (p.multiGroup(R) - 1) * p.tile // scores of a multi-row call's rows
	}
	if p.block {
		need += kernel.BlockRows * (dk + p.tile + dv + laneStates)
		if p.opt.Keep != nil {
			need += p.k.rows
		}
		if p.kt != F32 {
			need += widenKeys(max(dk, dv)) * (dk + dv)
		}
	}
	extra := p.tmpLen() + p.chunkScratch()
	if p.logits != nil && p.w == nil {
		extra += p.k.rows
	}
	return need + extra
}

// carve carves x, scratchLen(R) floats, into sc, zero, for a task of R
// rows. Filled in place: the 504 bytes of a taskScratch returned and
// copied twice a pair took 1% of a prefill's time.
func (p *batchJob) carve(sc *taskScratch, x []float32, R int) {
	dk, dv := p.q.cols, p.v.cols
	sc.qs, x = x[:R*dk], x[R*dk:]
	sc.qp = nil
	if p.pairsQueries() {
		sc.qp, x = x[:R*dk], x[R*dk:]
	}
	ns := p.tile
	if p.multi {
		ns *= p.multiGroup(R)
	}
	sc.s, x = x[:ns], x[ns:]
	sc.m, sc.l, x = x[:R], x[R:2*R], x[2*R:]
	if p.block {
		sc.qt, x = x[:kernel.BlockRows*dk], x[kernel.BlockRows*dk:]
		sc.st, x = x[:kernel.BlockRows*p.tile], x[kernel.BlockRows*p.tile:]
		sc.ot, x = x[:kernel.BlockRows*dv], x[kernel.BlockRows*dv:]
		sc.ml, x = x[:laneStates*kernel.BlockRows], x[laneStates*kernel.BlockRows:]
		if p.opt.Keep != nil {
			sc.seen, x = x[:p.k.rows], x[p.k.rows:]
		}
		if p.kt != F32 {
			w := widenKeys(max(dk, dv))
			sc.kw, x = x[:w*dk], x[w*dk:]
			sc.vw, x = x[:w*dv], x[w*dv:]
		}
	}
	x = p.carveTmp(sc, x)
	if n := p.chunkScratch(); n > 0 {
		sc.part, sc.rm, sc.rl, x = x[:n-2*kernel.BlockRows], x[n-2*kernel.BlockRows:n-kernel.BlockRows], x[n-kernel.BlockRows:n], x[n:]
	}
	sc.row = x
}

// run computes task t: up to sixteen packed query rows of one (batch,
// key/value head). Without weights the rows advance together, tile by
// tile, so each tile of K and V is read from memory once, by all of them.
// Long rows go chunk by chunk (see batch_split.go).
func (p *batchJob) run(t int, ws *workerScratch) {
	var tk batchTask
	p.taskInto(&tk, t)
	p.rowEnds(&tk)
	sc := p.scratchFor(ws, tk.R)
	if p.chunks > 1 {
		p.runChunks(&tk, &sc)
		return
	}
	copyOut := false
	if p.multi {
		// The multi-row kernels blend into contiguous rows: the output's
		// own where the task's rows lie so, else scratch, copied out.
		if tk.part = p.outRun(&tk); tk.part == nil {
			tk.part, copyOut = sc.part[2*kernel.BlockRows:], true
		}
	}
	cut, done := p.runKeys(&tk, &sc)
	if done {
		return
	}
	if copyOut {
		for r := range tk.R {
			copy(p.out.Row(tk.b, tk.hs[r], tk.is[r]), p.acc(&tk, r))
		}
	}
	tk.part = nil
	p.finishRows(&tk, sc.m, sc.l)
	if p.rowPath {
		p.blockOutputs(&tk, &sc, cut)
	}
}

// runKeys runs the task's keys [tk.lo, tk.last) through the block path and
// the row path, and leaves each row's unnormalised output, running max and
// running sum. It reports how many keys the block path took and whether
// the rows are already finished (the direct block path, or whole rows).
func (p *batchJob) runKeys(tk *batchTask, sc *taskScratch) (cut int, done bool) {
	cut = p.blockCut(tk, sc)
	// When the block kernels take every key and no weights or logits are
	// wanted, the queries go from the tensor straight into the lanes and
	// the outputs straight back, normalised; otherwise the row path needs
	// the scaled queries as rows.
	direct := !p.rowPath && cut > tk.lo && cut == tk.last && tk.single && tk.part == nil
	if !direct {
		p.scaledQueries(tk, sc)
	}
	// Weights and logits come from the block path when it takes every key
	// the rows attend, else from whole rows.
	if p.rowPath && (cut == 0 || cut < tk.last) {
		p.wholeRows(tk, sc)
		return cut, true
	}
	if cut == tk.lo {
		for r := range tk.R {
			clear(p.acc(tk, r))
			sc.m[r], sc.l[r] = float32(math.Inf(-1)), 0
		}
	} else {
		p.runBlock(tk, sc, cut, direct)
	}
	if !direct {
		p.tailTiles(tk, sc, cut)
	}
	return cut, direct
}

// blockCut returns the end of the keys, from tk.lo, that the block kernels
// take for task tk: every key if they can, else those every row of the
// block attends (and, under a keep-mask, those before a masked key whose
// value row is not finite); the rest go row by row. tk.lo when the rows
// are too few for the block kernels.
func (p *batchJob) blockCut(tk *batchTask, sc *taskScratch) int {
	if !p.block {
		return tk.lo
	}
	cut := max(tk.lo, tk.first)
	// Keys past some row's end (the causal diagonal), or before its
	// window, are masked per lane, which gives them weight 0; a value row
	// of them that is not finite would still turn 0·v into NaN, so those
	// go row by row.
	if tk.late > tk.lo && !p.finiteValues(tk.b, tk.kh, tk.lo, tk.late) {
		return tk.lo
	}
	if p.finiteValues(tk.b, tk.kh, cut, tk.last) {
		cut = tk.last
	}
	if p.opt.Keep != nil && cut > tk.lo {
		cut = p.keepCut(tk, cut, sc.seen)
	}
	return cut
}

// scaledQueries copies the queries of task tk into sc.qs, scaled.
func (p *batchJob) scaledQueries(tk *batchTask, sc *taskScratch) {
	dk := p.q.cols
	for r := range tk.R {
		copy(sc.qs[r*dk:(r+1)*dk], p.q.Row(tk.b, tk.hs[r], tk.is[r]))
	}
	scale(p.scale, sc.qs)
	if sc.qp != nil {
		kernel.PairOrder(sc.qp[:tk.R*dk], sc.qs[:tk.R*dk], dk)
	}
}

// pairsQueries reports whether a task's scratch holds its queries in pair
// order too: for the bfloat16 multi-row score where it takes them so.
func (p *batchJob) pairsQueries() bool { return p.multi && p.kt == BF16 && kernel.PairedBF16() }

// wholeRows computes every row of task tk by rowWithWeights, its score row
// formed in the weights output, or in scratch when only logits are wanted.
func (p *batchJob) wholeRows(tk *batchTask, sc *taskScratch) {
	for r := range tk.R {
		w := sc.row
		if p.w != nil {
			w = p.w.Row(tk.b, tk.hs[r], tk.is[r])
		}
		p.rowWithWeights(tk, r, w, sc)
	}
}

// tailTiles runs the keys from cut on through the online softmax, a tile
// at a time for every row of task tk, each row up to its end. A row whose
// sum is NaN is done with.
func (p *batchJob) tailTiles(tk *batchTask, sc *taskScratch, cut int) {
	for j0 := cut; j0 < tk.last; j0 += p.tile {
		if js, n := tk.common(j0, p.tile); p.multi && n > 0 {
			// The multi-row kernels take one run of rows: a ring's
			// tile is cut where its rows wrap.
			for n > 0 {
				m := p.within(tk.b, js, n)
				p.tileRows(tk, sc, js, m)
				js, n = js+m, n-m
			}
			continue
		}
		for r := range tk.R {
			js := max(j0, tk.starts[r])
			if n := min(j0+p.tile, tk.ends[r]) - js; n > 0 && sc.l[r] == sc.l[r] {
				sc.m[r], sc.l[r] = p.tileOnline(tk, r, sc, js, n)
			}
		}
	}
}

// finishRows normalises the outputs of task tk by their sums l (and
// sinks), given their maxima m, and sets their LSE: after every chunk of
// a row is folded, so the sink enters the denominator once.
func (p *batchJob) finishRows(tk *batchTask, m, l []float32) {
	for r := range tk.R {
		b, h, i := tk.b, tk.hs[r], tk.is[r]
		o := p.out.Row(b, h, i)
		f, lse := p.rowFinish(h, m[r], l[r])
		p.setLSE(b, h, i, lse)
		switch {
		case f != f:
			fillNaN(o)
		case math.IsInf(float64(m[r]), -1):
			// Nothing attended: zeros, also where the block blend met a
			// value row that is not finite (0·Inf).
			clear(o)
		default:
			scale(f, o)
		}
	}
}

// outRun returns the output rows of task tk as one slice, row r at r·dv,
// where they lie so (the query heads of a group at Tq = 1 in a packed
// output), else nil. Blending there saves copying each row out of
// scratch, a tenth of a decode step over one key (measured:
// docs/performance/amd-epyc-zen4.md#the-next-task-taken-ahead-and-blends-in-place-from-code-comments).
func (p *batchJob) outRun(tk *batchTask) []float32 {
	o, dv := p.out, p.v.cols
	at := func(r int) int { return tk.b*o.bs + tk.hs[r]*o.hs + tk.is[r]*o.rs }
	base := at(0)
	for r := 1; r < tk.R; r++ {
		if at(r) != base+r*dv {
			return nil
		}
	}
	return o.data[base : base+tk.R*dv]
}
