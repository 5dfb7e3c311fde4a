package attention

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// manyCase is an AttendMany step: a problem's memory and n queries, as a
// strided view and as the rows the oracle sees.
type manyCase struct {
	p       problem
	queries Matrix
	rows    [][]float32
}

// manyCounts are the query counts every test runs: none, one (Attend's
// own path), the tiled path (2 to 11), and the block path on either side
// of its threshold and of each block edge, with the queries past the last
// whole block on the tiled path (17, 27, 33) or in a block (28).
var manyCounts = []int{0, 1, 2, 3, 7, 8, 9, 10, 11, 12, 15, 16, 17, 27, 28, 33}

func newManyCase(t testing.TB, r *rand.Rand, kind reference.Kind, n, T, dq, dk, dv, da int) manyCase {
	p := newProblem(t, r, kind, T, dq, dk, dv, da)
	q, rows := strided(t, r, n, len(p.ref.Query), r.IntN(3), 3)
	return manyCase{p: p, queries: q, rows: rows}
}

// oracle returns the oracle's answer for every query.
func (c *manyCase) oracle() []reference.Result {
	return reference.AttendEach(c.p.ref, c.rows)
}

// check runs the case through AttendMany, with and without a weights
// buffer and with one reused Workspace, and compares every query with the
// oracle and with its own Attend call.
func (c *manyCase) check(t *testing.T, name string) {
	t.Helper()
	mem, p, err := c.p.memory(t)
	if err != nil {
		t.Fatalf("%s: NewMemory: %v", name, err)
	}
	name += c.p.src.String()
	seen := manyCase{p: p, queries: c.queries, rows: c.rows} // as the oracle sees it
	n, T, dv := len(c.rows), mem.Len(), mem.ValueDim()
	want, ws := seen.oracle(), new(Workspace)
	for _, withWeights := range []bool{true, false} {
		ctx, w := filled(n*dv, 9), []float32(nil)
		if withWeights {
			w = filled(n*T, 9)
		}
		if err := mem.AttendMany(ctx, w, c.queries, ws); err != nil {
			t.Fatalf("%s: AttendMany: %v", name, err)
		}
		for i := range n {
			what := fmt.Sprintf("%s (weights %v) query %d", name, withWeights, i)
			cw := rowOf(w, i, T)
			checkRow(t, what, ctx[i*dv:(i+1)*dv], cw, want[i])
			agreesWithAttend(t, what, mem, c.rows[i], ctx[i*dv:(i+1)*dv], cw, want[i])
		}
	}
}

func filled(n int, v float32) []float32 {
	x := make([]float32, n)
	fillWith(x, v)
	return x
}

// rowOf returns row i of T-wide rows, nil for nil.
func rowOf(x []float32, i, T int) []float32 {
	if x == nil {
		return nil
	}
	return x[i*T : (i+1)*T]
}

// checkRow compares one query's context and weights (nil: not wanted) with
// the oracle: within its bounds, and exactly +0 where the oracle's weight
// is 0 (masked keys, -Inf scores). An infinite bound is the oracle's "no
// knowledge" (a NaN or infinity inside a projection): such entries are
// left to the comparison with Attend.
func checkRow(t *testing.T, what string, ctx, w []float32, want reference.Result) {
	t.Helper()
	for j, v := range w {
		if math.IsInf(want.WeightBound[j], 1) {
			continue
		}
		if !testutil.Close(v, want.Weights[j], want.WeightBound[j]) {
			t.Fatalf("%s: weight[%d] = %v, want %v ± %g", what, j, v, want.Weights[j], want.WeightBound[j])
		}
		if want.Weights[j] == 0 && (v != 0 || math.Signbit(float64(v))) {
			t.Fatalf("%s: weight[%d] = %v, want exactly +0", what, j, v)
		}
	}
	for j, v := range ctx {
		if math.IsInf(want.CtxBound[j], 1) {
			continue
		}
		if !testutil.Close(v, want.Context[j], want.CtxBound[j]) {
			t.Fatalf("%s: ctx[%d] = %v, want %v ± %g", what, j, v, want.Context[j], want.CtxBound[j])
		}
		if want.Context[j] == 0 && want.CtxBound[j] == 0 && (v != 0 || math.Signbit(float64(v))) {
			t.Fatalf("%s: ctx[%d] = %v, want exactly +0 (nothing attended)", what, j, v)
		}
	}
}

// agreesWithAttend checks one query of AttendMany against Attend on the
// same query: both lie within the oracle's bound of the exact result, so
// they differ by at most twice that bound (so they are equal where it is
// 0, as for masked keys), and they are NaN or infinite together.
func agreesWithAttend(t *testing.T, what string, mem *Memory, q, ctx, w []float32, want reference.Result) {
	t.Helper()
	actx, aw := make([]float32, len(ctx)), []float32(nil)
	if w != nil {
		aw = make([]float32, len(w))
	}
	if err := mem.Attend(actx, aw, q, nil); err != nil {
		t.Fatalf("%s: Attend: %v", what, err)
	}
	// No t.Helper here: it walks the stack, once per element.
	agree := func(kind string, j int, got, att float32, bound float64) {
		g, a := float64(got), float64(att)
		same := g == a || g != g && a != a
		if !same && (math.IsInf(g, 0) || math.IsInf(a, 0) || g != g || a != a || math.Abs(g-a) > 2*bound) {
			t.Fatalf("%s: %s[%d] = %v, Attend gives %v (bound %g)", what, kind, j, got, att, bound)
		}
	}
	for j := range w {
		agree("weight", j, w[j], aw[j], want.WeightBound[j])
	}
	for j := range ctx {
		agree("ctx", j, ctx[j], actx[j], want.CtxBound[j])
	}
}

