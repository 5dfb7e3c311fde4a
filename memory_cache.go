package attention

import "github.com/glancelab/attention/internal/kernel"

// NewMemoryCache is NewMemory over the keys and values a KVCache holds for
// entry b, head h: the Len(b) rows held at the call, oldest first (key i
// is the row of position Pos(b)−Len(b)+i), read in place in the type they
// are stored in. A seq2seq model appends its encoder output to a cache
// once and attends it from every decoder step; an f16 or bf16 cache costs
// half the bytes of a float32 one to read, and the rows are never copied.
//
// Everything else is NewMemory's and the Memory's: every scorer, the
// options, Attend and AttendMany with their semantics, error values, zero
// allocations and aliasing checks; the results are within the bounds of
// NewMemory over float32 matrices holding the rows as stored, widened (the
// rounding to 16 bits happened in Append). Over a float32 cache whose held
// rows do not wrap at a ring's capacity they are NewMemory's bits; a ring
// whose rows wrap cuts the kernels' calls there, so the last bits may
// differ. 16-bit rows are widened in registers by the row kernels, a few
// rows at a time into scratch for AttendMany's block kernels, and, for the
// scorers that project the keys (general, additive, concat), once per
// attended key here, which then reads the keys no more. The cache's
// storage is no operand the caller can reach, so no output can meet it.
//
// The Memory reads those rows of the cache while it is used: until its
// last Attend, the entry must not be truncated or reset, nor, in a ring,
// appended past its capacity (which overwrites the oldest rows). Appends
// that overwrite nothing are allowed; the Memory does not see their rows.
//
// A nil cache, or b or h out of range, is an error wrapping ErrArgument;
// so is a nil scorer. Shapes that do not fit the scorer are ErrShape.
func NewMemoryCache(scorer Scorer, c *KVCache, b, h int, opts ...MemoryOption) (*Memory, error) {
	const op = "NewMemoryCache"
	if c == nil {
		return nil, argErr(op, "nil cache")
	}
	if b < 0 || b >= c.batch || h < 0 || h >= c.heads {
		return nil, argErr(op, "entry %d, head %d out of range (%d entries, %d heads)", b, h, c.batch, c.heads)
	}
	T, start := c.n[b], c.Start(b)
	keys := Matrix{rows: T, cols: c.dk, stride: c.dk}
	values := Matrix{rows: T, cols: c.dv, stride: c.dv}
	var kv *cacheHead
	if c.typ == F32 && start+T <= c.capacity {
		// The rows are one float32 matrix each: NewMemory's own path.
		keys = packedView(c.keys32(b, h), start, T, c.dk)
		values = packedView(c.values32(b, h), start, T, c.dv)
	} else {
		head := c.head(b, h)
		kv = &head
	}
	return newMemory(op, scorer, keys, values, memorySource{kv, true}, opts)
}

// packedView returns the T packed rows of d elements from row start of x.
func packedView(x []float32, start, T, d int) Matrix {
	if T == 0 || d == 0 {
		return Matrix{rows: T, cols: d, stride: d}
	}
	return Matrix{rows: T, cols: d, stride: d, data: x[start*d : (start+T)*d : (start+T)*d]}
}

// scoreRun is Memory.scoreRun over the cache's keys: each run of
// contiguous rows of keys [lo, hi) through scoreGroups, with the kernels
// of the cache's type.
func (c *cacheHead) scoreRun(p *tiledPass, T, lo, hi int) {
	d := c.dk
	for lo < hi {
		r, run := c.run(lo)
		e := min(hi, lo+run)
		switch c.kt {
		case F32:
			scoreGroups(p, rowSpan[float32]{c.k32[r*d:], d, d, lo, e, T}, oneFirstScore32(p.R, d), kernel.ScoreRows, kernel.ScoreRowsMulti)
		case F16:
			scoreGroups(p, rowSpan[uint16]{c.k16[r*d:], d, d, lo, e, T}, true, kernel.ScoreRowsF16, kernel.ScoreRowsMultiF16)
		case BF16:
			scoreGroups(p, rowSpan[uint16]{c.k16[r*d:], d, d, lo, e, T}, true, kernel.ScoreRowsBF16, kernel.ScoreRowsMultiBF16)
		case I8:
			scoreGroups(p, rowSpan[int8]{c.k8[r*c.rk:], c.rk, d, lo, e, T}, true, kernel.ScoreRowsI8, kernel.ScoreRowsMultiI8)
		}
		lo = e
	}
}

// rowSpan is keys [lo, hi) of a pass whose score and weight rows are T
// wide, their rows (d elements, stride apart) starting at rows.
type rowSpan[E float32 | uint16 | int8] struct {
	rows                 []E
	stride, d, lo, hi, T int
}

