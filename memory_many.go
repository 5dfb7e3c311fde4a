package attention

import (
	"fmt"
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// AttendMany runs one decoder step for each row of queries, as n calls of
// Attend would (n = queries.Rows(), each row of length QueryDim; the view
// may be strided), but reads the keys and values once for all of them:
// beam search, which steps several hypotheses against one source sequence,
// pays for one pass over the memory instead of one per beam. Query i's
// context goes to ctx[i*ValueDim() : (i+1)*ValueDim()], so ctx has length
// n·ValueDim. If weights is not nil it has length n·Len and receives query
// i's attention weights in weights[i*Len() : (i+1)*Len()]. ws may be nil,
// in which case AttendMany allocates its scratch; with a reused Workspace
// steady-state calls allocate nothing. n = 0 is valid and writes nothing.
//
// Semantics, row by row, are Attend's: masked keys get weight exactly 0
// and their keys and values are never read; a query with no key attended,
// or whose attended scores are all -Inf, gets a zero context and zero
// weights; a NaN propagates, and a +Inf score makes that query's weights
// and context NaN. The results agree with n calls of Attend within the
// error bounds of each (the sums run in another order). A query's results
// do not depend on what the other queries hold, nor on the Workspace.
//
// Aliasing: ctx and weights must not share an element with each other, with
// the queries, or with any view the Memory holds; the queries may share
// elements with any input. Such calls return an error wrapping ErrArgument
// naming the two operands that meet. Lengths that do not fit return an
// error wrapping ErrShape. On any error ctx and weights are left untouched.
func (m *Memory) AttendMany(ctx, weights []float32, queries Matrix, ws *Workspace) error {
	if err := m.checkMany(ctx, weights, queries); err != nil {
		return err
	}
	if len(ctx) == 0 && len(weights) == 0 {
		// Nothing to write, and nothing sized by a row count that no
		// element backs: past here ctx or weights backs n, and values
		// or weights back T.
		return nil
	}
	if ws == nil {
		ws = new(Workspace)
	}
	switch n := queries.rows; {
	case n == 1:
		tmp, w := ws.buffers(m.scratch, m.keys.rows, weights)
		m.attend(ctx, w, queries.Row(0), tmp)
	case n >= manyBlockMin && m.blockable():
		m.attendSplit(ctx, weights, queries, ws)
	default:
		m.attendTiled(ctx, weights, queries, ws)
	}
	m.scaleContexts(ctx)
	return nil
}

// manyBlockMin is the number of queries from which a block of sixteen
// lanes costs less than the tiled path. The block kernels do the work of
// sixteen queries whatever the number in the block, and on an AVX2 core
// that work takes about as long as twelve queries through the tiled path
// (measured: docs/performance/amd-epyc-zen5.md#attendmanys-block-path-from-12-queries-from-code-comments).
const manyBlockMin = 12

// attendSplit runs the queries in blocks of sixteen on the block path, the
// last block with them if it has at least manyBlockMin queries, else
// those on the tiled path.
func (m *Memory) attendSplit(ctx, weights []float32, queries Matrix, ws *Workspace) {
	n, T, dv := queries.rows, m.keys.rows, m.values.cols
	nb := n
	if rest := n % kernel.BlockRows; rest < manyBlockMin {
		nb = n - rest
	}
	m.attendBlocks(ctx[:nb*dv], rowsOf(weights, 0, nb, T), queries.rowRange(0, nb), ws)
	if nb < n {
		m.attendTiled(ctx[nb*dv:], rowsOf(weights, nb, n, T), queries.rowRange(nb, n), ws)
	}
}

// rowsOf returns rows [i0, i1) of x, rows of T floats; nil for nil.
func rowsOf(x []float32, i0, i1, T int) []float32 {
	if x == nil {
		return nil
	}
	return x[i0*T : i1*T]
}

// checkMany checks the shapes of AttendMany's operands, then that the
// outputs share no element with each other, the queries or the Memory's
// views.
func (m *Memory) checkMany(ctx, weights []float32, queries Matrix) error {
	const op = "AttendMany"
	if queries.cols != m.dq {
		return shapeErr(op, "queries.Cols", queries.cols, m.dq, "query dimension")
	}
	n := queries.rows
	if err := checkLen(op, "len(ctx)", len(ctx), n, m.values.cols, "queries.Rows × value dimension"); err != nil {
		return err
	}
	if weights != nil {
		if err := checkLen(op, "len(weights)", len(weights), n, m.keys.rows, "queries.Rows × number of keys"); err != nil {
			return err
		}
	}
	switch {
	case overlaps(ctx, weights):
		return argErr(op, "ctx and weights overlap")
	case queries.meets(ctx):
		return argErr(op, "ctx and queries overlap")
	case queries.meets(weights):
		return argErr(op, "weights and queries overlap")
	}
	return m.checkViews(op, ctx, weights)
}

// checkLen checks that got is a·b. A product that overflows an int is the
// length of no slice.
func checkLen(op, what string, got, a, b int, why string) error {
	if b != 0 && a > math.MaxInt/b {
		return fmt.Errorf("%w: %s: %s = %d, want %d×%d (%s), which overflows int", ErrShape, op, what, got, a, b, why)
	}
	if got != a*b {
		return shapeErr(op, what, got, a*b, why)
	}
	return nil
}

// nextRun returns the first run [lo, hi) of attended keys in [i, end):
// all of it without a keep-mask; lo = hi = end if no key there is kept.
func (m *Memory) nextRun(i, end int) (lo, hi int) {
	if m.keep == nil {
		return i, end
	}
	return keptRun(m.keep[:end], i)
}

// keptOf returns the keep-mask of keys [j0, j1), nil without one.
func (m *Memory) keptOf(j0, j1 int) []bool {
	if m.keep == nil {
		return nil
	}
	return m.keep[j0:j1]
}
