package attention

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// BatchOptions configure Batched.Attend. The zero value is plain scaled
// dot-product attention with scale 1/√d and no mask.
type BatchOptions struct {
	// Scale multiplies every score; 0 means 1/√d with d the key dimension.
	Scale float32
	// Causal masks keys after each query's position, aligned bottom-right:
	// query i (of Tq) sees keys j <= i + Tk − Tq + CausalShift, computed
	// without overflow for any CausalShift (math.MaxInt unmasks every key,
	// math.MinInt masks every key).
	Causal      bool
	CausalShift int
	// ValidLen, if not nil, has one entry per batch entry: keys at or past
	// ValidLen[b] are masked (padding).
	ValidLen []int
	// Keep, if not nil, is a [Tq][Tk] row-major keep-mask (true = attend)
	// shared by every batch entry and head.
	Keep []bool
	// Weights, if not nil, receives the attention weights, shaped
	// [batch][heads][Tq][Tk]. Without it (and without Logits) the Tq×Tk
	// grid is never formed.
	Weights *Tensor

	// Softcap, if positive, bounds every scaled score s to (−Softcap,
	// Softcap) through Softcap·tanh(s/Softcap), before Bias is added (so a
	// −Inf bias still masks). The tanh is tanh32's (absolute error below
	// 2^-22), its exponentials computed by the Exp kernel of the
	// implementation in use. 0 means off. A Softcap below 1/MaxFloat32
	// (about 2.9e-39) is refused with ErrArgument: the scores are
	// multiplied by its reciprocal, which would not be a float32.
	Softcap float32
	// Bias, if not nil, is added to the (softcapped) scores before the
	// softmax: an additive mask (−Inf masks a key), a position bias, an
	// attention mask imported from another framework. It is shaped
	// [batch][heads][Tq][Tk], except that each of its first three
	// dimensions may be 1 instead, which broadcasts (numpy-style): a
	// [1][1][Tq][Tk] bias serves every batch entry and head. Keys masked by
	// Bias alone are scored (then get weight exactly 0); a row whose every
	// biased score is −Inf is fully masked (zero output).
	Bias *Tensor
	// CausalToValidLen aligns the causal frontier of batch entry b to its
	// valid length instead of Tk: query i sees keys
	// j <= i + ValidLen[b] − Tq + CausalShift, as when a batch of ragged
	// sequences, right-padded to Tk keys, is decoded together. Without
	// ValidLen it changes nothing.
	CausalToValidLen bool
	// Logits, if not nil, receives the softmax input, shaped
	// [batch][heads][Tq][Tk]: the scaled, softcapped and biased scores,
	// −Inf at keys masked by Keep, ValidLen or Causal.
	Logits *Tensor
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
// workers. The zero Batched is a valid engine with one worker (the
// caller's goroutine).
type Batched struct {
	mu      sync.Mutex
	workers int
	scratch [][]float32 // per worker; the caller's goroutine is worker 0
	wake    chan struct{}
	next    atomic.Int64 // the next task to take
	tasks   int64        // tasks in the call in progress
	wg      sync.WaitGroup
	job     batchJob // the call in progress, read-only while workers run
	closed  bool
}

// NewBatched starts a Batched with the given number of workers (0 or less:
// GOMAXPROCS). The caller's goroutine is one of them, so with one worker
// no goroutine is started.
func NewBatched(workers int) *Batched {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	e := &Batched{workers: workers, scratch: make([][]float32, workers)}
	if workers > 1 {
		e.wake = make(chan struct{}, workers-1)
		for w := 1; w < workers; w++ {
			go e.work(w)
		}
	}
	return e
}

// Workers returns the number of workers.
func (e *Batched) Workers() int { return max(1, e.workers) }

// Close stops the workers. Attend returns ErrClosed afterwards; Close may
// be called more than once.
func (e *Batched) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed && e.wake != nil {
		close(e.wake)
	}
	e.closed = true
}

func (e *Batched) work(w int) {
	for range e.wake {
		e.take(w)
		e.wg.Done()
	}
}

