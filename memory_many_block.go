package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// The block path of AttendMany, in blocks of manyBlockMin to sixteen
// queries, for the scorers whose scores are dot products of the queries
// with rows of the Memory: the dot scorers (with the keys) and general
// (with its projections W·h). Blocks of sixteen queries sit across the SIMD lanes as
// in Batched (see internal/kernel/block_generic.go), so that each key and value element,
// once loaded, serves sixteen queries; an online softmax takes the keys a
// tile at a time. Every block of a pass runs over a tile before the next
// tile is read: K and V come from memory once per pass of up to
// manyGroups·16 queries, and from L2 for the other blocks of the pass.
//
// Masked keys are never read: a tile's attended keys are scored run by run
// into consecutive lanes of the score tile, and their value rows blended
// run by run, so the lanes hold only attended keys and no -Inf padding.

// Its tiles, kernel calls, blend runs and lanes are sized by the rules of
// Batched's block path (see batch_lanes.go): the same kernels, sized alike.
const manyGroups = 4 // blocks of sixteen queries per pass

// blockPass is one pass of the block path: rows [i0, i0+R) of the queries
// in ceil(R/16) blocks, their lanes side by side in lanes.
type blockPass struct {
	k         []float32 // the rows the queries are dotted with: keys, or general's projections
	ks, d     int       // their stride and width
	dv, T     int       // value dimension and number of keys
	f         float32   // the query scale (dot scorers)
	tile, run int       // keys per tile, and at most per blend call
	lanes     []float32 // per block: qt [d][16], ot [dv][16], ml [4][16]
	st        []float32 // a tile's scores, [tile][16]
	kw        []float32 // a cache's 16-bit rows, a few widened at a time
	ctx, w    []float32 // the pass's contexts, and weights or nil
	R         int
}

// blockWidth returns the width of the rows the block kernels dot the
// queries with, or 0 if the scorer's scores are not such dot products.
func (m *Memory) blockWidth() int {
	_, _, d := m.dotRows()
	return d
}

// blockable reports whether the block kernels can take the Memory's keys:
// dot-product scores of rows that have columns, values with columns, and
// calls within the kernels' budget.
func (m *Memory) blockable() bool {
	d, dv := m.blockWidth(), m.values.cols
	return d > 0 && dv > 0 && blockFits(d, dv)
}

// attendBlocks runs AttendMany's queries through the block path, up to
// manyGroups blocks of sixteen queries per pass over the keys.
func (m *Memory) attendBlocks(ctx, weights []float32, queries Matrix, ws *Workspace) {
	n, T, dv := queries.rows, m.keys.rows, m.values.cols
	p := m.newBlockPass()
	G := min(manyGroups, (n+kernel.BlockRows-1)/kernel.BlockRows)
	lane := kernel.BlockRows * (p.d + dv + laneStates)
	// The score tile also holds a block's queries while they are turned
	// (see blockRun), before any tile is scored.
	st := kernel.BlockRows * max(p.tile, p.d)
	buf := ws.floats(G*lane + st + m.kv.widenScratch(&p))
	p.lanes, p.st = buf[:G*lane], buf[G*lane:G*lane+st]
	p.kw = buf[G*lane+st:]
	for i0 := 0; i0 < n; i0 += G * kernel.BlockRows {
		p.R = min(G*kernel.BlockRows, n-i0)
		p.ctx, p.w = ctx[i0*dv:(i0+p.R)*dv], nil
		if weights != nil {
			p.w = weights[i0*T : (i0+p.R)*T]
		}
		m.blockRun(&p, queries, i0)
	}
}

// newBlockPass returns the settings of the Memory's block passes.
func (m *Memory) newBlockPass() blockPass {
	k, ks, d := m.dotRows()
	dv := m.values.cols
	p := blockPass{k: k, ks: ks, d: d, dv: dv, T: m.keys.rows, f: 1}
	if s, ok := m.scorer.(dotScorer); ok {
		p.f = s.factor(d)
	}
	p.tile = blockTileFor(blockTile, d, dv)
	p.run = blendRun(p.tile, dv)
	return p
}

