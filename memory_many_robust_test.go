package attention

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// NaN and infinities in the queries, keys and values, and scores of -Inf
// and +Inf, on one query or on all of them, against the oracle, on both
// paths; 150 keys make two tiles.
func TestAttendManyNonFinite(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(53)
		for _, kind := range kinds {
			for _, n := range []int{2, 3, 9, 17} {
				for where := range 5 {
					c := newManyCase(t, r, kind, n, 150, 8, 8, 6, 5)
					what := c.poison(where)
					c.check(t, fmt.Sprintf("%s n=%d %s", c.p.scorer, n, what))
				}
			}
		}
	})
}

// poison puts non-finite values into case c, in one of five ways, and
// says which.
func (c *manyCase) poison(where int) string {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	switch where {
	case 0:
		c.rows[1][0] = nan
		return "NaN in query 1"
	case 1:
		c.p.ref.Keys[7][1] = nan
		return "NaN in key 7"
	case 2:
		c.p.ref.Values[9][2] = inf
		return "+Inf in value 9"
	case 3:
		// Every score -Inf (zeros), +Inf or NaN (0·-Inf), by the sign of
		// the query's first component.
		for _, k := range c.p.ref.Keys {
			k[0] = -inf
		}
		for i, q := range c.rows {
			q[0] = [3]float32{1, -1, 0}[i%3]
		}
		return "scores -Inf, +Inf or NaN"
	}
	// The first tile scores -Inf, and one of its values is +Inf: 0·Inf
	// makes that column NaN, as in Attend.
	for _, k := range c.p.ref.Keys[:128] {
		k[0] = -inf
	}
	for _, q := range c.rows {
		q[0] = 1
	}
	c.p.ref.Values[5][1] = inf
	return "a tile of -Inf scores with an infinite value"
}

// Zero key, value, query and score dimensions, no keys and no queries, in
// padded views, through every scorer: each works and matches the oracle,
// or returns the scorer's typed error; none panics.
func TestAttendManyZeroSizes(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(54)
		for _, kind := range kinds {
			for _, T := range []int{0, 1, 9} {
				for _, dk := range []int{0, 3} {
					for _, dv := range []int{0, 2} {
						for _, dq := range []int{0, 2} {
							for _, da := range []int{0, 2} {
								if isDot(kind) && (dq != dk || da != 0) || kind == reference.KindGeneral && da != 0 {
									continue // dq and da do not apply
								}
								for _, n := range []int{0, 1, 3, 9} {
									name := fmt.Sprintf("%s T=%d dq=%d dk=%d dv=%d da=%d n=%d", kindName(kind), T, dq, dk, dv, da, n)
									noPanic(t, name, func() { zeroManyCase(t, r, name, kind, n, [5]int{T, dq, dk, dv, da}) })
								}
							}
						}
					}
				}
			}
		}
	})
}

// zeroManyCase checks one case of TestAttendManyZeroSizes; dims holds T,
// dq, dk, dv and da.
func zeroManyCase(t *testing.T, r *rand.Rand, name string, kind reference.Kind, n int, dims [5]int) {
	T, dq, dk, dv, da := dims[0], dims[1], dims[2], dims[3], dims[4]
	p, err := sizedProblem(t, r, kind, T, dq, dk, dv, da, 2)
	noScorer := kind == reference.KindGeneral && dq == 0 || (kind == reference.KindAdditive || kind == reference.KindConcat) && da == 0
	if noScorer || err != nil {
		if !noScorer || !errors.Is(err, ErrArgument) {
			t.Fatalf("%s: scorer err = %v", name, err)
		}
		return
	}
	if T > 0 {
		p.withKeep([]bool{true, false, true, true, false, true, true, true, false}[:T])
	}
	if kind == reference.KindConcat && dq == 0 {
		return // no query columns: NewMemory refuses it (see TestMemoryZeroSizes)
	}
	q, rows := strided(t, r, n, dq, 2, 3)
	c := manyCase{p: p, queries: q, rows: rows}
	c.check(t, name)
}