// take runs tasks until none is left. Tasks are handed out by an atomic
// counter: which worker computes a task never changes its result.
func (e *Batched) take(w int) {
	for {
		t := e.next.Add(1) - 1
		if t >= e.tasks {
			return
		}
		e.job.run(int(t), &e.scratch[w])
	}
}

// batchQueryBlock is the number of query rows one task handles: the unit of
// parallel work. Each output row is computed by exactly one task, in a fixed
// order, so results do not depend on the number of workers.
const batchQueryBlock = 16

// keyTile is the number of keys the online softmax takes at a time. With
// several query rows per block, small enough that the tile of K and V
// (about 24 KiB) stays in L1 while every row of the block reads it; for a
// single row nothing is reused and larger tiles mean fewer kernel calls.
func keyTile(rows, dk, dv int) int {
	if useBlock(rows, dk, dv) {
		return min(blockTile, max(1, blockBudget/max(1, dk, dv)))
	}
	if rows < 4 {
		return 256
	}
	return min(256, max(16, 6144/max(1, dk+dv)/8*8))
}

// The block kernels pay off from about half a block of query rows; one
// call works on blockTile keys, fewer for long rows so that no call runs
// longer than the per-row kernels' budget (Go cannot preempt assembly).
const (
	blockMinRows  = 8
	blockTile     = 128
	blockBudget   = 1 << 16
	blendRunBytes = 8 << 10
)

func useBlock(rows, dk, dv int) bool { return rows >= blockMinRows && max(dk, dv) <= blockBudget }

// batchJob is one Attend call: shapes, options and derived values.
type batchJob struct {
	out, q, k, v Tensor
	w, logits    *Tensor
	rowPath      bool // weights or logits wanted: whole score rows are formed
	adjust       bool // Softcap or Bias: adjustScores has work to do
	opt          *BatchOptions
	scale        float32
	group        int // query heads per key/value head
	blocks       int // query blocks per (batch, head)
	tile         int // keys per tile of the online softmax
	block        bool
}

// Attend computes out = softmax(scale·Q·Kᵀ + masks)·V for every batch entry
// and head; with Softcap and Bias the softmax input is
// Softcap·tanh(scale·Q·Kᵀ/Softcap) + Bias, then masked. Shapes:
// q [B][H][Tq][dk], k [B][Hkv][Tk][dk], v [B][Hkv][Tk][dv],
// out [B][H][Tq][dv], with H a multiple of Hkv. It follows Memory.Attend's
// semantics row by row: masked keys get weight exactly 0, a query row with
// no key attended gets a zero output (and zero weights), NaN propagates, a
// +Inf score makes the row NaN. Shape mismatches return an error wrapping
// ErrShape and change nothing.
//
// What is read: keys at or past ValidLen[b], or past every query row's
// causal frontier, are never read (neither K nor V rows). Keys masked by
// Keep have their K row read (every key of a tile is scored, then masked)
// and, on the block path (8 or more query rows), their V row read too (to
// check it is finite, and multiplied by a zero weight when it is); their
// weight is exactly 0 and a value row of theirs that is not finite never
// reaches the output. Keys masked by a −Inf Bias are read and their value
// rows multiplied by 0, so a NaN or Inf there makes the row NaN unless the
// row attends nothing.
//
// Zero sizes: any dimension may be 0. A call whose outputs (out, Weights,
// Logits) have no element computes nothing and returns nil; a query row
// with no key (Tk = 0) gets a zero output; keys of dimension 0 all score 0.
//
// Aliasing: Q, K, V and Bias may overlap one another (views into one fused
// buffer). Out, Weights and Logits must not: no two of their elements may
// share memory, and none may touch the memory span (first to last element)
// of another operand; such calls return an error wrapping ErrArgument.
// After Close, Attend returns ErrClosed.
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
		return ErrClosed
	}
	n := job.tasks()
	if n == 0 {
		return nil
	}
	if e.scratch == nil {
		e.scratch = make([][]float32, 1) // the zero Batched: one worker
	}
	if e.wake == nil || n == 1 {
		for t := range n {
			job.run(t, &e.scratch[0])
		}
		return nil
	}
	e.job, e.tasks = job, int64(n)
	e.next.Store(0)
	helpers := min(e.workers, n) - 1
	e.wg.Add(helpers)
	for range helpers {
		e.wake <- struct{}{}
	}
	e.take(0)
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
	if opt.Keep != nil {
		if n, ok := mulInt(Tq, Tk); !ok || len(opt.Keep) != n {
			return batchJob{}, shapeErr(op, "len(Keep)", len(opt.Keep), n, "Tq·Tk")
		}
	}
	if w := opt.Weights; w != nil {
		if w.batch != B || w.heads != H || w.rows != Tq || w.cols != Tk {
			return batchJob{}, shapeErr(op, "Weights shape", w.elems(), elems(B, H, Tq, Tk), "[batch][heads][Tq][Tk] elements")
		}
	}
	if err := checkScoreOptions(op, opt, B, H, Tq, Tk); err != nil {
		return batchJob{}, err
	}
	if err := checkOutputs(op, out, q, k, v, opt); err != nil {
		return batchJob{}, err
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
	j := batchJob{out: out, q: q, k: k, v: v, w: opt.Weights, logits: opt.Logits, opt: opt, scale: scale,
		blocks: (Tq + batchQueryBlock - 1) / batchQueryBlock, tile: keyTile(Tq, dk, v.cols)}
	j.rowPath = j.w != nil || j.logits != nil
	j.adjust = opt.Softcap > 0 || opt.Bias != nil
	j.block = useBlock(Tq, dk, v.cols)
	if k.heads > 0 {
		j.group = H / k.heads
	}
	return j, nil
}

