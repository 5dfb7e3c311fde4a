package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// batchQueryBlock is the number of query rows one task handles: the unit of
// parallel work. Each output row is computed by exactly one task, in a fixed
// order, so results do not depend on the number of workers.
//
// The rows of a task come from the query heads that share one key/value
// head (grouped-query attention), packed head by head: row p of the
// group's g·Tq rows is query p%Tq of head kh·g + p/Tq. A task of a
// decode step (Tq = 1) thus holds every query head of a group, which all
// read one pass of that head's keys and values instead of one each.
// A task's rows fill the lanes of one block of the block kernels.
const batchQueryBlock = kernel.BlockRows

// keyTile is the number of keys the online softmax takes at a time. The
// block path's tiles stay in L1 or L2 (see blockTileKeys). On the row path each row
// of a task reads the tile in turn, so it must stay in L2 (256 keys of
// d = 128 are 256 KiB of K and V), and larger tiles mean fewer kernel
// calls (measured: docs/performance/amd-epyc-zen5.md#row-path-tiles-of-256-keys-from-code-comments).
func keyTile(block bool, dk, dv int) int {
	if block {
		return blockTileFor(blockTileKeys(), dk, dv)
	}
	return 256
}

// blockMinRows is the fewest query rows a task takes the block kernels
// for: they pay off from about half a block.
const blockMinRows = 8

// blockTileKeys returns the block path's keys per tile for the kernels in
// use. A blend that takes a whole tile per call (see wholeTileBlend) pays
// its per-call and per-group costs (the output lanes loaded, rescaled and
// stored once per group of columns) once per tile, so longer tiles halve
// them. With blends in runs, shorter tiles did not pay for a chunked row,
// so 128 keys stay there (measured:
// docs/performance/amd-epyc-zen5.md#block-path-tiles-from-code-comments).
func blockTileKeys() int {
	if kernel.WholeTileBlend() {
		return blockTileWhole
	}
	return blockTile
}

func useBlock(rows, dk, dv int) bool { return rows >= blockMinRows && blockFits(dk, dv) }

// batchPlan is what every path of a call reads: the shapes, options and
// derived values, where the keys and values live (keyRows) and the
// outputs. It is planned once per call (planBatch) and read-only while the
// tasks run; the paths of a task are views of it with their own scratch:
// rowPath (batch_row.go) and blockPath (batch_block.go), and batchJob
// runs the tasks through them.
type batchPlan struct {
	q         Tensor
	keyRows   // k and v, and the cache they are read from (batch_kv.go)
	out       Tensor
	w, logits *Tensor
	lse       []float32
	wantRows  bool // weights or logits wanted: whole score rows are formed
	idle      bool // no output has an element: the call has no task
	adjust    bool // Softcap, Bias or ALiBi: adjustScores has work to do
	opt       *BatchOptions
	scale     float32
	group     int  // query heads per key/value head
	packed    int  // query rows per (batch, key/value head): group·Tq
	blocks    int  // query blocks per (batch, key/value head)
	chunks    int  // key chunks of splitKeys the rows are cut into (see batch_split.go)
	chunkWork bool // the chunks are work items of their own (see batchJob.item)
	multi     bool // the row path takes a task's rows through the multi-row kernels (see tileRows)
	wide      bool // and five to eight at a time where a task has them (see multiWide)
	near      bool // the call's K and V fit nearBytes: float32 rows' groups of four are scored by scoreRowsMultiNear
	pair      bool // the block path takes tasks two at a time (see batch_pair.go)
	rotQ      bool // the cache's keys are rotated (an I8 cache, see KVCache): so are the queries, once a task
	tile      int  // keys per tile of the online softmax
	block     bool
	// The keys' valid lengths (ValidLen, or a cache's Len) and whether
	// the causal frontier is aligned to them.
	valid   []int
	toValid bool
	// call tells the calls of a Batched apart (see wideHead).
	call uint64
}