// Query counts that no element backs are accepted and cost nothing: with
// neither contexts nor weights to write, AttendMany returns at once.
func TestAttendManyHugeEmptyDims(t *testing.T) {
	keys := mustMatrix(t, 3, 0, nil)
	mem, err := NewMemory(ScoreDot(), keys, mustMatrix(t, 3, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	noKeys, err := NewMemory(ScoreDot(), Matrix{}, mustMatrix(t, 0, 2, nil))
	if err != nil {
		t.Fatal(err)
	}
	huge := mustMatrix(t, math.MaxInt, 0, nil)
	ws := new(Workspace)
	noPanic(t, "huge query counts", func() {
		allocs := testing.AllocsPerRun(10, func() {
			if err := mem.AttendMany(nil, nil, huge, ws); err != nil {
				t.Fatal(err)
			}
			if err := noKeys.AttendMany(nil, []float32{}, mustMatrix(t, 0, 0, nil), ws); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 || cap(ws.buf) != 0 {
			t.Fatalf("%v allocations, workspace of %d floats: want none", allocs, cap(ws.buf))
		}
	})
	// n·dv beyond an int is the length of no slice.
	wide, _ := NewMemory(ScoreDot(), keys, mustMatrix(t, 3, 2, make([]float32, 6)))
	if err := wide.AttendMany(make([]float32, 2), nil, huge, nil); !errors.Is(err, ErrShape) {
		t.Fatalf("%d queries of 2 context floats: err = %v, want ErrShape", math.MaxInt, err)
	}
}

// A steady-state call with a reused Workspace allocates nothing, on both
// paths, with and without weights, under a keep-mask.
func TestAttendManyAllocatesNothing(t *testing.T) {
	r := testutil.Rand(55)
	for _, kind := range kinds {
		for _, n := range []int{1, 3, 9, 33} {
			c := newManyCase(t, r, kind, n, 300, 32, 64, 48, 16)
			keep := make([]bool, 300)
			for i := range keep {
				keep[i] = i%5 != 0
			}
			c.p.withKeep(keep)
			mem, err := NewMemory(c.p.scorer, c.p.keys, c.p.values, c.p.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ws, ctx, w := new(Workspace), make([]float32, n*48), make([]float32, n*300)
			for _, wbuf := range [][]float32{w, nil} {
				mem.AttendMany(ctx, wbuf, c.queries, ws)
				if a := testing.AllocsPerRun(20, func() { mem.AttendMany(ctx, wbuf, c.queries, ws) }); a != 0 {
					t.Errorf("%s n=%d (weights %v): %v allocations per AttendMany, want 0", c.p.scorer, n, wbuf != nil, a)
				}
			}
		}
	}
}

// A query's results are the same bits whatever the other queries hold and
// wherever it sits among the queries its path takes together: on the
// tiled path, in another group of the multi-row kernels (of three, two or
// one rows against the first group's four), with keys left over past the
// last whole group of eight (T = 203); in the block of sixteen of 17
// queries.
func TestAttendManyQueriesIndependent(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(56)
		for _, kind := range kinds {
			for _, c := range []struct{ n, to int }{{3, 2}, {7, 6}, {6, 5}, {9, 8}, {17, 15}} {
				mc := newManyCase(t, r, kind, c.n, 203, 12, 12, 10, 6)
				mem, err := NewMemory(mc.p.scorer, mc.p.keys, mc.p.values)
				if err != nil {
					t.Fatal(err)
				}
				run := func() ([]float32, []float32) {
					ctx, w := make([]float32, c.n*10), make([]float32, c.n*203)
					if err := mem.AttendMany(ctx, w, mc.queries, nil); err != nil {
						t.Fatal(err)
					}
					return ctx, w
				}
				ctx, w := run()
				// Query 0 moves to row c.to; every other query changes.
				copy(mc.rows[c.to], mc.rows[0])
				for i, q := range mc.rows {
					if i != c.to {
						copy(q, testutil.Floats(r, len(q), 3))
					}
				}
				ctx2, w2 := run()
				what := fmt.Sprintf("%s n=%d", mc.p.scorer, c.n)
				testutil.Identical(t, what+": ctx", ctx2[c.to*10:(c.to+1)*10], ctx[:10])
				testutil.Identical(t, what+": weights", w2[c.to*203:(c.to+1)*203], w[:203])
			}
		}
	})
}

// Wrong shapes give a ShapeError naming the operand, and nothing is
// written.
func TestAttendManyShapeErrors(t *testing.T) {
	keys := mustMatrix(t, 3, 4, make([]float32, 12))
	mem, err := NewMemory(ScoreDot(), keys, mustMatrix(t, 3, 2, make([]float32, 6)))
	if err != nil {
		t.Fatal(err)
	}
	q2 := mustMatrix(t, 2, 4, make([]float32, 8))
	for _, c := range []struct {
		what      string
		ctx, w    []float32
		q         Matrix
		got, want int
	}{
		{"queries.Cols", make([]float32, 4), nil, mustMatrix(t, 2, 3, make([]float32, 6)), 3, 4},
		{"len(ctx)", make([]float32, 3), nil, q2, 3, 4},
		{"len(weights)", make([]float32, 4), make([]float32, 5), q2, 5, 6},
		{"len(weights)", make([]float32, 4), []float32{}, q2, 0, 6},
	} {
		before := append([]float32{}, c.ctx...)
		fillWith(c.ctx, 7)
		err := mem.AttendMany(c.ctx, c.w, c.q, nil)
		var se *ShapeError
		if !errors.Is(err, ErrShape) || !errors.As(err, &se) || se.What != c.what || se.Got != c.got || se.Want != c.want {
			t.Errorf("%s: err = %v, want a ShapeError on %s %d vs %d", c.what, err, c.what, c.got, c.want)
		}
		for i := range before {
			if c.ctx[i] != 7 {
				t.Errorf("%s: ctx changed on error", c.what)
			}
		}
	}
}

// The outputs may not share memory with the queries, each other or the
// Memory's views: AttendMany says which two meet and writes nothing.
// Outputs in the padding between query rows, and queries that are key
// rows, are fine.
func TestAttendManyRejectsOverlap(t *testing.T) {
	r := testutil.Rand(57)
	const T, d = 4, 3
	kdata := testutil.Floats(r, (T-1)*5+d, 1) // stride 5
	vdata := testutil.Floats(r, 16, 1)        // one value column, in the first T
	keys, _ := NewMatrixStrided(T, d, 5, kdata)
	wdata, udata := testutil.Floats(r, 2*d, 0.5), testutil.Floats(r, 2*d, 0.5)
	add, _ := ScoreAdditive(mustMatrix(t, 2, d, wdata), mustMatrix(t, 2, d, udata), []float32{1, -1})
	dot, _ := NewMemory(ScoreDot(), keys, mustMatrix(t, T, 1, vdata[:T]))
	additive, _ := NewMemory(add, keys, mustMatrix(t, T, 1, vdata[:T]))
	qdata := testutil.Floats(r, 16, 1)
	queries, _ := NewMatrixStrided(2, d, 5, qdata[:5+d]) // two queries, stride 5
	keyRows, _ := NewMatrixStrided(2, d, 5, kdata)
	buf := testutil.Floats(r, 32, 1)
	fresh := func(n int) []float32 { return testutil.Floats(r, n, 1) }
	for _, c := range []manyOverlap{
		{"ctx on a query row", dot, qdata[6:8], nil, queries, []string{"ctx", "queries"}},
		{"weights from the padding into a query row", dot, fresh(2), qdata[3:11], queries, []string{"weights", "queries"}},
		{"ctx meets weights", dot, buf[0:2], buf[1:9], queries, []string{"ctx", "weights"}},
		{"ctx on a key row", dot, kdata[5:7], nil, queries, []string{"ctx", "keys"}},
		{"weights on value rows", dot, fresh(2), vdata[3:11], queries, []string{"weights", "values"}},
		{"ctx on the scorer's U", additive, udata[2:4], nil, queries, []string{"ctx", "U"}},
		{"ctx in the padding of the queries", dot, qdata[3:5], fresh(2 * T), queries, nil},
		{"queries are key rows", dot, fresh(2), fresh(2 * T), keyRows, nil},
	} {
		c.check(t)
	}
}

// manyOverlap is a case of TestAttendManyRejectsOverlap.
type manyOverlap struct {
	name   string
	mem    *Memory
	ctx, w []float32
	q      Matrix
	want   []string // the two operands named, nil for no error
}

// check runs the case: an error naming both operands and nothing written,
// or for want nil, the bits that fresh outputs get.
func (c manyOverlap) check(t *testing.T) {
	t.Helper()
	ctxBefore, wBefore := append([]float32{}, c.ctx...), append([]float32{}, c.w...)
	err := c.mem.AttendMany(c.ctx, c.w, c.q, nil)
	if c.want == nil {
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			return
		}
		// The same step into fresh outputs gives the same bits.
		ctx, w := make([]float32, len(c.ctx)), make([]float32, len(c.w))
		if err := c.mem.AttendMany(ctx, w, c.q, nil); err != nil {
			t.Fatal(err)
		}
		testutil.Identical(t, c.name+": ctx", c.ctx, ctx)
		testutil.Identical(t, c.name+": weights", c.w, w)
		return
	}
	if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), c.want[0]) || !strings.Contains(err.Error(), c.want[1]) {
		t.Errorf("%s: err = %v, want ErrArgument naming %s and %s", c.name, err, c.want[0], c.want[1])
		return
	}
	testutil.Identical(t, c.name+": ctx on error", c.ctx, ctxBefore)
	testutil.Identical(t, c.name+": weights on error", c.w, wBefore)
}