// scoreGroups sets the scores of sp's keys for every query of the pass:
// with oneFirst the first query through one, the others (or all) in groups
// of up to four through multi, their last (hi-lo)%8 keys through one row
// by row.
func scoreGroups[E float32 | uint16 | int8](p *tiledPass, sp rowSpan[E], oneFirst bool,
	one func(dst []float32, k []E, stride int, q []float32),
	multi func(dst []float32, k []E, stride int, q []float32, rows int)) {
	k, stride, d, lo, hi, T := sp.rows, sp.stride, sp.d, sp.lo, sp.hi, sp.T
	n := (hi - lo) &^ 7
	first := 0
	if oneFirst {
		one(p.w[lo:hi], k, stride, p.pq[:d])
		first = 1
	}
	for r, g := first, 0; r < p.R; r += g {
		g = groupOf(p.R - r)
		if g == 1 {
			one(p.w[r*T+lo:r*T+hi], k, stride, p.pq[r*d:(r+1)*d])
			continue
		}
		if n > 0 {
			s := p.s[:g*n]
			multi(s, k, stride, p.pq[r*d:(r+g)*d], g)
			for i := range g {
				copy(p.w[(r+i)*T+lo:(r+i)*T+lo+n], s[i*n:(i+1)*n])
			}
		}
		for i := r; i < r+g && lo+n < hi; i++ {
			one(p.w[i*T+lo+n:i*T+hi], k[n*stride:], stride, p.pq[i*d:(i+1)*d])
		}
	}
}

// blendRun is Memory.blendRun over the cache's values: each run of
// contiguous rows of keys [lo, hi) through blendGroups, with the kernels
// of the cache's type.
func (c *cacheHead) blendRun(p *tiledPass, live []bool, T, lo, hi int) {
	d := c.dv
	for lo < hi {
		r, run := c.run(lo)
		e := min(hi, lo+run)
		switch c.kt {
		case F32:
			blendGroups(p, live, rowSpan[float32]{c.v32[r*d:], d, d, lo, e, T}, oneFirst32(d), kernel.BlendRows, blendRowsMultiNow)
		case F16:
			blendGroups(p, live, rowSpan[uint16]{c.v16[r*d:], d, d, lo, e, T}, false, kernel.BlendRowsF16, blendRowsMultiF16Now)
		case BF16:
			blendGroups(p, live, rowSpan[uint16]{c.v16[r*d:], d, d, lo, e, T}, false, kernel.BlendRowsBF16, blendRowsMultiBF16Now)
		case I8:
			blendGroups(p, live, rowSpan[int8]{c.v8[r*c.rv:], c.rv, d, lo, e, T}, false, kernel.BlendRowsI8, blendRowsMultiI8Now)
		}
		lo = e
	}
}

// widenStep is how many rows the block path widens at a time, and
// widenScratch the floats they take: see widenKeys. A float32 cache
// widens nothing.
func (c *cacheHead) widenStep(p *blockPass) int { return widenKeys(max(p.d, p.dv)) }

func (c *cacheHead) widenScratch(p *blockPass) int {
	if c == nil || c.kt == F32 {
		return 0
	}
	return c.widenStep(p) * max(p.d, p.dv)
}

// blockScores is blockScores over the cache's keys [lo, hi) for the
// queries in the lanes qt: a call per run of contiguous float32 rows, or
// per few 16-bit rows widened into p.kw.
func (c *cacheHead) blockScores(p *blockPass, s, qt []float32, lo, hi int) {
	d := c.dk
	step := c.widenStep(p)
	for lo < hi {
		r, run := c.run(lo)
		n := min(hi-lo, run)
		if c.kt == F32 {
			kernel.BlockScores(s[:n*kernel.BlockRows], qt, c.k32[r*d:], d)
		} else {
			for k0 := 0; k0 < n; k0 += step {
				m := min(step, n-k0)
				kw := p.kw[:m*d]
				c.widenKeys(kw, r+k0)
				kernel.BlockScores(s[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], qt, kw, d)
			}
		}
		s, lo = s[n*kernel.BlockRows:], lo+n
	}
}

// blockBlend is blockBlend of the weights s of keys [lo, hi) into the
// output lanes ot over the cache's value rows, the lanes scaled first by
// sc (nil: not scaled), as blockScores cuts its calls.
func (c *cacheHead) blockBlend(p *blockPass, ot, s []float32, lo, hi int, sc []float32) {
	d := c.dv
	step := c.widenStep(p)
	for lo < hi {
		r, run := c.run(lo)
		n := min(hi-lo, run)
		if c.kt == F32 {
			kernel.BlockBlend(ot, s[:n*kernel.BlockRows], c.v32[r*d:], d, sc)
			sc = nil
		} else {
			for k0 := 0; k0 < n; k0 += step {
				m := min(step, n-k0)
				vw := p.kw[:m*d]
				c.widenValues(vw, r+k0)
				kernel.BlockBlend(ot, s[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], vw, d, sc)
				sc = nil
			}
		}
		s, lo = s[n*kernel.BlockRows:], lo+n
	}
}

// widenKeys sets dst to the key rows from stored row r on, widened (a
// 16-bit or an int8 cache's), len(dst)/dk of them.
func (c *cacheHead) widenKeys(dst []float32, r int) {
	if c.kt == I8 {
		kernel.WidenRowsI8(dst, c.k8[r*c.rk:], c.rk, c.dk)
		return
	}
	widen16(dst, c.k16[r*c.dk:], c.kt)
}

// widenValues is widenKeys for the value rows.
func (c *cacheHead) widenValues(dst []float32, r int) {
	if c.kt == I8 {
		kernel.WidenRowsI8(dst, c.v8[r*c.rv:], c.rv, c.dv)
		return
	}
	widen16(dst, c.v16[r*c.dv:], c.kt)
}