// tasks returns the number of tasks of the call: none when no output has
// an element, so a dimension that only empty tensors have never sizes any
// work or scratch. Otherwise every dimension that counts tasks is one of a
// non-empty output, whose elements back it: the count fits in an int.
func (j *batchJob) tasks() int {
	if j.out.empty() && (j.w == nil || j.w.empty()) && (j.logits == nil || j.logits.empty()) {
		return 0
	}
	return j.q.batch * j.q.heads * j.blocks
}

// run computes task t: query rows [blk·16, blk·16+16) of one (batch, head).
// Without weights the rows advance together, tile by tile, so each tile of
// K and V is read from L1 by all of them.
func (j *batchJob) run(t int, scratch *[]float32) {
	b, h, i0, R := j.task(t)
	kh := h / j.group
	dk, dv := j.q.cols, j.v.cols
	need := R*dk + j.tile + 2*R
	if j.block {
		need += blockRows * (dk + j.tile + dv + 4)
		if j.opt.Keep != nil {
			need += j.k.rows
		}
	}
	extra := j.extraScratch()
	if cap(*scratch) < need+extra {
		*scratch = make([]float32, need+extra)
	}
	buf := (*scratch)[:need]
	qs, s, ml := buf[:R*dk], buf[R*dk:R*dk+j.tile], buf[R*dk+j.tile:R*dk+j.tile+2*R]
	m, l := ml[:R], ml[R:]
	tmp, row := j.scratchSplit((*scratch)[need : need+extra])
	// The block kernels take keys [0, cut): every key if they can, else
	// those every row of the block attends (and, under a keep-mask, those
	// before a masked key whose value row is not finite); the rest go row
	// by row.
	var ends [blockRows]int
	first, last := j.k.rows, 0
	for r := range R {
		ends[r] = j.end(b, i0+r)
		first, last = min(first, ends[r]), max(last, ends[r])
	}
	cut := 0
	if j.block {
		cut = first
		// Keys past some row's end (the causal diagonal) are masked per
		// lane, which gives them weight 0; a value row of them that is not
		// finite would still turn 0·v into NaN, so those go row by row.
		if j.finiteValues(b, kh, first, last) {
			cut = last
		}
		if j.opt.Keep != nil && cut > 0 {
			cut = j.keepCut(b, kh, i0, R, cut, buf[len(buf)-j.k.rows:])
		}
	}
	// When the block kernels take every key and no weights or logits are
	// wanted, the queries go from the tensor straight into the lanes and
	// the outputs straight back, normalised; otherwise the row path needs
	// the scaled queries as rows.
	direct := !j.rowPath && cut > 0 && cut == last
	if !direct {
		for r := range R {
			copy(qs[r*dk:(r+1)*dk], j.q.Row(b, h, i0+r))
		}
		scale(j.scale, qs)
	}
	// Weights and logits come from the block path when it takes every key
	// the rows attend, else from whole rows.
	rowPath := j.rowPath && (cut == 0 || cut < last)
	for r := range R {
		i := i0 + r
		if rowPath {
			if j.w != nil {
				row = j.w.Row(b, h, i)
			}
			j.rowWithWeights(j.out.Row(b, h, i), row, qs[r*dk:(r+1)*dk], tmp, j.keep(i), b, h, i, kh, ends[r])
			continue
		}
		if cut == 0 {
			clear(j.out.Row(b, h, i))
			m[r], l[r] = float32(math.Inf(-1)), 0
		}
	}
	if rowPath {
		return
	}
	lanes := buf[R*dk+j.tile+2*R:]
	if cut > 0 {
		j.runBlock(lanes, qs, m, l, tmp, ends[:R], t, cut, direct)
	}
	if direct {
		return
	}
	for j0 := cut; j0 < last; j0 += j.tile {
		for r := range R {
			if n := min(j.tile, ends[r]-j0); n > 0 && l[r] == l[r] {
				m[r], l[r] = j.tileOnline(j.out.Row(b, h, i0+r), qs[r*dk:(r+1)*dk], s[:n], tmp, j.keep(i0+r), b, h, i0+r, kh, j0, m[r], l[r])
			}
		}
	}
	for r := range R {
		o := j.out.Row(b, h, i0+r)
		switch {
		case l[r] != l[r]:
			fillNaN(o)
		case math.IsInf(float64(m[r]), -1):
			// Nothing attended: zeros, also where the block blend met a
			// value row that is not finite (0·Inf).
			clear(o)
		default:
			scale(1/l[r], o)
		}
	}
	if j.rowPath {
		j.blockOutputs(lanes, qs, m, l, tmp, ends[:R], b, h, kh, i0, cut)
	}
}

