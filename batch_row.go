package attention

import "math"

// tileOnline adds keys [j0, j0+n) to row r of task tk in the flash-style
// online softmax, and returns the row's new running maximum and running
// sum (sc.m[r] and sc.l[r] hold the old ones). The row's output holds the
// unnormalised partial output, rescaled whenever the maximum grows. A NaN
// or +Inf score makes the sum NaN, which marks the row.
func (p *batchJob) tileOnline(tk *batchTask, r int, sc *taskScratch, j0, n int) (float32, float32) {
	b, h, kh, i := tk.b, tk.hs[r], tk.kh, tk.is[r]
	o, qs, s, tmp, keep := p.acc(tk, r), sc.qs[r*p.q.cols:(r+1)*p.q.cols], sc.s[:n], sc.tmp, p.keep(i)
	m, l := sc.m[r], sc.l[r]
	scoreRows(s, p.k.rowsFrom(b, kh, j0), p.k.rs, qs)
	if p.adjust {
		p.adjustScores(s, tmp, b, h, i, j0)
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
		blendKept(o, s, p.v.rowsFrom(b, kh, j0), p.v.rs, maybe(keep, j0, n))
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
	blendKept(o, s, p.v.rowsFrom(b, kh, j0), p.v.rs, maybe(keep, j0, n))
	return m, l
}

// rowWithWeights is the path for callers who want the weights or the
// logits: the whole score row of row r of task tk, keys [start, end), is
// formed in w (the weights output, or scratch), as in Memory.Attend.
func (p *batchJob) rowWithWeights(tk *batchTask, r int, w []float32, sc *taskScratch) {
	b, h, kh, i, start, end := tk.b, tk.hs[r], tk.kh, tk.is[r], min(tk.starts[r], tk.ends[r]), tk.ends[r]
	o, qs, tmp, keep := p.out.Row(b, h, i), sc.qs[r*p.q.cols:(r+1)*p.q.cols], sc.tmp, maybe(p.keep(i), start, end-start)
	clear(o)
	clear(w[:start])
	clear(w[end:])
	sw := w[start:end]
	scoreRows(sw, p.k.rowsFrom(b, kh, start), p.k.rs, qs)
	if p.adjust {
		p.adjustScores(sw, tmp, b, h, i, start)
	}
	if keep != nil {
		maskScores(sw, keep)
	}
	if p.logits != nil {
		lg := p.logits.Row(b, h, i)
		fillWith(lg[:start], float32(math.Inf(-1)))
		copy(lg[start:], sw)
		fillWith(lg[end:], float32(math.Inf(-1)))
	}
	mx := softmax(sw, sw)
	if math.IsInf(float64(mx), -1) {
		return
	}
	if mx != mx || math.IsInf(float64(mx), 1) {
		fillNaN(o)
		if keep != nil {
			zeroMasked(sw, keep)
		}
		return
	}
	blendKept(o, sw, p.v.rowsFrom(b, kh, start), p.v.rs, keep)
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