// Every scorer, every query count, key counts on either side of the tile
// edges of the block path and of the additive scores (tiles of 128 keys
// for rows of 64 floats), with and without masks, on every implementation.
// TestAttendManyTileEdges crosses the multi-row kernels' tiles.
func TestAttendManyMatchesReference(t *testing.T) { testAttendManyMatchesReference(t, matrices) }

func testAttendManyMatchesReference(t *testing.T, via memSources) {
	// Every query count at a few key counts; at the tile edges, the counts
	// around the block path's edges (which keeps the run short enough
	// for an emulator).
	Ts := []int{0, 1, 31, 32, 33, 127, 128, 129, 257}
	if testing.Short() {
		Ts = []int{0, 1, 33, 129}
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(51)
		i := 0
		for _, kind := range kinds {
			for _, T := range Ts {
				counts := manyCounts
				if T > 33 || T == 31 || T == 32 {
					counts = []int{3, 10, 11, 16, 17}
				}
				for _, n := range counts {
					c := newManyCase(t, r, kind, n, T, 64, 64, 48, 64)
					src, ok := via.pick(i)
					if i++; !ok {
						continue
					}
					c.p.src = src
					c.check(t, fmt.Sprintf("%s n=%d T=%d", c.p.scorer, n, T))
					if T > 0 {
						c.withMasks(r, T)
						c.check(t, fmt.Sprintf("%s n=%d T=%d masked valid=%d", c.p.scorer, n, T, c.p.ref.Valid))
					}
				}
			}
		}
	})
}

// The tiled path's multi-row kernels take tiles of at least 128 KiB of
// rows: 64 keys of 512 floats, 40 of 1000 (K and V of different widths).
// Key counts on either side of those edges, with runs of attended keys and
// groups of queries that end inside groups of eight keys, with and without
// masks.
func TestAttendManyTileEdges(t *testing.T) { testAttendManyTileEdges(t, matrices) }

func testAttendManyTileEdges(t *testing.T, via memSources) {
	Ts := []int{63, 64, 65, 129, 200}
	counts := []int{2, 5, 6, 11}
	if testing.Short() {
		Ts, counts = []int{65, 129}, []int{2, 6}
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(53)
		i := 0
		for _, kind := range kinds {
			for _, T := range Ts {
				for _, n := range counts {
					c := newManyCase(t, r, kind, n, T, 7, 512, 1000, 5)
					src, ok := via.pick(i)
					if i++; !ok {
						continue
					}
					c.p.src = src
					c.check(t, fmt.Sprintf("%s n=%d T=%d", c.p.scorer, n, T))
					c.withMasks(r, T)
					c.check(t, fmt.Sprintf("%s n=%d T=%d masked valid=%d", c.p.scorer, n, T, c.p.ref.Valid))
				}
			}
		}
	})
}

// withMasks adds a random keep-mask, with runs of kept and masked keys of
// varied lengths, and a random valid length; the masked keys and values
// hold NaN and Inf, which must never be read.
func (c *manyCase) withMasks(r *rand.Rand, T int) {
	keep := make([]bool, T)
	run, kept := 0, true
	for i := range keep {
		if run == 0 {
			run, kept = 1+r.IntN(20), !kept
		}
		keep[i], run = kept, run-1
	}
	c.p.withKeep(keep)
	c.p.withValid(T - r.IntN(T/2+1))
	for i := range keep {
		if !keep[i] || i >= c.p.ref.Valid {
			c.p.ref.Keys[i][0] = float32(math.NaN())
			c.p.ref.Values[i][0] = float32(math.Inf(1))
		}
	}
}

// Random small shapes, strides and masks.
func TestAttendManyRandomShapes(t *testing.T) { testAttendManyRandomShapes(t, matrices) }

func testAttendManyRandomShapes(t *testing.T, via memSources) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(52)
		for i := range 60 {
			kind := kinds[r.IntN(len(kinds))]
			n, T := manyCounts[r.IntN(len(manyCounts))], r.IntN(300)
			dq, dk, dv, da := 1+r.IntN(20), 1+r.IntN(70), 1+r.IntN(70), 1+r.IntN(40)
			c := newManyCase(t, r, kind, n, T, dq, dk, dv, da)
			src, ok := via.pick(i)
			if !ok {
				continue
			}
			c.p.src = src
			if T > 0 && r.IntN(2) == 0 {
				c.withMasks(r, T)
			}
			c.check(t, fmt.Sprintf("%s n=%d T=%d dk=%d dv=%d", c.p.scorer, n, T, dk, dv))
		}
	})
}
