package attention

import "math"

// finiteValues reports whether value rows [j0, j1) of (b, kh) hold only
// finite numbers (a row's dot with itself is finite; a huge but finite row
// may say no, which only costs speed).
func (p *batchJob) finiteValues(b, kh, j0, j1 int) bool {
	if j1 <= j0 {
		return true
	}
	if p.v.rs == p.v.cols {
		// Packed rows: one dot over all of them.
		v := p.v.rowsFrom(b, kh, j0)[:(j1-j0)*p.v.cols]
		if d := dot(v, v); d-d == 0 {
			return true
		}
	}
	for i := j0; i < j1; i++ {
		v := p.v.Row(b, kh, i)
		if d := dot(v, v); d-d != 0 {
			return false
		}
	}
	return true
}

// runBlock runs keys [tk.lo, n) for the rows of task tk at once, with the rows
// across SIMD lanes (see block_generic.go), and leaves each row's
// unnormalised output, running max and running sum as tileOnline would.
// Row r attends keys below tk.ends[r] that the keep-mask keeps; the others
// get a -Inf score. sc.qs holds the block's scaled queries, row by row; with
// direct the queries are read from the tensor instead and the outputs are
// left normalised (see run).
func (p *batchJob) runBlock(tk *batchTask, sc *taskScratch, n int, direct bool) {
	b, kh, R := tk.b, tk.kh, tk.R
	dk, dv := p.q.cols, p.v.cols
	qs, m, l, qt, st, ot, ml := sc.qs, sc.m, sc.l, sc.qt, sc.st, sc.ot, sc.ml
	if direct {
		blockIn(qt, p.q.rowsFrom(b, tk.h, tk.i0), p.q.rs, R)
		scale(p.scale, qt)
	} else {
		blockIn(qt, qs, dk, R)
	}
	clear(ot)
	for r := range blockRows {
		ml[r], ml[blockRows+r] = float32(math.Inf(-1)), 0
	}
	for j0 := tk.lo; j0 < n; j0 += p.tile {
		if j0+p.tile >= n {
			p.prefetch(tk)
		}
		s := st[:blockRows*min(p.tile, n-j0)]
		p.blockTileScores(s, tk, sc, j0)
		if p.logits != nil {
			lanesOut(*p.logits, tk, s, j0)
		}
		blockSoftmax(s, ml)
		// The blend walks the tile's value rows once per group of
		// columns: in runs of about 8 KiB of keys those rows stay in L1 (a whole
		// tile of rows a power-of-two apart would fight over cache sets),
		// unless the kernel fetches ahead within a call (see blendRunKeys).
		c := ml[2*blockRows : 3*blockRows]
		run := blockRows * min(p.tile, blendRunKeys(blendRunBytes, dv))
		for k0 := 0; k0 < len(s); k0 += run {
			blockBlend(ot, s[k0:min(len(s), k0+run)], p.v.rowsFrom(b, kh, j0+k0/blockRows), p.v.rs, c)
			c = nil
		}
	}
	for r := range R {
		m[r], l[r] = ml[r], ml[blockRows+r]
	}
	if direct {
		p.normalizeLanes(tk, sc)
	}
	if tk.part != nil {
		blockOut(tk.part, dv, R, ot)
		return
	}
	lanesOut(p.out, tk, ot, 0)
}

// normalizeLanes scales the output lanes of the rows of task tk by their
// factors (1/l, or with a sink 1/(l + e^{sink−m}): see rowFinish) and sets
// the rows' LSE, for runBlock's direct path, which skips run's per-row
// finish.
func (p *batchJob) normalizeLanes(tk *batchTask, sc *taskScratch) {
	m, ot, ml := sc.m, sc.ot, sc.ml
	// A NaN factor marks a NaN row: a NaN sum comes from a NaN weight,
	// which the blend has already spread over the row's lanes (the values
	// are finite), a NaN or +Inf sink spreads now.
	f := ml[2*blockRows : 3*blockRows]
	for r := range f {
		f[r] = 1
		if r < tk.R {
			var lse float32
			f[r], lse = p.rowFinish(tk.hs[r], m[r], sc.l[r])
			p.setLSE(tk.b, tk.hs[r], tk.is[r], lse)
		}
	}
	blockBlend(ot, nil, nil, 0, f)
	// A row with nothing attended (and no NaN) is zero even where its
	// lanes met a value row that is not finite (0·Inf is NaN): rare, so a
	// lane at a time.
	for r := range tk.R {
		if math.IsInf(float64(m[r]), -1) && f[r] == f[r] {
			for c := r; c < len(ot); c += blockRows {
				ot[c] = 0
			}
		}
	}
}

// prefetch asks for the rows task tk writes and the queries of the next
// task, a tile before the end of task tk: neither is usually cached, and a
// miss per cache line would otherwise stall the start of the next task and
// the end of this one. With several workers the next task may be another
// worker's; the hint then costs a few cache lines.
func (p *batchJob) prefetch(tk *batchTask) {
	prefetchRows(p.out.rowsFrom(tk.b, tk.h, tk.i0), p.out.rs, tk.lead(), p.out.cols)
	if tk.t+1 < p.tasks() {
		nx := p.task(tk.t + 1)
		prefetchRows(p.q.rowsFrom(nx.b, nx.h, nx.i0), p.q.rs, nx.lead(), p.q.cols)
	}
}

// blockTileScores sets s to the scores of keys [j0, j0+len(s)/16) for the
// rows of task tk, in the lanes: scaled (sc.qt holds the scaled queries),
// then softcapped and biased, then -Inf where a row does not attend the key
// (past its end, or not kept).
func (p *batchJob) blockTileScores(s []float32, tk *batchTask, sc *taskScratch, j0 int) {
	blockScores(s, sc.qt, p.k.rowsFrom(tk.b, tk.kh, j0), p.k.rs)
	if p.adjust {
		p.adjustBlock(s, sc, tk, j0)
	}
	for r, e := range tk.endsOf() {
		for k := max(e, j0); k < j0+len(s)/blockRows; k++ {
			s[(k-j0)*blockRows+r] = float32(math.Inf(-1))
		}
		for k := j0; k < min(tk.starts[r], j0+len(s)/blockRows); k++ {
			s[(k-j0)*blockRows+r] = float32(math.Inf(-1))
		}
	}
	if p.opt.Keep != nil {
		p.keepTile(s, tk, j0)
	}
}
