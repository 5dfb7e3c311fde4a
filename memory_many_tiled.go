package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// The tiled path of AttendMany: Attend's three phases (score, softmax,
// blend) with the loops over keys and queries exchanged. The keys are cut
// into tiles small enough to stay in cache, and every query of a chunk is
// scored against a tile before the next tile is read; the blend then walks
// the value rows the same way. Each key and value row comes from memory
// once per chunk of queries, not once per query.
//
// For the dot scorers and general, whose scores are dot products of the
// prepared queries with rows of the Memory, and for every scorer's blend,
// a tile goes to the multi-row kernels, which load each key or value row
// once for up to four queries. The first query of the chunk takes the
// one-row kernels instead, which stream the tile from memory (scoreRows
// prefetches ahead from 128 KiB on, blendRows reads V as two streams), and
// leave it in L2 for the others: the multi-row kernels, faster from cache,
// stream worse from memory. Every query on the multi-row kernels beat this
// "hybrid" while K and V stayed in cache and lost when they did not (the
// other layers of a model evict them between its steps), where the hybrid
// matched the one-row kernels or beat them (measured:
// docs/performance/amd-epyc-zen5.md#attendmanys-first-query-from-code-comments).
// With two queries the hybrid is the one-row kernels on larger tiles: the
// second query alone is a group of one, which the multi-row kernels do not
// serve faster.
//
// Every query's scores and contexts are the bits it would get in any other
// place among the queries: the multi-row kernels give a row what the
// one-row kernels give it, the blend for any keys, the scores for keys in
// whole groups of eight (the rest go through scoreRows row by row).
//
// The path serves fewer than manyBlockMin queries (and the last such
// queries after the blocks of sixteen), where the block kernels' sixteen
// lanes would mostly idle, and the additive and concat scorers for any
// number: their cost is a tanh per key and query, which no sharing of
// reads removes, while each tile of their projected keys is still read
// once for the whole chunk.

// manyChunk is the number of queries a pass of the tiled path takes: it
// bounds the score rows kept in the workspace when no weights are wanted.
const manyChunk = 16

// manyTileBytes is about how many bytes of key rows a tile of the
// additive and concat scores holds: the tile stays in L1 or L2 while every
// query of the chunk reads it.
const manyTileBytes = 32 << 10

// multiTileBytes is at least how many bytes of key (or value) rows a tile
// of the multi-row kernels holds: enough for scoreRows to stream them
// (scoreStreamBytes in asm/amd64), few enough to stay in L2. On the hybrid
// (see above) with K and V in DRAM smaller tiles took longer and larger
// ones no less, while in cache all sizes ran alike (measured:
// docs/performance/amd-epyc-zen5.md#attendmanys-first-query-from-code-comments).
const multiTileBytes = 128 << 10

// multiRows is the most queries one call of the multi-row kernels takes.
const multiRows = 4

// tiledKeys returns how many keys of rows of width floats make a tile of
// the additive and concat scores.
func tiledKeys(width int) int {
	return min(1024, max(32, manyTileBytes/(4*max(1, width))))
}

// multiKeys returns how many keys of rows of width floats make a tile of
// the multi-row kernels: a multiple of eight (so that every call but a
// run's last covers whole groups of eight) within one call's budget; 0 if
// the rows have no columns or one row exceeds the budget.
func multiKeys(width int) int {
	if width == 0 || width > kernel.MaxCall {
		return 0
	}
	n := min(2048, ((multiTileBytes+4*width-1)/(4*width)+7)&^7, kernel.MaxCall/width)
	if n >= 8 {
		n &^= 7
	}
	return n
}

// tiledPass is one pass of the tiled path over the keys: rows [i0, i0+R)
// of the queries, their score rows (the weights, or scratch) T apart.
type tiledPass struct {
	q      Matrix
	i0, R  int
	ctx, w []float32 // the chunk's contexts and score rows
	pq     []float32 // the prepared queries, P floats each
	tmp    []float32 // the scorer's scratch
	s      []float32 // the score or weight rows of a call of the multi-row kernels
}

// attendTiled runs AttendMany's queries through the tiled path, a chunk of
// up to manyChunk queries per pass over the keys.
func (m *Memory) attendTiled(ctx, weights []float32, queries Matrix, ws *Workspace) {
	n, T, dv := queries.rows, m.keys.rows, m.values.cols
	c, P := min(n, manyChunk), m.scorer.prepared(m)
	rows := 0
	if weights == nil {
		rows = c * T // T is backed by the value rows: ctx has elements
	}
	ns := 0
	if c > 1 {
		_, _, d := m.dotRows()
		ns = multiRows * min(m.valid, max(multiKeys(d), multiKeys(dv)))
	}
	buf := ws.floats(c*P + m.scratch + ns + rows)
	p := tiledPass{q: queries, pq: buf[:c*P], tmp: buf[c*P : c*P+m.scratch]}
	p.s, buf = buf[c*P+m.scratch:][:ns], buf[c*P+m.scratch+ns:]
	for i0 := 0; i0 < n; i0 += c {
		p.i0, p.R = i0, min(c, n-i0)
		p.ctx = ctx[i0*dv : (i0+p.R)*dv]
		if weights != nil {
			p.w = weights[i0*T : (i0+p.R)*T]
		} else {
			p.w = buf[:p.R*T]
		}
		m.tiledRun(&p)
	}
}