// finiteValues reports whether value rows [j0, j1) of (b, kh) hold only
// finite numbers (a row's dot with itself is finite; a huge but finite row
// may say no, which only costs speed).
func (j *batchJob) finiteValues(b, kh, j0, j1 int) bool {
	if j1 <= j0 {
		return true
	}
	if j.v.rs == j.v.cols {
		// Packed rows: one dot over all of them.
		v := j.v.rowsFrom(b, kh, j0)[:(j1-j0)*j.v.cols]
		if d := dot(v, v); d-d == 0 {
			return true
		}
	}
	for i := j0; i < j1; i++ {
		v := j.v.Row(b, kh, i)
		if d := dot(v, v); d-d != 0 {
			return false
		}
	}
	return true
}

// runBlock runs keys [0, n) for the rows of task t at once, with the rows
// across SIMD lanes (see block_generic.go), and leaves each row's
// unnormalised output, running max and running sum as tileOnline would.
// Row r attends keys below ends[r] that the keep-mask keeps; the others get
// a -Inf score. qs holds the block's scaled queries, row by row; with
// direct the queries are read from the tensor instead and the outputs are
// left normalised (see run).
func (j *batchJob) runBlock(buf, qs, m, l, tmp []float32, ends []int, t, n int, direct bool) {
	b, h, i0, R := j.task(t)
	kh, dk, dv := h/j.group, j.q.cols, j.v.cols
	qt, st, ot, ml := j.blockScratch(buf)
	if direct {
		blockIn(qt, j.q.rowsFrom(b, h, i0), j.q.rs, R)
		scale(j.scale, qt)
	} else {
		blockIn(qt, qs, dk, R)
	}
	clear(ot)
	for r := range blockRows {
		ml[r], ml[blockRows+r] = float32(math.Inf(-1)), 0
	}
	for j0 := 0; j0 < n; j0 += j.tile {
		if j0+j.tile >= n {
			j.prefetch(t)
		}
		s := st[:blockRows*min(j.tile, n-j0)]
		j.blockTileScores(s, qt, tmp, ends, b, h, kh, i0, j0)
		if j.logits != nil {
			blockOut(j.logits.rowsFrom(b, h, i0)[j0:], j.logits.rs, R, s)
		}
		blockSoftmax(s, ml)
		// The blend walks the tile's value rows once per group of
		// columns: in runs of about 8 KiB of keys those rows stay in L1 (a whole
		// tile of rows a power-of-two apart would fight over cache sets).
		c := ml[2*blockRows : 3*blockRows]
		run := blockRows * max(8, blendRunBytes/(4*max(1, dv)))
		for k0 := 0; k0 < len(s); k0 += run {
			blockBlend(ot, s[k0:min(len(s), k0+run)], j.v.rowsFrom(b, kh, j0+k0/blockRows), j.v.rs, c)
			c = nil
		}
	}
	for r := range R {
		m[r], l[r] = ml[r], ml[blockRows+r]
	}
	if direct {
		// Each lane times 1/l, as run's scale of a row would. Rows with
		// nothing attended keep their zero lanes. A NaN sum comes from a
		// NaN weight, which the blend has already spread over the row's
		// lanes (the values are finite).
		f := ml[2*blockRows : 3*blockRows]
		for r := range f {
			f[r] = 1
			if r < R && !math.IsInf(float64(m[r]), -1) {
				f[r] = 1 / l[r]
			}
		}
		blockBlend(ot, nil, nil, 0, f)
		// A row with nothing attended (and no NaN score) is zero even
		// where its lanes met a value row that is not finite (0·Inf is
		// NaN): rare, so a lane at a time.
		for r := range R {
			if math.IsInf(float64(m[r]), -1) && l[r] == l[r] {
				for c := r; c < len(ot); c += blockRows {
					ot[c] = 0
				}
			}
		}
	}
	blockOut(j.out.rowsFrom(b, h, i0), j.out.rs, R, ot)
}

