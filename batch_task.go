package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// taskScratch is a worker's scratch memory as one task uses it, carved by
// scratchFor: the row path's (row), the block path's (blk), and the
// chunks' state, which the task's driver (batchJob) keeps. Each path's
// methods get only their own part (see rowPath and blockPath), so neither
// can name the other's buffers.
type taskScratch struct {
	row rowScratch
	blk blockScratch
	// For rows cut into chunks: a chunk's partial (see partLen) and the
	// running max and sum of the chunks folded so far.
	part, rm, rl []float32
}

// taskRows is what both paths hold of a task's rows, over the same
// floats: the scaled queries, row by row (the block path reads them into
// its lanes), and each row's running max and sum (which the block path
// leaves for the row path's tiles after it).
type taskRows struct {
	qs   []float32
	m, l []float32
}

// rowScratch is the row path's scratch.
type rowScratch struct {
	taskRows
	// qp holds the queries in pair order for the bfloat16 multi-row score
	// where it takes them so (see pairedBF16), else nil.
	qp  []float32
	s   []float32 // a tile of one row's scores (of a group's rows, see multiGroup)
	tmp []float32 // the score stage's tile (see tmpLen), the block path's tmp
	row []float32 // a score row when logits are wanted without the weights
	// ahead names the tile whose value rows the worker asked for last
	// (see batch_ahead.go).
	ahead *aheadMark
	// claim is the work item the worker has taken ahead (see itemClaim).
	claim *itemClaim
}

// blockScratch is the block path's scratch.
type blockScratch struct {
	taskRows
	// The lanes (see internal/kernel/block_generic.go): the queries, the
	// scores of a tile, the output, and the softmax state.
	qt, st, ot, ml []float32
	kw, vw         []float32 // 16-bit key and value rows, widened (see widenKeys)
	seen           []float32 // keepCut's marks of the keys it checked
	tmp            []float32 // the score stage's lane tile (see tmpLen), the row path's tmp
	// The ALiBi distances as two keys of the blend kernel, their lane
	// weights and value rows, and each lane's slope (see alibiLanes);
	// lanesALiBi says they hold the task's.
	alibiW, alibiV, slopes []float32
	lanesALiBi             bool
	// wide is the worker's widened head, shared by its tasks (see
	// wideHead).
	wide *wideHead
}

// scratchFor carves the worker's scratch for a task of R rows, growing it
// first if it is too small.
func (p *batchPlan) scratchFor(ws *workerScratch, R int) taskScratch {
	n := p.scratchLen(R)
	if cap(ws.buf) < n {
		ws.buf = make([]float32, n)
	}
	var sc taskScratch
	p.carve(&sc, ws.buf[:n], R)
	sc.blk.wide, sc.row.ahead, sc.row.claim = &ws.wide, &ws.ahead, &ws.claim
	return sc
}

// scratchNeeds returns the floats any task of the call may carve from a
// worker's scratch (scratchFor, scratchPair) and from its widened head
// (wideRows; 0 where the call widens no head). The caller grows every
// worker's scratch to them before its helpers may enter (see
// Batched.sizeScratch), so that a helper joining a call for the first
// time, late in a model's loop, allocates nothing there.
func (p *batchPlan) scratchNeeds() (buf, wide int) {
	buf = p.scratchLen(min(p.packed, batchQueryBlock))
	if p.pair {
		buf = max(buf, 2*p.scratchLen(kernel.BlockRows))
	}
	if p.widensHeads() {
		wide = p.wideLen()
	}
	return buf, wide
}

// scratchPair carves the worker's scratch for two tasks of sixteen rows
// run together (see runPair), growing it first if it is too small.
func (p *batchPlan) scratchPair(ws *workerScratch, sc0, sc1 *taskScratch) {
	n := p.scratchLen(kernel.BlockRows)
	if cap(ws.buf) < 2*n {
		ws.buf = make([]float32, 2*n)
	}
	x := ws.buf[:2*n]
	p.carve(sc0, x[:n], kernel.BlockRows)
	p.carve(sc1, x[n:], kernel.BlockRows)
	sc0.blk.wide, sc1.blk.wide = &ws.wide, &ws.wide
	sc0.row.ahead, sc1.row.ahead = &ws.ahead, &ws.ahead
}