// dotRows returns the rows whose dot products with the prepared queries
// are the scores, their stride and their width: the keys for the dot
// scorers, the projections W·h for general; d = 0 for the other scorers,
// and for keys of dimension 0. Keys read from a cache (m.kv) are k = nil,
// with their width.
func (m *Memory) dotRows() (k []float32, stride, d int) {
	if m.keys.cols == 0 {
		return nil, 0, 0
	}
	switch m.scorer.(type) {
	case dotScorer:
		if m.kv != nil {
			return nil, m.keys.cols, m.keys.cols
		}
		return m.keys.rowsFrom(0), m.keys.stride, m.keys.cols
	case generalScorer:
		return m.proj, m.projCols, m.projCols
	}
	return nil, 0, 0
}

// tiledRun computes the contexts and weights of one pass.
func (m *Memory) tiledRun(p *tiledPass) {
	T, P := m.keys.rows, m.scorer.prepared(m)
	for r := range p.R {
		pq, _ := m.scorer.prepare(m, p.q.Row(p.i0+r), p.tmp)
		copy(p.pq[r*P:(r+1)*P], pq)
	}
	if _, _, d := m.dotRows(); multiKeys(d) > 0 {
		m.tiledDots(p)
	} else {
		tile := tiledKeys(max(m.keys.cols, m.projCols))
		for j0 := 0; j0 < m.valid; j0 += tile {
			j1 := min(m.valid, j0+tile)
			for r := range p.R {
				m.scoreSpan(p.w[r*T+j0:r*T+j1], j0, p.pq[r*P:(r+1)*P], p.tmp)
			}
		}
	}
	var live [manyChunk]bool
	for r := range p.R {
		live[r] = !math.IsInf(float64(m.softmaxRow(p.w[r*T:(r+1)*T])), -1)
	}
	m.tiledBlend(p, live[:p.R])
}

// tiledDots scores the pass's queries by dot products, a tile at a time:
// each run of attended keys of the tile goes to scoreRun, and the masked
// keys between the runs score -Inf. General scores the whole tile, then
// masks it: it reads only its own projections (zeros for masked keys), and
// one call over every key costs less than a call per run when the runs
// are short.
func (m *Memory) tiledDots(p *tiledPass) {
	T := m.keys.rows
	k, ks, d := m.dotRows()
	_, general := m.scorer.(generalScorer)
	ninf := float32(math.Inf(-1))
	tile := multiKeys(d)
	for j0 := 0; j0 < m.valid; j0 += tile {
		j1 := min(m.valid, j0+tile)
		if m.keep == nil || general {
			m.scoreRun(p, k, ks, d, j0, j1)
			if m.keep != nil {
				for r := range p.R {
					maskScores(p.w[r*T+j0:r*T+j1], m.keep[j0:j1])
				}
			}
			continue
		}
		for i := j0; i < j1; {
			lo, hi := keptRun(m.keep[:j1], i)
			for r := range p.R {
				fillWith(p.w[r*T+i:r*T+lo], ninf)
			}
			if lo < hi {
				m.scoreRun(p, k, ks, d, lo, hi)
			}
			i = hi
		}
	}
}

// scoreRun sets the scores of keys [lo, hi) for every query of the pass,
// the rows k of width d, ks apart, through scoreGroups: the first query's
// through scoreRows unless the multi-row score streams K itself for its
// group (see multiScoreRowMajor).
func (m *Memory) scoreRun(p *tiledPass, k []float32, ks, d, lo, hi int) {
	if k == nil && m.kv != nil { // a cache's keys
		m.kv.scoreRun(p, m.keys.rows, lo, hi)
		return
	}
	scoreGroups(p, rowSpan[float32]{k[lo*ks:], ks, d, lo, hi, m.keys.rows}, oneFirstScore32(p.R, d), kernel.ScoreRows, kernel.ScoreRowsMulti)
}

// oneFirstScore32 reports whether scoreGroups takes the first of R
// queries over float32 keys of d columns through scoreRows: not where the
// multi-row score reads K in address order for the first group (see
// multiScoreRowMajor), which streams it as fast.
func oneFirstScore32(R, d int) bool { return !kernel.MultiScoreRowMajor(groupOf(R), d) }

