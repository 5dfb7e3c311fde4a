package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/scalar"
)

// Long rows are cut into chunks of splitKeys keys. Each chunk's partial
// result (each row's max, sum and unnormalised output over the chunk's
// keys alone) is computed on its own, and the partials are folded into the
// row in chunk order. One worker computes the chunks of a task one after
// the other; when a call has fewer tasks than workers (a decode step of a
// few key/value heads), the chunks become work items of their own and are
// folded once all are done. Either way each chunk and each fold does the
// same arithmetic, so the results are the same bits for any number of
// workers.
//
// splitKeys is fixed, not derived from the worker count, for that reason.
// A fold costs two passes over the rows' outputs (R·dv floats) per chunk,
// against a chunk's reading of splitKeys rows of K and V. Chunks of 512 to
// 4096 keys ran about as fast, 1024 the fastest or tied (measured:
// docs/performance/amd-epyc-zen5.md#chunks-of-1024-keys-from-code-comments):
// small enough that a few key/value heads give a many-core machine work
// for every core.
const splitKeys = 1024

// partLen is the size of one chunk's partial: the max and the sum of each
// of the sixteen rows, then their outputs.
func (p *batchPlan) partLen() int { return 2*kernel.BlockRows + kernel.BlockRows*p.v.cols }

// chunkScratch is the scratch a task needs for its chunks: one partial and
// the running max and sum.
func (p *batchPlan) chunkScratch() int {
	if p.chunks == 1 && !p.multi {
		return 0
	}
	return p.partLen() + 2*kernel.BlockRows
}

// chunksOf returns the end of the chunks task tk has keys in: chunks
// [firstChunk, chunksOf) hold them.
func (tk *batchTask) chunksOf() int {
	return (tk.fullEnd() + splitKeys - 1) / splitKeys
}

// firstChunk returns the first chunk a row of task tk has keys in. The
// chunks before every row's start (a sliding window's) would be empty
// partials, folded as nothing: they are neither computed nor folded, which
// a window over a long cache would otherwise pay per chunk of the cache
// (its queries scaled, its partial started and folded into every row).
func (tk *batchTask) firstChunk() int {
	if tk.R == 0 {
		return 0
	}
	s := tk.starts[0]
	for r := 1; r < tk.R; r++ {
		s = min(s, tk.starts[r])
	}
	return s / splitKeys
}

// fullEnd returns the greatest of the rows' ends over all keys.
func (tk *batchTask) fullEnd() int {
	last := 0
	for r := range tk.R {
		last = max(last, tk.full[r])
	}
	return last
}

// runChunks computes task tk chunk by chunk, folding each partial into the
// rows as it goes.
func (p *batchJob) runChunks(tk *batchTask, sc *taskScratch) {
	n := tk.chunksOf()
	for c := tk.firstChunk(); c < n; c++ {
		p.partial(tk, sc, c, sc.part)
		p.fold(tk, sc, c, sc.part)
	}
	p.finish(tk, sc, n)
}

// partial computes chunk c of task tk into part (see partLen).
func (p *batchJob) partial(tk *batchTask, sc *taskScratch, c int, part []float32) {
	tk.keys(c*splitKeys, min(p.k.rows, (c+1)*splitKeys))
	tk.part = part[2*kernel.BlockRows:]
	p.runKeys(tk, sc)
	tk.part = nil
	copy(part[:tk.R], sc.row.m[:tk.R])
	copy(part[kernel.BlockRows:kernel.BlockRows+tk.R], sc.row.l[:tk.R])
}

// fold merges chunk c's partial into the rows of task tk: the output rows
// of the tensor and the running max and sum in sc. The task's first chunk
// (see firstChunk) is copied.
func (p *batchJob) fold(tk *batchTask, sc *taskScratch, c int, part []float32) {
	dv := p.v.cols
	pm, pl, po := part[:kernel.BlockRows], part[kernel.BlockRows:2*kernel.BlockRows], part[2*kernel.BlockRows:]
	first := c == tk.firstChunk()
	for r := range tk.R {
		o, o1 := p.out.Row(tk.b, tk.hs[r], tk.is[r]), po[r*dv:(r+1)*dv]
		if first {
			copy(o, o1)
			sc.rm[r], sc.rl[r] = pm[r], pl[r]
			continue
		}
		sc.rm[r], sc.rl[r] = foldRow(o, sc.rm[r], sc.rl[r], o1, pm[r], pl[r])
	}
}

// foldRow merges the partial (m1, l1, o1) of a row into (m, l, o), the
// online softmax's merge of two disjoint sets of keys: both are taken to
// the larger max, and a side at -Inf (nothing attended) is scaled by 0, or
// by 1 when both are (then its output holds only what 0·v left there). It
// returns the new max and sum; o is updated in place.
func foldRow(o []float32, m, l float32, o1 []float32, m1, l1 float32) (float32, float32) {
	mx := max(m, m1)
	c, c1 := float32(1), float32(1)
	if m != mx {
		c = scalar.Exp32(m - mx)
		scale(c, o)
	}
	if m1 != mx {
		c1 = scalar.Exp32(m1 - mx)
	}
	axpy(c1, o1, o)
	return mx, l*c + l1*c1
}

// finish normalises the rows of task tk once its chunks up to n are
// folded.
func (p *batchJob) finish(tk *batchTask, sc *taskScratch, n int) {
	if n <= tk.firstChunk() {
		for r := range tk.R {
			sc.rm[r], sc.rl[r] = float32(math.Inf(-1)), 0
		}
	}
	p.finishRows(tk, sc.rm, sc.rl)
}

// item runs work item i of the call: task i, or, when the chunks of the
// tasks are items of their own (chunkWork), chunk i%chunks of task
// i/chunks, its partial left in its slot for foldTask.
func (p *batchJob) item(i int, ws *workerScratch) {
	if !p.chunkWork {
		p.runUnit(i, ws)
		return
	}
	t, c := i/p.chunks, i%p.chunks
	var tk batchTask
	p.taskInto(&tk, t)
	p.rowEnds(&tk)
	if c >= tk.firstChunk() && c < tk.chunksOf() {
		sc := p.scratchFor(ws, tk.R)
		p.partial(&tk, &sc, c, p.slot(t, c))
	}
}

// slot returns where chunk c of task t leaves its partial.
func (p *batchJob) slot(t, c int) []float32 {
	n := p.partLen()
	i := t*p.chunks + c
	return p.parts[i*n : (i+1)*n]
}

// foldTask folds the partials of task t's chunks, in order, and
// normalises its rows.
func (p *batchJob) foldTask(t int, ws *workerScratch) {
	var tk batchTask
	p.taskInto(&tk, t)
	p.rowEnds(&tk)
	sc := p.scratchFor(ws, tk.R)
	n := tk.chunksOf()
	for c := tk.firstChunk(); c < n; c++ {
		p.fold(&tk, &sc, c, p.slot(t, c))
	}
	p.finish(&tk, &sc, n)
}