// scratchLen returns how many floats a task of R rows needs. Beyond the
// online softmax's state a task needs a tile of exponentials for Softcap,
// and a score row when logits are wanted without the weights.
func (p *batchPlan) scratchLen(R int) int {
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
// rows: the two paths' scratch hold the same taskRows and score-stage
// tile. Filled in place: the 504 bytes of a taskScratch returned and
// copied twice a pair took 1% of a prefill's time.
func (p *batchPlan) carve(sc *taskScratch, x []float32, R int) {
	dk, rs := p.q.cols, &sc.row
	rs.qs, x = x[:R*dk], x[R*dk:]
	rs.qp = nil
	if p.pairsQueries() {
		rs.qp, x = x[:R*dk], x[R*dk:]
	}
	ns := p.tile
	if p.multi {
		ns *= p.multiGroup(R)
	}
	rs.s, x = x[:ns], x[ns:]
	rs.m, rs.l, x = x[:R], x[R:2*R], x[2*R:]
	if p.block {
		sc.blk.taskRows = rs.taskRows
		x = p.carveLanes(&sc.blk, x)
	}
	x = p.carveTmp(sc, x)
	if n := p.chunkScratch(); n > 0 {
		sc.part, sc.rm, sc.rl, x = x[:n-2*kernel.BlockRows], x[n-2*kernel.BlockRows:n-kernel.BlockRows], x[n-kernel.BlockRows:n], x[n:]
	}
	rs.row = x
}

// carveLanes carves the block path's lanes and widened rows from x into
// bs and returns the rest of x.
func (p *batchPlan) carveLanes(bs *blockScratch, x []float32) []float32 {
	dk, dv := p.q.cols, p.v.cols
	bs.qt, x = x[:kernel.BlockRows*dk], x[kernel.BlockRows*dk:]
	bs.st, x = x[:kernel.BlockRows*p.tile], x[kernel.BlockRows*p.tile:]
	bs.ot, x = x[:kernel.BlockRows*dv], x[kernel.BlockRows*dv:]
	bs.ml, x = x[:laneStates*kernel.BlockRows], x[laneStates*kernel.BlockRows:]
	if p.opt.Keep != nil {
		bs.seen, x = x[:p.k.rows], x[p.k.rows:]
	}
	if p.kt != F32 {
		w := widenKeys(max(dk, dv))
		bs.kw, x = x[:w*dk], x[w*dk:]
		bs.vw, x = x[:w*dv], x[w*dv:]
	}
	return x
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
	p.finishRows(&tk, sc.row.m, sc.row.l)
	if p.wantRows {
		p.rowPathOf(&sc).blockOutputs(&tk, cut)
	}
}

// runKeys runs the task's keys [tk.lo, tk.last) through the block path and
// the row path, and leaves each row's unnormalised output, running max and
// running sum. It reports how many keys the block path took and whether
// the rows are already finished (the direct block path, or whole rows).
func (p *batchJob) runKeys(tk *batchTask, sc *taskScratch) (cut int, done bool) {
	rp, bp := p.rowPathOf(sc), p.blockPathOf(sc)
	cut = bp.blockCut(tk)
	// When the block kernels take every key and no weights or logits are
	// wanted, the queries go from the tensor straight into the lanes and
	// the outputs straight back, normalised; otherwise the row path needs
	// the scaled queries as rows.
	direct := !p.wantRows && cut > tk.lo && cut == tk.last && tk.single && tk.part == nil
	if !direct {
		rp.scaledQueries(tk)
	}
	// Weights and logits come from the block path when it takes every key
	// the rows attend, else from whole rows.
	if p.wantRows && (cut == 0 || cut < tk.last) {
		rp.wholeRows(tk)
		return cut, true
	}
	if cut == tk.lo {
		for r := range tk.R {
			clear(p.acc(tk, r))
			sc.row.m[r], sc.row.l[r] = float32(math.Inf(-1)), 0
		}
	} else {
		bp.runBlock(tk, cut, direct)
	}
	if !direct {
		rp.tailTiles(tk, cut)
	}
	return cut, direct
}

// blockCut returns the end of the keys, from tk.lo, that the block kernels
// take for task tk: every key if they can, else those every row of the
// block attends (and, under a keep-mask, those before a masked key whose
// value row is not finite); the rest go row by row. tk.lo when the rows
// are too few for the block kernels.
func (p blockPath) blockCut(tk *batchTask) int {
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
		cut = p.keepCut(tk, cut, p.sc.seen)
	}
	return cut
}

