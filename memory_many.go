package attention

import (
	"fmt"
	"math"
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
// error bounds of each (the sums run in another order), and are the same
// bits for any Workspace and whatever the other queries hold.
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
		m.attendBlocks(ctx, weights, queries, ws)
	default:
		m.attendTiled(ctx, weights, queries, ws)
	}
	return nil
}

// manyBlockMin is the number of queries from which AttendMany runs the
// block kernels: below it, most of a block's sixteen lanes would idle and
// the row kernels cost less (as for Batched).
const manyBlockMin = 8

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