// groupOf returns the size of the first group when n rows go in as few
// groups of at most multiRows as they fill, the sizes differing by at most
// one (ten rows as 4, 3, 3 instead of 4, 4, 1).
func groupOf(n int) int {
	groups := (n + multiRows - 1) / multiRows
	return (n + groups - 1) / groups
}

// tiledBlend sets the contexts of a pass from its weights, a tile of value
// rows at a time for every query; a query with nothing attended (live
// false) keeps a zero context, whatever the value rows hold.
func (m *Memory) tiledBlend(p *tiledPass, live []bool) {
	T, dv := m.keys.rows, m.values.cols
	clear(p.ctx)
	if dv == 0 {
		return
	}
	if tile := multiKeys(dv); tile > 0 {
		for j0 := 0; j0 < m.valid; j0 += tile {
			j1 := min(m.valid, j0+tile)
			for lo, hi := m.nextRun(j0, j1); lo < hi; lo, hi = m.nextRun(hi, j1) {
				m.blendRun(p, live, lo, hi)
			}
		}
		return
	}
	// Value rows wider than a call's budget: the one-row kernel over
	// every attended key, as Attend runs it.
	for r, ok := range live {
		if ok {
			m.blendFrom(p.ctx[r*dv:(r+1)*dv], p.w[r*T:r*T+m.valid], 0, m.keptOf(0, m.valid))
		}
	}
}

// blendRun adds the weighted value rows of keys [lo, hi), all attended,
// to the contexts of the live queries: the first one's through blendRows,
// the others' through blendRowsMulti, in groups of up to four consecutive
// live queries (blendRows again for a group of one).
func (m *Memory) blendRun(p *tiledPass, live []bool, lo, hi int) {
	T, dv := m.keys.rows, m.values.cols
	if m.kv != nil {
		m.kv.blendRun(p, live, T, lo, hi)
		return
	}
	blendGroups(p, live, rowSpan[float32]{m.values.rowsFrom(lo), m.values.stride, dv, lo, hi, T}, oneFirst32(dv), kernel.BlendRows, blendRowsMultiNow)
}

// oneFirst32 reports whether blendGroups takes the first live query of a
// float32 pass through blendRows, which streams V for the multi-row blends
// after it: not where the multi-row blend streams V itself (see
// multiBlendSplits; every group it takes is of two to four rows; measured:
// docs/performance/amd-epyc-zen4.md#the-float32-blend-a-key-stream-at-a-time-from-code-comments).
func oneFirst32(dv int) bool { return !kernel.MultiBlendSplits(2, dv) }

// blendRowsMultiNow is blendRowsMulti asking for nothing ahead: a pass
// over a memory's keys has no next call to ask for.
func blendRowsMultiNow(acc, w, v []float32, stride int, rows int) {
	kernel.BlendRowsMulti(acc, w, v, stride, rows, nil)
}

// blendRowsMultiF16Now and blendRowsMultiBF16Now are the 16-bit
// multi-row blends asking for nothing ahead, as blendRowsMultiNow.
func blendRowsMultiF16Now(acc, w []float32, v []uint16, stride int, rows int) {
	kernel.BlendRowsMultiF16(acc, w, v, stride, rows, nil)
}

func blendRowsMultiBF16Now(acc, w []float32, v []uint16, stride int, rows int) {
	kernel.BlendRowsMultiBF16(acc, w, v, stride, rows, nil)
}

func blendRowsMultiI8Now(acc, w []float32, v []int8, stride int, rows int) {
	kernel.BlendRowsMultiI8(acc, w, v, stride, rows, nil)
}

// blendGroups is Memory.blendRun for sp's keys, sp.rows their value rows.
// With oneFirst the first live query
// goes through one, as on the float32 path where the multi-row blend does
// not stream V itself (see oneFirst32); the 16-bit multi-row blend
// streams V itself (one stream of keys) and widens each element once for
// the group, so there every group takes it (see tileRowsOf).
func blendGroups[E float32 | uint16 | int8](p *tiledPass, live []bool, sp rowSpan[E], oneFirst bool,
	one func(acc, w []float32, v []E, stride int),
	multi func(acc, w []float32, v []E, stride int, rows int)) {
	v, stride, d, lo, hi, T := sp.rows, sp.stride, sp.d, sp.lo, sp.hi, sp.T
	n := hi - lo
	first := oneFirst
	for r := 0; r < len(live); {
		if !live[r] {
			r++
			continue
		}
		e := r + 1
		for e < len(live) && live[e] {
			e++
		}
		g := groupOf(e - r)
		if first || g == 1 {
			one(p.ctx[r*d:(r+1)*d], p.w[r*T+lo:r*T+hi], v, stride)
			first, r = false, r+1
			continue
		}
		s := p.s[:g*n]
		for i := range g {
			copy(s[i*n:(i+1)*n], p.w[(r+i)*T+lo:(r+i)*T+hi])
		}
		multi(p.ctx[r*d:(r+g)*d], s, v, stride, g)
		r += g
	}
}