// scaledQueries copies the queries of task tk into sc.qs, scaled (and
// into sc.qp in pair order where the row path takes them so).
func (p rowPath) scaledQueries(tk *batchTask) {
	sc := p.sc
	dk := p.q.cols
	for r := range tk.R {
		copy(sc.qs[r*dk:(r+1)*dk], p.q.Row(tk.b, tk.hs[r], tk.is[r]))
	}
	scale(p.scale, sc.qs)
	if p.rotQ {
		kernel.RotateRows(sc.qs[:tk.R*dk], dk)
	}
	if p.kv != nil {
		if ks := p.kv.channelKeys(tk.kh); ks != nil {
			for r := range tk.R {
				mulChannels(sc.qs[r*dk:(r+1)*dk], ks, 1)
			}
		}
	}
	if sc.qp != nil {
		kernel.PairOrder(sc.qp[:tk.R*dk], sc.qs[:tk.R*dk], dk)
	}
}

// pairsQueries reports whether a task's scratch holds its queries in pair
// order too: for the bfloat16 multi-row score where it takes them so.
func (p *batchPlan) pairsQueries() bool { return p.multi && p.kt == BF16 && kernel.PairedBF16() }

// wholeRows computes every row of task tk by rowWithWeights, its score row
// formed in the weights output, or in scratch when only logits are wanted.
func (p rowPath) wholeRows(tk *batchTask) {
	for r := range tk.R {
		w := p.sc.row
		if p.w != nil {
			w = p.w.Row(tk.b, tk.hs[r], tk.is[r])
		}
		p.rowWithWeights(tk, r, w)
	}
}

// tailTiles runs the keys from cut on through the online softmax, a tile
// at a time for every row of task tk, each row up to its end. A row whose
// sum is NaN is done with.
func (p rowPath) tailTiles(tk *batchTask, cut int) {
	sc := p.sc
	for j0 := cut; j0 < tk.last; j0 += p.tile {
		if js, n := tk.common(j0, p.tile); p.multi && n > 0 {
			// The multi-row kernels take one run of rows: a ring's
			// tile is cut where its rows wrap.
			for n > 0 {
				m := p.within(tk.b, js, n)
				p.tileRows(tk, js, m)
				js, n = js+m, n-m
			}
			continue
		}
		for r := range tk.R {
			js := max(j0, tk.starts[r])
			if n := min(j0+p.tile, tk.ends[r]) - js; n > 0 && sc.l[r] == sc.l[r] {
				sc.m[r], sc.l[r] = p.tileOnline(tk, r, js, n)
			}
		}
	}
}

// finishRows normalises the outputs of task tk by their sums l (and
// sinks), given their maxima m, and sets their LSE: after every chunk of
// a row is folded, so the sink enters the denominator once.
func (p *batchPlan) finishRows(tk *batchTask, m, l []float32) {
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
func (p *batchPlan) outRun(tk *batchTask) []float32 {
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