// prefetch asks for the rows task t writes and the queries of the next
// task, a tile before the end of task t: neither is usually cached, and a
// miss per cache line would otherwise stall the start of the next task and
// the end of this one. With several workers the next task may be another
// worker's; the hint then costs a few cache lines.
func (j *batchJob) prefetch(t int) {
	b, h, i0, R := j.task(t)
	prefetchRows(j.out.rowsFrom(b, h, i0), j.out.rs, R, j.out.cols)
	if t+1 < j.q.batch*j.q.heads*j.blocks {
		b, h, i0, R := j.task(t + 1)
		prefetchRows(j.q.rowsFrom(b, h, i0), j.q.rs, R, j.q.cols)
	}
}

// task returns the batch entry, head, first query row and number of rows
// of task t.
func (j *batchJob) task(t int) (b, h, i0, R int) {
	blk, bh := t%j.blocks, t/j.blocks
	i0 = blk * batchQueryBlock
	return bh / j.q.heads, bh % j.q.heads, i0, min(j.q.rows, i0+batchQueryBlock) - i0
}

// blockScratch divides the block path's scratch: the queries, the scores
// of a tile and the output in the lanes, and the softmax state (see
// block_generic.go).
func (j *batchJob) blockScratch(buf []float32) (qt, st, ot, ml []float32) {
	dk, dv := j.q.cols, j.v.cols
	qt, buf = buf[:blockRows*dk], buf[blockRows*dk:]
	st, buf = buf[:blockRows*j.tile], buf[blockRows*j.tile:]
	return qt, st, buf[:blockRows*dv], buf[blockRows*dv : blockRows*(dv+4)]
}