// blockRun computes the contexts and weights of one pass: the queries into
// the lanes, the tiles, then each block's outputs and the weights' softmax.
func (m *Memory) blockRun(p *blockPass, q Matrix, i0 int) {
	G := (p.R + kernel.BlockRows - 1) / kernel.BlockRows
	for g := range G {
		qt, ot, ml := p.lanesOf(g)
		// Scaled as Attend's prepare scales a query: the same products.
		if R := p.rows(g); m.rotated() {
			// Through the tile's scores, which no tile has yet.
			rotatedLanes(qt, q.rowsFrom(i0+g*kernel.BlockRows), q.stride, R, p.d, p.f, p.st)
		} else {
			kernel.BlockIn(qt, q.rowsFrom(i0+g*kernel.BlockRows), q.stride, R)
			if p.f != 1 {
				scale(p.f, qt)
			}
		}
		if ks := m.channelKeys(); ks != nil {
			mulChannels(qt, ks, kernel.BlockRows)
		}
		resetLanes(ot, ml)
	}
	for j0 := 0; j0 < m.valid; j0 += p.tile {
		j1 := min(m.valid, j0+p.tile)
		for g := range G {
			m.blockTile(p, g, j0, j1)
		}
	}
	for g := range G {
		p.finish(g)
	}
	if p.w != nil {
		m.blockWeights(p)
	}
}

// blockTile runs block g of pass p over the attended keys of [j0, j1):
// their scores, in key order in the lanes of p.st, the logits into the
// weights when they are wanted, the online softmax, and the blend.
func (m *Memory) blockTile(p *blockPass, g, j0, j1 int) {
	qt, ot, ml := p.lanesOf(g)
	n := 0
	for lo, hi := m.nextRun(j0, j1); lo < hi; lo, hi = m.nextRun(hi, j1) {
		s := p.st[n*kernel.BlockRows : (n+hi-lo)*kernel.BlockRows]
		if p.k == nil && m.kv != nil { // a cache's keys
			m.kv.blockScores(p, s, qt, lo, hi)
		} else {
			kernel.BlockScores(s, qt, p.k[lo*p.ks:], p.ks)
		}
		if p.w != nil {
			kernel.BlockOut(p.w[g*kernel.BlockRows*p.T+lo:], p.T, p.rows(g), s)
		}
		n += hi - lo
	}
	if n == 0 {
		return // the running max and sum stand
	}
	kernel.BlockSoftmax(p.st[:n*kernel.BlockRows], ml)
	// The blend rescales the output by c once, on its first call.
	c := laneFactors(ml)
	n = 0
	for lo, hi := m.nextRun(j0, j1); lo < hi; lo, hi = m.nextRun(hi, j1) {
		for k0 := lo; k0 < hi; k0 += p.run {
			k1 := min(hi, k0+p.run)
			if m.kv != nil {
				m.kv.blockBlend(p, ot, p.st[n*kernel.BlockRows:(n+k1-k0)*kernel.BlockRows], k0, k1, c)
			} else {
				kernel.BlockBlend(ot, p.st[n*kernel.BlockRows:(n+k1-k0)*kernel.BlockRows], m.values.rowsFrom(k0), m.values.stride, c)
			}
			c, n = nil, n+k1-k0
		}
	}
}

// finish divides block g's output lanes by their sums and writes them to
// the contexts. A query with nothing attended, or whose attended scores
// are all -Inf (running max -Inf, sum not NaN), gets zeros even where its
// lanes met a value row that is not finite (0·Inf); a NaN sum has already
// spread its NaN over the query's lanes, which dividing keeps.
func (p *blockPass) finish(g int) {
	_, ot, ml := p.lanesOf(g)
	rows := p.rows(g)
	mx, l, f := ml[:kernel.BlockRows], ml[kernel.BlockRows:2*kernel.BlockRows], laneFactors(ml)
	for r := range f {
		f[r] = 1
		if r < rows && !math.IsInf(float64(mx[r]), -1) {
			f[r] = 1 / l[r]
		}
	}
	kernel.BlockBlend(ot, nil, nil, 0, f)
	for r := range rows {
		if math.IsInf(float64(mx[r]), -1) && l[r] == l[r] {
			zeroLane(ot, r)
		}
	}
	kernel.BlockOut(p.ctx[g*kernel.BlockRows*p.dv:], p.dv, rows, ot)
}

// blockWeights turns the logits of the pass's weights rows into weights,
// as Attend's softmax does; the entries of masked keys were never written.
func (m *Memory) blockWeights(p *blockPass) {
	for r := range p.R {
		row := p.w[r*p.T : (r+1)*p.T]
		if m.keep != nil {
			maskScores(row[:m.valid], m.keep)
		}
		m.softmaxRow(row)
	}
}

// lanesOf returns block g's lanes: queries, output and softmax state.
func (p *blockPass) lanesOf(g int) (qt, ot, ml []float32) {
	lane := kernel.BlockRows * (p.d + p.dv + laneStates)
	x := p.lanes[g*lane : (g+1)*lane]
	return x[:kernel.BlockRows*p.d], x[kernel.BlockRows*p.d : kernel.BlockRows*(p.d+p.dv)], x[kernel.BlockRows*(p.d+p.dv):]
}

// rows returns the number of queries of block g.
func (p *blockPass) rows(g int) int { return min(kernel.BlockRows, p.R-g*kernel.BlockRows) }
