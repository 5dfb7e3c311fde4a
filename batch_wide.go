package attention

// A 16-bit cache's rows reach the block kernels widened to float32 (the
// kernels broadcast each element to the lanes). Every task of a (batch
// entry, key/value head) reads the same rows, so where a head's rows fit
// wideHeadBytes a worker widens them once, into its workerScratch, and
// its later tasks of that head read them there: a prefill (8 heads × 512
// × 512 × 64) widened each head's rows for each of its 16 pairs of tasks,
// 9% of its time. Longer heads are widened a few rows at a time, into L1,
// for each call of the kernels (see widenKeys).

// workerScratch is a worker's memory: the scratch its tasks carve (see
// scratchFor), the head it last widened, and the tile whose value rows it
// asked for (see aheadMark).
type workerScratch struct {
	buf   []float32
	wide  wideHead
	ahead aheadMark
	claim itemClaim
}

// wideHead holds, if held, the widened key and value rows [0, n) of
// entry b's key/value head kh in call call, in key order.
type wideHead struct {
	held     bool
	call     uint64
	b, kh, n int
	k, v     []float32
	store    []float32
}

// wideHeadBytes bounds the float32 rows of K and V of one head that a
// worker keeps widened: half an L2 of 1 MiB, so that the widened rows stay
// there beside the lanes, the queries and the outputs.
const wideHeadBytes = 512 << 10

// widensHeads reports whether the call's block path reads a 16-bit
// cache's rows from a head widened once per worker (see wideHead).
func (p *batchPlan) widensHeads() bool {
	return p.block && p.kt != F32 && 4*p.k.rows*(p.k.cols+p.v.cols) <= wideHeadBytes
}

// wideLen is the floats of a head's key and value rows widened.
func (p *batchPlan) wideLen() int { return p.k.rows * (p.k.cols + p.v.cols) }

// wideRows returns the widened key and value rows of entry b's head kh
// from key 0 (dk and dv floats a row), widening them into the worker's
// scratch first unless it holds them already; ok is false where the call
// does not widen whole heads.
func (p blockPath) wideRows(b, kh int) (k, v []float32, ok bool) {
	w := p.sc.wide
	if w == nil || !p.widensHeads() {
		return nil, nil, false
	}
	if !w.held || w.call != p.call || w.b != b || w.kh != kh {
		dk, dv := p.k.cols, p.v.cols
		n := p.k.rows
		if p.valid != nil {
			n = min(n, p.valid[b])
		}
		if need := p.wideLen(); cap(w.store) < need {
			w.store = make([]float32, need)
		}
		w.k, w.v = w.store[:n*dk], w.store[n*dk:n*(dk+dv)]
		p.widenRows(w.k, keySpan{b, 0, n}, kh, dk, true, false)
		p.widenRows(w.v, keySpan{b, 0, n}, kh, dv, true, true)
		w.held, w.call, w.b, w.kh, w.n = true, p.call, b, kh, n
	}
	return w.k, w.v, true
}