// blockTileScores sets s to the scores of keys [j0, j0+len(s)/16) for the
// block's rows, in the lanes: scaled (qt holds the scaled queries), then
// softcapped and biased, then -Inf where a row does not attend the key
// (past its end, or not kept).
func (j *batchJob) blockTileScores(s, qt, tmp []float32, ends []int, b, h, kh, i0, j0 int) {
	blockScores(s, qt, j.k.rowsFrom(b, kh, j0), j.k.rs)
	if j.adjust {
		j.adjustBlock(s, tmp, b, h, i0, len(ends), j0)
	}
	for r, e := range ends {
		for k := max(e, j0); k < j0+len(s)/blockRows; k++ {
			s[(k-j0)*blockRows+r] = float32(math.Inf(-1))
		}
	}
	if j.opt.Keep != nil {
		j.keepTile(s, i0, len(ends), j0)
	}
}

// end returns how many keys query row i of batch entry b can attend: the
// valid length and, for a causal mask, the row's own position cut it short.
func (j *batchJob) end(b, i int) int {
	e := j.k.rows
	if j.opt.ValidLen != nil {
		e = j.opt.ValidLen[b]
	}
	if j.opt.Causal {
		base := j.k.rows
		if j.opt.CausalToValidLen && j.opt.ValidLen != nil {
			base = j.opt.ValidLen[b]
		}
		// i < Tq, so the frontier before the shift is in [base−Tq+1, base]:
		// no overflow; the shift, any int, saturates.
		e = min(e, max(0, addSat(base-(j.q.rows-1-i), j.opt.CausalShift)))
	}
	return e
}

// addSat returns a + b, saturated to the range of int.
func addSat(a, b int) int {
	switch {
	case b > 0 && a > math.MaxInt-b:
		return math.MaxInt
	case b < 0 && a < math.MinInt-b:
		return math.MinInt
	}
	return a + b
}

func (j *batchJob) keep(i int) []bool {
	if j.opt.Keep == nil {
		return nil
	}
	Tk := j.k.rows
	return j.opt.Keep[i*Tk : (i+1)*Tk]
}

// tileOnline adds keys [j0, j0+len(s)) to one row of the flash-style
// online softmax: o holds the unnormalised partial output, m the running
// maximum and l the running sum; o is rescaled whenever m grows. A NaN or
// +Inf score makes l NaN, which marks the row.
func (j *batchJob) tileOnline(o, qs, s, tmp []float32, keep []bool, b, h, i, kh, j0 int, m, l float32) (float32, float32) {
	n := len(s)
	scoreRows(s, j.k.rowsFrom(b, kh, j0), j.k.rs, qs)
	if j.adjust {
		j.adjustScores(s, tmp, b, h, i, j0)
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
		blendKept(o, s, j.v.rowsFrom(b, kh, j0), j.v.rs, maybe(keep, j0, n))
		return m, l
	}
	if mt > m {
		// The exp of a non-positive difference: 0 while nothing was
		// attended yet (m = -Inf), else at most 1.
		c := exp32(m - mt)
		l *= c
		scale(c, o)
		m = mt
	}
	l += expSum(s, s, m)
	blendKept(o, s, j.v.rowsFrom(b, kh, j0), j.v.rs, maybe(keep, j0, n))
	return m, l
}

// rowWithWeights is the path for callers who want the weights or the
// logits: the whole score row is formed in w (the weights output, or
// scratch), as in Memory.Attend.
func (j *batchJob) rowWithWeights(o, w, qs, tmp []float32, keep []bool, b, h, i, kh, end int) {
	clear(o)
	clear(w[end:])
	r := w[:end]
	scoreRows(r, j.k.rowsFrom(b, kh, 0), j.k.rs, qs)
	if j.adjust {
		j.adjustScores(r, tmp, b, h, i, 0)
	}
	if keep != nil {
		maskScores(r, keep[:end])
	}
	if j.logits != nil {
		lg := j.logits.Row(b, h, i)
		copy(lg, r)
		fillWith(lg[end:], float32(math.Inf(-1)))
	}
	mx := softmax(r, r)
	if math.IsInf(float64(mx), -1) {
		return
	}
	if mx != mx || math.IsInf(float64(mx), 1) {
		fillNaN(o)
		if keep != nil {
			zeroMasked(r, keep[:end])
		}
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
