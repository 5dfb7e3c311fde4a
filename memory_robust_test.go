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

// noPanic runs f and fails the test, instead of crashing it, if f panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", what, r)
		}
	}()
	f()
}

// A view with no elements applies no stride: every row of a zero-width
// view is the empty slice, whatever stride it was made with and however
// many rows it has.
func TestMatrixZeroSizeViews(t *testing.T) {
	data := make([]float32, 24)
	for _, c := range []struct{ rows, cols, stride int }{
		{3, 0, 5}, {3, 0, 0}, {0, 4, 7}, {0, 0, 9},
		{math.MaxInt, 0, 1}, {math.MaxInt, 0, math.MaxInt},
	} {
		what := fmt.Sprintf("NewMatrixStrided(%d, %d, %d)", c.rows, c.cols, c.stride)
		noPanic(t, what, func() {
			m, err := NewMatrixStrided(c.rows, c.cols, c.stride, data)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, i := range []int{0, 1, c.rows / 2, c.rows - 1} {
				if i < 0 || i >= c.rows {
					continue
				}
				if r := m.Row(i); len(r) != 0 {
					t.Fatalf("%s: Row(%d) has %d elements", what, i, len(r))
				}
				if r := m.rowsFrom(i); len(r) != 0 {
					t.Fatalf("%s: rowsFrom(%d) has %d elements", what, i, len(r))
				}
			}
			if m.Rows() != c.rows || m.Cols() != c.cols || m.Stride() != c.cols {
				t.Fatalf("%s: got %d×%d stride %d, want %d×%d stride %d (packed: no element, no stride)",
					what, m.Rows(), m.Cols(), m.Stride(), c.rows, c.cols, c.cols)
			}
		})
	}
	// A zero-width column range of a padded matrix is such a view too.
	m, _ := NewMatrixStrided(3, 4, 7, make([]float32, 18))
	for _, j := range []int{0, 2, 4} {
		noPanic(t, fmt.Sprintf("colsFrom(%d, 0)", j), func() {
			c := m.colsFrom(j, 0)
			for i := range c.Rows() {
				if len(c.Row(i)) != 0 {
					t.Fatalf("colsFrom(%d, 0).Row(%d) is not empty", j, i)
				}
			}
		})
	}
	// The reach of a view is checked without wrapping: a single row
	// needs only its columns, however large the stride.
	if v, err := NewMatrixStrided(1, 2, math.MaxInt, make([]float32, 2)); err != nil || v.Row(0)[1] != 0 {
		t.Errorf("one row of stride MaxInt: %v", err)
	}
	if _, err := NewMatrixStrided(3, 2, math.MaxInt/2, make([]float32, 8)); !errors.Is(err, ErrArgument) {
		t.Errorf("three rows of stride MaxInt/2: err = %v, want ErrArgument (overflow)", err)
	}
}

// sizedProblem is newProblem with every dimension chosen, zero included,
// and pad floats of padding after every row of every matrix.
func sizedProblem(t *testing.T, r *rand.Rand, kind reference.Kind, T, dq, dk, dv, da, pad int) (problem, error) {
	var p problem
	p.ref.Kind = kind
	p.keys, p.ref.Keys = strided(t, r, T, dk, pad, 1)
	p.values, p.ref.Values = strided(t, r, T, dv, pad, 2)
	p.ref.Valid, p.ref.DV = T, dv
	mat := func(rows, cols int) (Matrix, [][]float32) { return strided(t, r, rows, cols, pad, 0.5) }
	err := p.withScorer(kind, dq, dk, da, mat, func(n int) []float32 { return testutil.Floats(r, n, 1) })
	p.ref.Query = testutil.Floats(r, dq, 3)
	return p, err
}

func isDot(k reference.Kind) bool {
	return k == reference.KindDot || k == reference.KindScaledDot || k == reference.KindDotScale
}

// Zero key, value, query and score dimensions, in padded views, through
// every scorer: each either works and matches the oracle or, where the
// scorer cannot exist, returns its typed error; none panics.
func TestMemoryZeroSizes(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(31)
		for _, kind := range kinds {
			for _, T := range []int{0, 1, 3, 9} {
				for _, dk := range []int{0, 3} {
					for _, dv := range []int{0, 2} {
						for _, dq := range []int{0, 2} {
							for _, da := range []int{0, 2} {
								if isDot(kind) && (dq != dk || da != 0) || kind == reference.KindGeneral && da != 0 {
									continue // dq and da do not apply
								}
								for _, pad := range []int{0, 3} {
									for _, masked := range []bool{false, true} {
										name := fmt.Sprintf("%s T=%d dq=%d dk=%d dv=%d da=%d pad=%d masked=%v", kindName(kind), T, dq, dk, dv, da, pad, masked)
										noPanic(t, name, func() { zeroSizeCase(t, r, name, kind, T, dq, dk, dv, da, pad, masked) })
									}
								}
							}
						}
					}
				}
			}
		}
	})
}

