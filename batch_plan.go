package attention

import "math"

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
	idle         bool // no output has an element: the call has no task
	adjust       bool // Softcap or Bias: adjustScores has work to do
	opt          *BatchOptions
	scale        float32
	group        int // query heads per key/value head
	blocks       int // query blocks per (batch, head)
	tile         int // keys per tile of the online softmax
	block        bool
}

func newBatchJob(dst BatchOutputs, q, k, v Tensor, opt *BatchOptions) (batchJob, error) {
	if err := checkBatch("Batched.Attend", &dst, q, k, v, opt); err != nil {
		return batchJob{}, err
	}
	H, Tq, dk := q.heads, q.rows, q.cols
	scale := opt.Scale
	if scale == 0 {
		scale = 1
		if dk > 0 {
			scale = float32(1 / math.Sqrt(float64(dk)))
		}
	}
	p := batchJob{out: dst.Out, q: q, k: k, v: v, w: dst.Weights, logits: dst.Logits, opt: opt, scale: scale,
		blocks: (Tq + batchQueryBlock - 1) / batchQueryBlock, tile: keyTile(Tq, dk, v.cols)}
	p.rowPath = p.w != nil || p.logits != nil
	p.idle = dst.empty()
	p.adjust = opt.Softcap > 0 || opt.Bias != nil
	p.block = useBlock(Tq, dk, v.cols)
	if k.heads > 0 {
		p.group = H / k.heads
	}
	return p, nil
}

// tasks returns the number of tasks of the call: none when no output has
// an element, so a dimension that only empty tensors have never sizes any
// work or scratch. Otherwise every dimension that counts tasks is one of a
// non-empty output, whose elements back it: the count fits in an int.
func (p *batchJob) tasks() int {
	if p.idle {
		return 0
	}
	return p.q.batch * p.q.heads * p.blocks
}

// batchTask is one task: query rows [i0, i0+R) of head h of batch entry b,
// which read key/value head kh. rowEnds fills in each row's end and their
// range, which every phase of the task reads.
type batchTask struct {
	t, b, h, kh, i0, R int
	first, last        int // the least and the greatest of ends[:R]
	ends               [blockRows]int
}

// task returns task t's rows; their ends are left for rowEnds.
func (p *batchJob) task(t int) batchTask {
	blk, bh := t%p.blocks, t/p.blocks
	i0 := blk * batchQueryBlock
	h := bh % p.q.heads
	return batchTask{t: t, b: bh / p.q.heads, h: h, kh: h / p.group, i0: i0, R: min(p.q.rows, i0+batchQueryBlock) - i0}
}

// rowEnds sets the key end of each row of tk (see end), and their range.
func (p *batchJob) rowEnds(tk *batchTask) {
	tk.first, tk.last = p.k.rows, 0
	for r := range tk.R {
		tk.ends[r] = p.end(tk.b, tk.i0+r)
		tk.first, tk.last = min(tk.first, tk.ends[r]), max(tk.last, tk.ends[r])
	}
}

// endsOf returns the key ends of tk's rows.
func (tk *batchTask) endsOf() []int { return tk.ends[:tk.R] }

// end returns how many keys query row i of batch entry b can attend: the
// valid length and, for a causal mask, the row's own position cut it short.
func (p *batchJob) end(b, i int) int {
	e := p.k.rows
	if p.opt.ValidLen != nil {
		e = p.opt.ValidLen[b]
	}
	if p.opt.Causal {
		base := p.k.rows
		if p.opt.CausalToValidLen && p.opt.ValidLen != nil {
			base = p.opt.ValidLen[b]
		}
		// i < Tq, so the frontier before the shift is in [base−Tq+1, base]:
		// no overflow; the shift, any int, saturates.
		e = min(e, max(0, addSat(base-(p.q.rows-1-i), p.opt.CausalShift)))
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

func (p *batchJob) keep(i int) []bool {
	if p.opt.Keep == nil {
		return nil
	}
	Tk := p.k.rows
	return p.opt.Keep[i*Tk : (i+1)*Tk]
}
