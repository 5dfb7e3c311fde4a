package attention

import (
	"math"
	"runtime"
	"sync"
)

// BatchOptions configure Batched.Attend. The zero value is plain scaled
// dot-product attention with scale 1/√d and no mask.
type BatchOptions struct {
	// Scale multiplies every score; 0 means 1/√d with d the key dimension.
	Scale float32
	// Causal masks keys after each query's position, aligned bottom-right:
	// query i (of Tq) sees keys j <= i + Tk − Tq + CausalShift.
	Causal      bool
	CausalShift int
	// ValidLen, if not nil, has one entry per batch entry: keys at or past
	// ValidLen[b] are masked (padding).
	ValidLen []int
	// Keep, if not nil, is a [Tq][Tk] row-major keep-mask (true = attend)
	// shared by every batch entry and head.
	Keep []bool
	// Weights, if not nil, receives the attention weights, shaped
	// [batch][heads][Tq][Tk]. Without it the Tq×Tk grid is never formed.
	Weights *Tensor
}

// Batched computes attention for many queries at once: every batch entry,
// every head and every query row, over [batch][heads][T][d] tensors. Query
// heads may outnumber key/value heads (grouped-query and multi-query
// attention): query head h reads key/value head h/(heads/kvHeads), without
// copies.
//
// A Batched owns a pool of worker goroutines and their scratch memory, so
// steady-state calls allocate nothing. Attend may be called from several
// goroutines; calls on one Batched run one at a time. Close stops the
// workers.
type Batched struct {
	mu      sync.Mutex
	workers int
	scratch [][]float32 // per worker
	tasks   chan int
	wg      sync.WaitGroup
	job     batchJob // the call in progress, read-only while workers run
	closed  bool
}

// NewBatched starts a Batched with the given number of workers (0 or less:
// GOMAXPROCS). With one worker, no goroutine is started: calls run on the
// caller's goroutine.
func NewBatched(workers int) *Batched {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	e := &Batched{workers: workers, scratch: make([][]float32, workers)}
	if workers > 1 {
		e.tasks = make(chan int)
		for w := range workers {
			go e.work(w)
		}
	}
	return e
}

// Workers returns the number of workers.
func (e *Batched) Workers() int { return e.workers }

// Close stops the workers. The Batched must not be used afterwards.
func (e *Batched) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed && e.tasks != nil {
		close(e.tasks)
	}
	e.closed = true
}

func (e *Batched) work(w int) {
	for t := range e.tasks {
		e.job.run(t, &e.scratch[w])
		e.wg.Done()
	}
}

// batchQueryBlock is the number of query rows one task handles: the unit of
// parallel work. Each output row is computed by exactly one task, in a fixed
// order, so results do not depend on the number of workers.
const batchQueryBlock = 16

// batchKeyTile is the number of keys scored at a time by the online
// softmax; its scores stay in L1.
const batchKeyTile = 256

// batchJob is one Attend call: shapes, options and derived values.
type batchJob struct {
	out, q, k, v Tensor
	w            *Tensor
	opt          *BatchOptions
	scale        float32
	group        int // query heads per key/value head
	blocks       int // query blocks per (batch, head)
}

// Attend computes out = softmax(scale·Q·Kᵀ + masks)·V for every batch entry
// and head. Shapes: q [B][H][Tq][dk], k [B][Hkv][Tk][dk], v [B][Hkv][Tk][dv],
// out [B][H][Tq][dv], with H a multiple of Hkv. It follows Memory.Attend's
// semantics row by row: masked keys get weight exactly 0 and are never read,
// a query row with no key attended gets a zero output (and zero weights),
// NaN propagates, a +Inf score makes the row NaN. Shape mismatches return an
// error wrapping ErrShape and change nothing.
func (e *Batched) Attend(out, q, k, v Tensor, opt *BatchOptions) error {
	if opt == nil {
		opt = &BatchOptions{}
	}
	job, err := newBatchJob(out, q, k, v, opt)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return argErr("Batched.Attend", "Batched is closed")
	}
	n := q.batch * q.heads * job.blocks
	if e.tasks == nil || n == 1 {
		for t := range n {
			job.run(t, &e.scratch[0])
		}
		return nil
	}
	e.job = job
	e.wg.Add(n)
	for t := range n {
		e.tasks <- t
	}
	e.wg.Wait()
	e.job = batchJob{}
	return nil
}