func zeroSizeCase(t *testing.T, r *rand.Rand, name string, kind reference.Kind, T, dq, dk, dv, da, pad int, masked bool) {
	p, err := sizedProblem(t, r, kind, T, dq, dk, dv, da, pad)
	// Which sizes have no scorer: general needs a query dimension (W has
	// a row per query component), additive and concat a score dimension
	// (v is not empty); concat needs query columns besides the key ones.
	wantErr := error(nil)
	switch {
	case kind == reference.KindGeneral && dq == 0,
		(kind == reference.KindAdditive || kind == reference.KindConcat) && da == 0:
		wantErr = ErrArgument
	}
	if wantErr != nil || err != nil {
		if !errors.Is(err, wantErr) || wantErr == nil {
			t.Fatalf("%s: scorer err = %v, want %v", name, err, wantErr)
		}
		return
	}
	if masked && T > 0 {
		keep := make([]bool, T)
		for i := range keep {
			keep[i] = i%3 != 1
		}
		p.withKeep(keep)
		p.withValid(T - T/3)
	}
	if kind == reference.KindConcat && dq == 0 {
		if _, err := NewMemory(p.scorer, p.keys, p.values, p.opts...); !errors.Is(err, ErrShape) {
			t.Fatalf("%s: NewMemory err = %v, want ErrShape (no query columns)", name, err)
		}
		return
	}
	p.check(t, name)
}

// Dimensions that no element backs (any number of rows of no columns) are
// accepted, and neither NewMemory nor Attend allocates or loops in
// proportion to them.
func TestMemoryHugeEmptyDims(t *testing.T) {
	const big = math.MaxInt
	empty := mustMatrix(t, big, 0, nil)
	few, _ := NewMatrixStrided(5, 0, 3, make([]float32, 4))
	w23 := mustMatrix(t, 2, 3, []float32{1, 2, 3, 4, 5, 6})
	u20 := mustMatrix(t, 2, 0, nil)
	v := []float32{0.5, -1}
	wide := mustMatrix(t, big, 0, nil)
	gen3, _ := ScoreGeneral(mustMatrix(t, 3, 0, nil))
	genBig, _ := ScoreGeneral(wide)
	add, _ := ScoreAdditive(w23, u20, v)
	cat, _ := ScoreConcat(w23, v)
	cases := []struct {
		name       string
		s          Scorer
		keys, vals Matrix
		dq         int
		opts       []MemoryOption
	}{
		{"dot, MaxInt empty keys", ScoreDot(), empty, empty, 0, nil},
		{"scaled dot, MaxInt empty keys, valid 7", ScoreScaledDot(), empty, empty, 0, []MemoryOption{WithValidLength(7)}},
		{"general 3×0, MaxInt empty keys", gen3, empty, empty, 3, nil},
		{"additive, MaxInt empty keys", add, empty, empty, 3, nil},
		{"concat, MaxInt empty keys", cat, empty, empty, 3, nil},
		{"general MaxInt×0, 5 empty keys", genBig, few, few, big, nil},
	}
	for _, c := range cases {
		noPanic(t, c.name, func() {
			mem, err := NewMemory(c.s, c.keys, c.vals, c.opts...)
			if err != nil {
				t.Fatalf("%s: NewMemory: %v", c.name, err)
			}
			if c.dq == big {
				var se *ShapeError
				if err := mem.Attend([]float32{}, nil, make([]float32, 2), nil); !errors.As(err, &se) || se.Want != big {
					t.Fatalf("%s: Attend with a short query: err = %v, want a ShapeError wanting %d", c.name, err, big)
				}
				return
			}
			// Nothing to write, so nothing to compute: not even the
			// Workspace that ws = nil would otherwise make.
			q := make([]float32, c.dq)
			if n := testing.AllocsPerRun(10, func() {
				if err := mem.Attend([]float32{}, nil, q, nil); err != nil {
					t.Fatalf("%s: Attend: %v", c.name, err)
				}
			}); n != 0 {
				t.Errorf("%s: Attend with nothing to write made %v allocations, want 0", c.name, n)
			}
		})
	}
}

// Projections whose size overflows, or exceeds what any Go heap can hold,
// are an error, not a panic or a wrapped size. The rows are backed, but
// untouched: make of zeros maps pages lazily.
func TestMemoryProjectionTooLarge(t *testing.T) {
	T, R := 1<<24, 1<<23 // 2^47 floats of projections
	if math.MaxInt == math.MaxInt32 {
		T, R = 1<<15, 1<<16 // 2^31 floats: overflows int
	}
	keys := mustMatrix(t, T, 1, make([]float32, T))
	vals := mustMatrix(t, T, 0, nil)
	w := mustMatrix(t, R, 1, make([]float32, R))
	gen, _ := ScoreGeneral(w)
	add, _ := ScoreAdditive(mustMatrix(t, R, 0, nil), w, make([]float32, R))
	for _, s := range []Scorer{gen, add} {
		noPanic(t, s.String(), func() {
			if _, err := NewMemory(s, keys, vals); !errors.Is(err, ErrArgument) {
				t.Errorf("%s: %d keys × %d projections: err = %v, want ErrArgument", s, T, R, err)
			}
		})
	}
}

