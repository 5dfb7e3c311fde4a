package attention

import "math"

// The tiled path of AttendMany: Attend's three phases (score, softmax,
// blend) with the loops over keys and queries exchanged. The keys are cut
// into tiles small enough to stay in cache, and every query of a chunk is
// scored against a tile before the next tile is read; the blend then walks
// the value rows the same way. Each key and value row comes from memory
// once per chunk of queries, not once per query, and the arithmetic of
// each query is Attend's.
//
// It serves fewer than manyBlockMin queries (and the last such queries
// after the blocks of sixteen), where the block kernels' sixteen lanes
// would mostly idle, and the additive and concat scorers for any number:
// their cost is a tanh per key and query, which no sharing of reads
// removes, while each tile of their projected keys is still read once for
// the whole chunk.

// manyChunk is the number of queries a pass of the tiled path takes: it
// bounds the score rows kept in the workspace when no weights are wanted.
const manyChunk = 16

// manyTileBytes is about how many bytes of key (or value) rows a tile of
// the tiled path holds: the tile stays in L1 or L2 while every query of
// the chunk reads it.
const manyTileBytes = 32 << 10

// tiledKeys returns how many keys of rows of width floats make a tile.
func tiledKeys(width int) int {
	return min(1024, max(32, manyTileBytes/(4*max(1, width))))
}

// tiledPass is one pass of the tiled path over the keys: rows [i0, i0+R)
// of the queries, their score rows (the weights, or scratch) T apart.
type tiledPass struct {
	q      Matrix
	i0, R  int
	ctx, w []float32 // the chunk's contexts and score rows
	pq     []float32 // the prepared queries, P floats each
	tmp    []float32 // the scorer's scratch
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
	buf := ws.floats(c*P + m.scratch + rows)
	p := tiledPass{q: queries, pq: buf[:c*P], tmp: buf[c*P : c*P+m.scratch]}
	for i0 := 0; i0 < n; i0 += c {
		p.i0, p.R = i0, min(c, n-i0)
		p.ctx = ctx[i0*dv : (i0+p.R)*dv]
		if weights != nil {
			p.w = weights[i0*T : (i0+p.R)*T]
		} else {
			p.w = buf[c*P+m.scratch:][:p.R*T]
		}
		m.tiledRun(&p)
	}
}

// tiledRun computes the contexts and weights of one pass.
func (m *Memory) tiledRun(p *tiledPass) {
	T, P := m.keys.rows, m.scorer.prepared(m)
	for r := range p.R {
		pq, _ := m.scorer.prepare(m, p.q.Row(p.i0+r), p.tmp)
		copy(p.pq[r*P:(r+1)*P], pq)
	}
	tile := tiledKeys(max(m.keys.cols, m.projCols))
	for j0 := 0; j0 < m.valid; j0 += tile {
		j1 := min(m.valid, j0+tile)
		for r := range p.R {
			m.scoreSpan(p.w[r*T+j0:r*T+j1], j0, p.pq[r*P:(r+1)*P], p.tmp)
		}
	}
	var live [manyChunk]bool
	for r := range p.R {
		live[r] = !math.IsInf(float64(m.softmaxRow(p.w[r*T:(r+1)*T])), -1)
	}
	m.tiledBlend(p, live[:p.R])
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
	tile := tiledKeys(dv)
	for j0 := 0; j0 < m.valid; j0 += tile {
		j1 := min(m.valid, j0+tile)
		for r, ok := range live {
			if !ok {
				continue
			}
			w := p.w[r*T+j0 : r*T+j1]
			blendKept(p.ctx[r*dv:(r+1)*dv], w, m.values.rowsFrom(j0), m.values.stride, m.keptOf(j0, j1))
		}
	}
}