// batchJob is one Attend call: its plan, and the partials of its chunks
// where they are work items of their own. Its methods run a call's work
// items: tasks, pairs of tasks and chunks, through the row and block
// paths, and fold the chunks' partials.
type batchJob struct {
	batchPlan
	parts []float32 // the chunks' partials, when chunkWork
}

func newBatchJob(dst BatchOutputs, q, k, v Tensor, opt *BatchOptions) (batchJob, error) {
	if err := checkBatch("Batched.Attend", &dst, q, k, v, opt); err != nil {
		return batchJob{}, err
	}
	return planBatch(dst, q, k, v, opt, keySource{opt.ValidLen, opt.CausalToValidLen && opt.ValidLen != nil, nil}), nil
}

// keySource says where a call's keys end and come from: the valid
// lengths valid (nil: all Tk), the causal frontier aligned to them if
// toValid, read from the cache kv if it is not nil.
type keySource struct {
	valid   []int
	toValid bool
	kv      *KVCache
}

// planBatch plans a checked call whose keys are as src says.
func planBatch(dst BatchOutputs, q, k, v Tensor, opt *BatchOptions, src keySource) batchJob {
	valid, toValid, kv := src.valid, src.toValid, src.kv
	H, Tq, dk := q.heads, q.rows, q.cols
	scale := opt.Scale
	if scale == 0 {
		scale = 1
		if dk > 0 {
			scale = float32(1 / math.Sqrt(float64(dk)))
		}
	}
	p := batchPlan{q: q, keyRows: keyRows{k: k, v: v, kv: kv}, out: dst.Out, w: dst.Weights, logits: dst.Logits, lse: dst.LSE,
		opt: opt, scale: scale, valid: valid, toValid: toValid}
	if kv != nil {
		p.kt = kv.typ
	}
	p.wantRows = p.w != nil || p.logits != nil
	p.idle = dst.empty()
	p.adjust = opt.Softcap > 0 || opt.Bias != nil || opt.ALiBi != nil
	if !p.idle {
		// An output has elements, so H·Tq fits in an int (and Hkv > 0).
		p.group = H / k.heads
		p.packed = p.group * Tq
		p.blocks = (p.packed + batchQueryBlock - 1) / batchQueryBlock
	}
	p.block = useBlock(p.packed, dk, v.cols)
	if Tq == 1 && p.packed <= blockMinRows && opt.Keep == nil && !p.wantRows {
		// The eight query heads of a decode step's group: the multi-row
		// kernels, with each row's FMAs only, beat a block's sixteen lanes
		// half empty; with sixteen rows the block is faster (measured:
		// docs/performance/amd-epyc-zen5.md#eight-query-heads-on-the-row-path-from-code-comments).
		p.block = false
	}
	p.tile = keyTile(p.block, dk, v.cols)
	p.chunks = 1
	if !p.wantRows && k.rows > splitKeys {
		p.chunks = (k.rows + splitKeys - 1) / splitKeys
	}
	p.multi = !p.block && !p.wantRows && opt.Keep == nil && p.packed > 1 && p.tile*max(dk, v.cols) <= kernel.MaxCall
	if p.multi && kernel.MultiScoreStreams() && 2*p.tile*max(dk, v.cols) <= kernel.MaxCall {
		// Every row scored by the multi-row kernels, which stream K (see
		// tileRows): longer tiles halve the calls and the softmax's
		// passes per key. The tile's K and V (512 KiB at d = 128) still
		// stay in L2 for the rows' second reads.
		p.tile *= 2
	}
	// An int8 cache has no wide kernels (of five to eight rows) yet.
	p.wide = p.multi && kernel.MultiWide() && p.kt != I8
	p.rotQ = kv != nil && kv.rotate
	p.near = p.multi && float64(k.batch)*float64(k.heads)*float64(k.rows)*float64(dk+v.cols)*4 <= nearBytes
	p.pair = p.pairable()
	return batchJob{batchPlan: p}
}