// Attend's outputs may not share memory with its inputs or with each
// other: it says which two meet and writes nothing. Slices that only
// touch, an output in the padding between the rows of a view, and a query
// that is a key row are fine.
func TestAttendRejectsOverlap(t *testing.T) {
	r := testutil.Rand(33)
	const T, d = 4, 3
	kdata := testutil.Floats(r, (T-1)*5+d, 1) // stride 5: two floats of padding a row
	vdata := testutil.Floats(r, T*d, 1)
	keys, _ := NewMatrixStrided(T, d, 5, kdata)
	vals := mustMatrix(t, T, d, vdata)
	wdata, udata := testutil.Floats(r, 2*d, 0.5), testutil.Floats(r, 2*d, 0.5)
	vbuf := testutil.Floats(r, 8, 1)
	add, _ := ScoreAdditive(mustMatrix(t, 2, d, wdata), mustMatrix(t, 2, d, udata), vbuf[2:4])
	dot, _ := NewMemory(ScoreDot(), keys, vals)
	additive, _ := NewMemory(add, keys, vals)
	narrow, _ := NewMemory(ScoreDot(), keys, mustMatrix(t, T, 2, testutil.Floats(r, 2*T, 1)))

	buf := testutil.Floats(r, 32, 1)
	fresh := func(n int) []float32 { return testutil.Floats(r, n, 1) }
	cases := []struct {
		name      string
		mem       *Memory
		ctx, w, q []float32
		want      []string // the two operands named, nil for no error
	}{
		{"ctx is query", dot, buf[0:3], nil, buf[0:3], []string{"ctx", "query"}},
		{"ctx meets query", dot, buf[0:3], fresh(T), buf[2:5], []string{"ctx", "query"}},
		{"weights meet query", dot, fresh(d), buf[3:7], buf[6:9], []string{"weights", "query"}},
		{"ctx meets weights", dot, buf[0:3], buf[2:6], fresh(d), []string{"ctx", "weights"}},
		{"ctx on a key row", dot, kdata[5:8], nil, fresh(d), []string{"ctx", "keys"}},
		{"ctx from a key row into the padding", dot, kdata[7:10], nil, fresh(d), []string{"ctx", "keys"}},
		{"ctx from the padding into a key row", dot, kdata[3:6], nil, fresh(d), []string{"ctx", "keys"}},
		{"weights on value rows", dot, fresh(d), vdata[4:8], fresh(d), []string{"weights", "values"}},
		{"ctx on the scorer's W", additive, wdata[1:4], nil, fresh(d), []string{"ctx", "W"}},
		{"ctx on the scorer's U", additive, udata[3:6], nil, fresh(d), []string{"ctx", "U"}},
		{"weights on the scorer's v", additive, fresh(d), vbuf[3:7], fresh(d), []string{"weights", "v"}},
		{"ctx touches query", dot, buf[0:3], nil, buf[3:6], nil},
		{"ctx touches weights", dot, buf[0:3], buf[3:7], fresh(d), nil},
		{"query is a key row", dot, fresh(d), nil, kdata[5:8], nil},
		{"ctx in the padding of the keys", narrow, kdata[8:10], fresh(T), fresh(d), nil},
	}
	for _, c := range cases {
		ctxBefore, wBefore, qBefore := append([]float32{}, c.ctx...), append([]float32{}, c.w...), append([]float32{}, c.q...)
		err := c.mem.Attend(c.ctx, c.w, c.q, nil)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			// The same step into fresh outputs gives the same bits.
			ctx, w := make([]float32, len(c.ctx)), make([]float32, c.mem.Len())
			if err := c.mem.Attend(ctx, w, qBefore, nil); err != nil {
				t.Fatal(err)
			}
			testutil.Identical(t, c.name+": ctx", c.ctx, ctx)
			if c.w != nil {
				testutil.Identical(t, c.name+": weights", c.w, w)
			}
			continue
		}
		if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), c.want[0]) || !strings.Contains(err.Error(), c.want[1]) {
			t.Errorf("%s: err = %v, want ErrArgument naming %s and %s", c.name, err, c.want[0], c.want[1])
			continue
		}
		testutil.Identical(t, c.name+": ctx on error", c.ctx, ctxBefore)
		testutil.Identical(t, c.name+": weights on error", c.w, wBefore)
		testutil.Identical(t, c.name+": query on error", c.q, qBefore)
	}
}
