package attention

import "math"

// run computes task t: query rows [blk·16, blk·16+16) of one (batch, head).
// Without weights the rows advance together, tile by tile, so each tile of
// K and V is read from L1 by all of them.
func (p *batchJob) run(t int, scratch *[]float32) {
	b, h, i0, R := p.task(t)
	kh := h / p.group
	dk, dv := p.q.cols, p.v.cols
	need := R*dk + p.tile + 2*R
	if p.block {
		need += blockRows * (dk + p.tile + dv + 4)
		if p.opt.Keep != nil {
			need += p.k.rows
		}
	}
	extra := p.extraScratch()
	if cap(*scratch) < need+extra {
		*scratch = make([]float32, need+extra)
	}
	buf := (*scratch)[:need]
	qs, s, ml := buf[:R*dk], buf[R*dk:R*dk+p.tile], buf[R*dk+p.tile:R*dk+p.tile+2*R]
	m, l := ml[:R], ml[R:]
	tmp, row := p.scratchSplit((*scratch)[need : need+extra])
	// The block kernels take keys [0, cut): every key if they can, else
	// those every row of the block attends (and, under a keep-mask, those
	// before a masked key whose value row is not finite); the rest go row
	// by row.
	var ends [blockRows]int
	first, last := p.k.rows, 0
	for r := range R {
		ends[r] = p.end(b, i0+r)
		first, last = min(first, ends[r]), max(last, ends[r])
	}
	cut := 0
	if p.block {
		cut = first
		// Keys past some row's end (the causal diagonal) are masked per
		// lane, which gives them weight 0; a value row of them that is not
		// finite would still turn 0·v into NaN, so those go row by row.
		if p.finiteValues(b, kh, first, last) {
			cut = last
		}
		if p.opt.Keep != nil && cut > 0 {
			cut = p.keepCut(b, kh, i0, R, cut, buf[len(buf)-p.k.rows:])
		}
	}
	// When the block kernels take every key and no weights or logits are
	// wanted, the queries go from the tensor straight into the lanes and
	// the outputs straight back, normalised; otherwise the row path needs
	// the scaled queries as rows.
	direct := !p.rowPath && cut > 0 && cut == last
	if !direct {
		for r := range R {
			copy(qs[r*dk:(r+1)*dk], p.q.Row(b, h, i0+r))
		}
		scale(p.scale, qs)
	}
	// Weights and logits come from the block path when it takes every key
	// the rows attend, else from whole rows.
	rowPath := p.rowPath && (cut == 0 || cut < last)
	for r := range R {
		i := i0 + r
		if rowPath {
			if p.w != nil {
				row = p.w.Row(b, h, i)
			}
			p.rowWithWeights(p.out.Row(b, h, i), row, qs[r*dk:(r+1)*dk], tmp, p.keep(i), b, h, i, kh, ends[r])
			continue
		}
		if cut == 0 {
			clear(p.out.Row(b, h, i))
			m[r], l[r] = float32(math.Inf(-1)), 0
		}
	}
	if rowPath {
		return
	}
	lanes := buf[R*dk+p.tile+2*R:]
	if cut > 0 {
		p.runBlock(lanes, qs, m, l, tmp, ends[:R], t, cut, direct)
	}
	if direct {
		return
	}
	for j0 := cut; j0 < last; j0 += p.tile {
		for r := range R {
			if n := min(p.tile, ends[r]-j0); n > 0 && l[r] == l[r] {
				m[r], l[r] = p.tileOnline(p.out.Row(b, h, i0+r), qs[r*dk:(r+1)*dk], s[:n], tmp, p.keep(i0+r), b, h, i0+r, kh, j0, m[r], l[r])
			}
		}
	}
	for r := range R {
		o := p.out.Row(b, h, i0+r)
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
	if p.rowPath {
		p.blockOutputs(lanes, qs, m, l, tmp, ends[:R], b, h, kh, i0, cut)
	}
}