// nearBytes is the most float32 K and V a call reads for its four-row
// scores to ask for no K ahead (scoreRowsMultiNear): from the L3 the
// prefetches that stream K from memory only cost time (gqa-512, 4 MiB:
// 0.90 of the time without them, gqa-1k, 8 MiB: 0.93-0.96), and from
// memory they are what streams it (gqa-4k, 32 MiB: 1.39 times as long
// without; measured:
// docs/performance/amd-epyc-zen5.md#the-decode-step-against-its-roofline-2026-12-07).
const nearBytes = 8 << 20

// smallWork is the work (multiply-adds) below which a call runs on the
// caller's goroutine alone: waking a worker and waiting for it costs more
// than it saves, as on a decode step over one key (measured:
// docs/performance/amd-epyc-zen5.md#small-calls-on-one-goroutine-from-code-comments).
const smallWork = 1 << 16

// small reports whether the call's work is below smallWork. Which worker
// runs a task never changes its result, so this only saves time.
func (p *batchPlan) small() bool {
	work := float64(p.q.batch) * float64(p.q.heads) * float64(p.q.rows) * float64(p.k.rows) * float64(p.q.cols+p.v.cols)
	return work < smallWork
}

// tasks returns the number of tasks of the call: none when no output has
// an element, so a dimension that only empty tensors have never sizes any
// work or scratch. Otherwise every dimension that counts tasks is one of a
// non-empty output, whose elements back it: the count fits in an int.
func (p *batchPlan) tasks() int {
	if p.idle {
		return 0
	}
	return p.q.batch * p.k.heads * p.blocks
}

// batchTask is one task: R packed rows of batch entry b that read key/value
// head kh; row r is query is[r] of head hs[r]. When every row is of one
// head (single), they are the consecutive queries [i0, i0+R) of head h,
// and the tensors' rows of the task are one strided run. rowEnds fills in
// each row's end and their range, which every phase of the task reads.
type batchTask struct {
	t, b, kh, R int
	h, i0       int  // the head and query of row 0
	single      bool // every row is of head h
	hs, is      [kernel.BlockRows]int
	// The keys the task works on now are [lo, hi): all of them, or one
	// chunk (see batch_split.go), from the first key a row attends. ends
	// holds each row's end within them, full its end over all keys, and
	// starts its first key (0 but for a sliding window).
	lo, late    int // lo, and the last row's start within [lo, last]
	first, last int // the least and the greatest of ends[:R]
	ends, full  [kernel.BlockRows]int
	starts      [kernel.BlockRows]int
	// part, if not nil, receives the rows' unnormalised outputs (R rows
	// of dv) in place of the output tensor: a chunk's partial.
	part []float32
}

// task returns task t's rows; their ends are left for rowEnds.
func (p *batchPlan) task(t int) batchTask {
	var tk batchTask
	p.taskInto(&tk, t)
	return tk
}

// taskInto sets *tk, zero, to task t's rows; their ends are left for
// rowEnds. Filling the caller's task in place, rather than returning it
// (744 bytes), saved a copy per task.
func (p *batchPlan) taskInto(tk *batchTask, t int) {
	blk, bkh := t%p.blocks, t/p.blocks
	tk.t, tk.b, tk.kh = t, bkh/p.k.heads, bkh%p.k.heads
	p0 := blk * batchQueryBlock
	tk.R = min(p.packed, p0+batchQueryBlock) - p0
	// Row p0+r is query (p0+r)%Tq of head kh·g + (p0+r)/Tq: one division,
	// then a step per row, not two divisions per row, which took about twice
	// as long (task is called twice per task, see prefetch; measured:
	// docs/performance/amd-epyc-zen5.md#a-tasks-rows-by-one-division-from-code-comments).
	h, i := tk.kh*p.group+p0/p.q.rows, p0%p.q.rows
	for r := range tk.R {
		tk.hs[r], tk.is[r] = h, i
		if i++; i == p.q.rows {
			h, i = h+1, 0
		}
	}
	tk.h, tk.i0 = tk.hs[0], tk.is[0]
	tk.single = tk.hs[tk.R-1] == tk.h
}