func newBatchJob(out, q, k, v Tensor, opt *BatchOptions) (batchJob, error) {
	const op = "Batched.Attend"
	B, H, Tq, dk := q.Shape()
	Tk := k.rows
	switch {
	case k.batch != B:
		return batchJob{}, shapeErr(op, "k batch", k.batch, B, "q batch")
	case v.batch != B:
		return batchJob{}, shapeErr(op, "v batch", v.batch, B, "q batch")
	case out.batch != B:
		return batchJob{}, shapeErr(op, "out batch", out.batch, B, "q batch")
	case k.cols != dk:
		return batchJob{}, shapeErr(op, "k dim", k.cols, dk, "q dim")
	case v.heads != k.heads:
		return batchJob{}, shapeErr(op, "v heads", v.heads, k.heads, "k heads")
	case v.rows != Tk:
		return batchJob{}, shapeErr(op, "v rows", v.rows, Tk, "k rows")
	case out.heads != H:
		return batchJob{}, shapeErr(op, "out heads", out.heads, H, "q heads")
	case out.rows != Tq:
		return batchJob{}, shapeErr(op, "out rows", out.rows, Tq, "q rows")
	case out.cols != v.cols:
		return batchJob{}, shapeErr(op, "out dim", out.cols, v.cols, "v dim")
	case k.heads == 0 && H > 0, k.heads > 0 && H%k.heads != 0:
		return batchJob{}, shapeErr(op, "q heads", H, k.heads, "a multiple of the key/value heads")
	}
	if opt.ValidLen != nil {
		if len(opt.ValidLen) != B {
			return batchJob{}, shapeErr(op, "len(ValidLen)", len(opt.ValidLen), B, "batch")
		}
		for b, n := range opt.ValidLen {
			if n < 0 || n > Tk {
				return batchJob{}, argErr(op, "ValidLen[%d] = %d outside [0, %d]", b, n, Tk)
			}
		}
	}
	if opt.Keep != nil && len(opt.Keep) != Tq*Tk {
		return batchJob{}, shapeErr(op, "len(Keep)", len(opt.Keep), Tq*Tk, "Tq·Tk")
	}
	if w := opt.Weights; w != nil {
		if w.batch != B || w.heads != H || w.rows != Tq || w.cols != Tk {
			return batchJob{}, shapeErr(op, "Weights elements", w.batch*w.heads*w.rows*w.cols, B*H*Tq*Tk, "[batch][heads][Tq][Tk]")
		}
	}
	scale := opt.Scale
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) {
		return batchJob{}, argErr(op, "scale %v is not finite", scale)
	}
	if scale == 0 {
		scale = 1
		if dk > 0 {
			scale = float32(1 / math.Sqrt(float64(dk)))
		}
	}
	j := batchJob{out: out, q: q, k: k, v: v, w: opt.Weights, opt: opt, scale: scale,
		blocks: (Tq + batchQueryBlock - 1) / batchQueryBlock}
	if k.heads > 0 {
		j.group = H / k.heads
	}
	return j, nil
}