// taskHead returns what task(t) would give as b, h and i0, and its
// lead(), without the rest of the task: the next task's query rows, for
// prefetch.
func (p *batchPlan) taskHead(t int) (b, h, i0, lead int) {
	blk, bkh := t%p.blocks, t/p.blocks
	p0 := blk * batchQueryBlock
	R := min(p.packed, p0+batchQueryBlock) - p0
	kh := bkh % p.k.heads
	h, i0 = kh*p.group+p0/p.q.rows, p0%p.q.rows
	return bkh / p.k.heads, h, i0, min(R, p.q.rows-i0)
}

// lead returns how many rows of tk, from row 0, are of head tk.h: one
// strided run of the tensors' rows.
func (tk *batchTask) lead() int {
	n := 1
	for n < tk.R && tk.hs[n] == tk.h {
		n++
	}
	return n
}

// rowEnds sets the key end of each row of tk (see end), and the task's
// keys to all of them.
func (p *batchPlan) rowEnds(tk *batchTask) {
	w := p.opt.Window
	for r := range tk.R {
		tk.full[r] = p.end(tk.b, tk.is[r])
		tk.starts[r] = 0
		if w > 0 {
			tk.starts[r] = max(0, tk.full[r]-w)
		}
	}
	tk.keys(0, p.k.rows)
}

// keys sets the keys task tk works on to [lo, hi) from the first key a row
// attends, each row's end within them, and their range.
func (tk *batchTask) keys(lo, hi int) {
	// One pass: late is max(lo, max_r min(starts[r], last)), and
	// max_r min(s_r, last) = min(max_r s_r, last).
	start, maxStart, first, last := hi, math.MinInt, hi, math.MinInt
	for r := range tk.R {
		start, maxStart = min(start, tk.starts[r]), max(maxStart, tk.starts[r])
		e := min(tk.full[r], hi)
		tk.ends[r] = e
		first, last = min(first, e), max(last, e)
	}
	tk.lo = max(lo, start)
	tk.first, tk.last = first, max(tk.lo, last)
	tk.late = max(tk.lo, min(maxStart, tk.last))
}

// acc returns the row that accumulates row r's unnormalised output.
func (p *batchPlan) acc(tk *batchTask, r int) []float32 {
	if tk.part != nil {
		dv := p.v.cols
		return tk.part[r*dv : (r+1)*dv]
	}
	return p.out.Row(tk.b, tk.hs[r], tk.is[r])
}

// endsOf returns the key ends of tk's rows.
func (tk *batchTask) endsOf() []int { return tk.ends[:tk.R] }

// end returns how many keys query row i of batch entry b can attend: the
// valid length and, for a causal mask, the row's own position cut it short.
func (p *batchPlan) end(b, i int) int {
	e := p.k.rows
	if p.valid != nil {
		e = p.valid[b]
	}
	if p.opt.Causal {
		// Past a saturated position the end saturates too (and a
		// negative one attends nothing).
		e = min(e, max(0, addSat(p.pos(b, i), 1)))
	}
	return e
}

// pos returns the position of query row i of batch entry b in key
// coordinates: the last key the causal mask lets it see,
// i + base − Tq + CausalShift with base Tk, or ValidLen[b] with
// CausalToValidLen. i < Tq, so i + base − Tq is in [base−Tq, base−1]: no
// overflow; the shift, any int, saturates.
func (p *batchPlan) pos(b, i int) int {
	base := p.k.rows
	if p.toValid {
		base = p.valid[b]
	}
	return addSat(base-(p.q.rows-i), p.opt.CausalShift)
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

// subSat returns a − b, saturated to the range of int.
func subSat(a, b int) int {
	switch {
	case b < 0 && a > math.MaxInt+b:
		return math.MaxInt
	case b > 0 && a < math.MinInt+b:
		return math.MinInt
	}
	return a - b
}

func (p *batchPlan) keep(i int) []bool {
	if p.opt.Keep == nil {
		return nil
	}
	Tk := p.k.rows
	return p.opt.Keep[i*Tk : (i+1)*Tk]
}