// run computes task t: query rows [blk·16, blk·16+16) of one (batch, head).
func (j *batchJob) run(t int, scratch *[]float32) {
	blk := t % j.blocks
	bh := t / j.blocks
	b, h := bh/j.q.heads, bh%j.q.heads
	kh := h / j.group
	Tq, Tk, dk := j.q.rows, j.k.rows, j.q.cols
	need := dk + batchKeyTile
	if cap(*scratch) < need {
		*scratch = make([]float32, need)
	}
	buf := (*scratch)[:need]
	qs, s := buf[:dk], buf[dk:]
	for i := blk * batchQueryBlock; i < min(Tq, (blk+1)*batchQueryBlock); i++ {
		// Keys [0, end) can be attended: the valid length and, for a causal
		// mask, the query's own position cut the row short.
		end := Tk
		if j.opt.ValidLen != nil {
			end = j.opt.ValidLen[b]
		}
		if j.opt.Causal {
			end = min(end, max(0, i+Tk-Tq+j.opt.CausalShift+1))
		}
		qrow := j.q.Row(b, h, i)
		for c, x := range qrow {
			qs[c] = j.scale * x
		}
		o := j.out.Row(b, h, i)
		var keep []bool
		if j.opt.Keep != nil {
			keep = j.opt.Keep[i*Tk : (i+1)*Tk]
		}
		if j.w != nil {
			j.rowWithWeights(o, j.w.Row(b, h, i), qs, keep, b, kh, end)
		} else {
			j.rowOnline(o, qs, s, keep, b, kh, end)
		}
	}
}

// rowOnline is the flash-style path: keys in tiles, a running maximum m and
// sum l, and the partial output rescaled whenever m grows, so no row of
// Tk scores is ever stored.
func (j *batchJob) rowOnline(o, qs, s []float32, keep []bool, b, kh, end int) {
	clear(o)
	m, l := float32(math.Inf(-1)), float32(0)
	for j0 := 0; j0 < end; j0 += batchKeyTile {
		n := min(batchKeyTile, end-j0)
		t := s[:n]
		scoreRows(t, j.k.rowsFrom(b, kh, j0), j.k.rs, qs)
		if keep != nil {
			maskScores(t, keep[j0:j0+n])
		}
		mt := maxf(t)
		switch {
		case mt != mt || math.IsInf(float64(mt), 1):
			fillNaN(o)
			return
		case math.IsInf(float64(mt), -1):
			continue // every key of the tile masked
		}
		if mt > m {
			// The exp of a non-positive difference: 0 while nothing was
			// attended yet (m = -Inf), else at most 1.
			c := exp32(m - mt)
			l *= c
			scale(c, o)
			m = mt
		}
		l += expSum(t, t, m)
		blendKept(o, t, j.v.rowsFrom(b, kh, j0), j.v.rs, maybe(keep, j0, n))
	}
	if math.IsInf(float64(m), -1) {
		return // nothing attended: zeros
	}
	scale(1/l, o)
}

// rowWithWeights is the path for callers who want the weights: the whole
// score row is formed in the weights output, as in Memory.Attend.
func (j *batchJob) rowWithWeights(o, w, qs []float32, keep []bool, b, kh, end int) {
	clear(o)
	clear(w[end:])
	r := w[:end]
	scoreRows(r, j.k.rowsFrom(b, kh, 0), j.k.rs, qs)
	if keep != nil {
		maskScores(r, keep[:end])
	}
	mx := softmax(r, r)
	if math.IsInf(float64(mx), -1) {
		return
	}
	if mx != mx || math.IsInf(float64(mx), 1) {
		fillNaN(o)
		return
	}
	blendKept(o, r, j.v.rowsFrom(b, kh, 0), j.v.rs, maybe(keep, 0, end))
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

func fillNaN(x []float32) {
	nan := float32(math.NaN())
	for i := range x {
		x[i] = nan
	}
}

// blendKept adds Σ w[i]·v[i] to acc over the kept rows (all if keep is
// nil), one kernel call per run of consecutive kept rows: masked rows are
// never read.
func blendKept(acc, w, v []float32, stride int, keep []bool) {
	if len(acc) == 0 {
		return
	}
	if keep == nil {
		blendRows(acc, w, v, stride)
		return
	}
	for i := 0; i < len(keep); {
		if !keep[i] {
			i++
			continue
		}
		k := i + 1
		for k < len(keep) && keep[k] {
			k++
		}
		blendRows(acc, w[i:k], v[i*stride:], stride)
		i = k
	}
}
