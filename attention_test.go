package attention

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// The worked examples of the seed texts, exactly.
func TestSeedExamples(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		w := make([]float32, 3)
		Softmax(w, []float32{2, 1, 0})
		for i, want := range []string{"0.665", "0.245", "0.090"} {
			if got := fmt.Sprintf("%.3f", w[i]); got != want {
				t.Errorf("softmax([2 1 0])[%d] = %s, want %s", i, got, want)
			}
		}
		if s := w[0] + w[1] + w[2]; math.Abs(float64(s)-1) > 3*reference.U {
			t.Errorf("weights sum to %v", s)
		}

		// Scores [2,1,0] from a dot scorer, values [4,2,0]: context 3.15.
		keys := mustMatrix(t, 3, 1, []float32{2, 1, 0})
		vals := mustMatrix(t, 3, 1, []float32{4, 2, 0})
		mem, err := NewMemory(ScoreDot(), keys, vals)
		if err != nil {
			t.Fatal(err)
		}
		ctx, weights := make([]float32, 1), make([]float32, 3)
		if err := mem.Attend(ctx, weights, []float32{1}, nil); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%.2f", ctx[0]); got != "3.15" {
			t.Errorf("context = %s, want 3.15", got)
		}
		if got := fmt.Sprintf("%.3f %.3f %.3f", weights[0], weights[1], weights[2]); got != "0.665 0.245 0.090" {
			t.Errorf("weights = %s", got)
		}

		Softmax(w, []float32{0.3, 2.1, 0.5})
		if got := fmt.Sprintf("%.2f %.2f %.2f", w[0], w[1], w[2]); got != "0.12 0.73 0.15" {
			t.Errorf("softmax([0.3 2.1 0.5]) = %s, want 0.12 0.73 0.15", got)
		}
	})
}

func mustMatrix(t testing.TB, rows, cols int, data []float32) Matrix {
	t.Helper()
	m, err := NewMatrix(rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// problem is a random decoder step for one scorer kind, in both the
// engine's form and the oracle's.
type problem struct {
	ref    reference.Problem
	scorer Scorer
	keys   Matrix
	values Matrix
	opts   []MemoryOption
	src    memSource // where the Memory reads the keys and values from
}

var kinds = []reference.Kind{
	reference.KindDot, reference.KindScaledDot, reference.KindDotScale,
	reference.KindGeneral, reference.KindAdditive, reference.KindConcat,
}

// strided lays rows out with padding pad after each row and returns the
// matrix and the rows as the oracle sees them.
func strided(t testing.TB, r *rand.Rand, rows, cols, pad int, scale float32) (Matrix, [][]float32) {
	stride := cols + pad
	data := testutil.Floats(r, rows*stride, scale)
	m, err := NewMatrixStrided(rows, cols, stride, data)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, rows)
	for i := range out {
		out[i] = data[i*stride : i*stride+cols]
	}
	return m, out
}

func newProblem(t testing.TB, r *rand.Rand, kind reference.Kind, T, dq, dk, dv, da int) problem {
	var p problem
	p.ref.Kind = kind
	pad := r.IntN(3)
	p.keys, p.ref.Keys = strided(t, r, T, dk, pad, 1)
	p.values, p.ref.Values = strided(t, r, T, dv, r.IntN(3), 2)
	p.ref.Valid = T
	p.ref.DV = dv
	if isDot(kind) {
		dq = dk
	}
	pads := []int{pad, 1, 0, 2}
	mat := func(rows, cols int) (Matrix, [][]float32) {
		pad, pads = pads[0], pads[1:]
		return strided(t, r, rows, cols, pad, 0.5)
	}
	err := p.withScorer(kind, dq, dk, da, mat, func(n int) []float32 { return testutil.Floats(r, n, 1) })
	if err != nil {
		t.Fatal(err)
	}
	p.ref.Query = testutil.Floats(r, dq, 3)
	return p
}

// withScorer sets the scorer of the given kind, with the matrices (made by
// mat) and the vector v (made by vec) it needs, in both forms. The dot
// scorers need dq = dk.
func (p *problem) withScorer(kind reference.Kind, dq, dk, da int, mat func(rows, cols int) (Matrix, [][]float32), vec func(n int) []float32) error {
	var err error
	switch kind {
	case reference.KindDot:
		p.scorer = ScoreDot()
	case reference.KindScaledDot:
		p.scorer = ScoreScaledDot()
	case reference.KindDotScale:
		p.ref.Scale = 0.375
		p.scorer, err = ScoreDotWithScale(0.375)
	case reference.KindGeneral:
		var w Matrix
		w, p.ref.W = mat(dq, dk)
		p.scorer, err = ScoreGeneral(w)
	case reference.KindAdditive:
		var w, u Matrix
		w, p.ref.W = mat(da, dq)
		u, p.ref.U = mat(da, dk)
		p.ref.V = vec(da)
		p.scorer, err = ScoreAdditive(w, u, p.ref.V)
	case reference.KindConcat:
		var w Matrix
		w, p.ref.W = mat(da, dq+dk)
		p.ref.V = vec(da)
		p.scorer, err = ScoreConcat(w, p.ref.V)
	}
	return err
}

func (p *problem) withKeep(keep []bool) {
	p.ref.Keep = keep
	p.opts = append(p.opts, WithKeepMask(keep))
}

func (p *problem) withValid(n int) {
	p.ref.Valid = n
	p.opts = append(p.opts, WithValidLength(n))
}

// check runs the problem through the engine and compares with the oracle.
func (p problem) check(t *testing.T, name string) {
	t.Helper()
	mem, p, err := p.memory(t)
	if err != nil {
		t.Fatalf("%s: NewMemory: %v", name, err)
	}
	want := reference.Attend(p.ref)
	ctx, weights := make([]float32, p.values.Cols()), make([]float32, p.keys.Rows())
	for pass, wbuf := range [][]float32{weights, nil} {
		if err := mem.Attend(ctx, wbuf, p.ref.Query, new(Workspace)); err != nil {
			t.Fatalf("%s: Attend: %v", name, err)
		}
		if pass == 0 {
			for i := range weights {
				if !testutil.Close(weights[i], want.Weights[i], want.WeightBound[i]) {
					t.Fatalf("%s: weight[%d] = %v, want %v ± %g", name, i, weights[i], want.Weights[i], want.WeightBound[i])
				}
				if want.Weights[i] == 0 && weights[i] != 0 {
					t.Fatalf("%s: masked weight[%d] = %v, want exactly 0", name, i, weights[i])
				}
			}
		}
		for j := range ctx {
			if !testutil.Close(ctx[j], want.Context[j], want.CtxBound[j]) {
				t.Fatalf("%s (weights buffer %v): ctx[%d] = %v, want %v ± %g", name, wbuf != nil, j, ctx[j], want.Context[j], want.CtxBound[j])
			}
		}
	}
}

func TestAttendMatchesReference(t *testing.T) { testAttendMatchesReference(t, matrices) }

// testAttendMatchesReference is TestAttendMatchesReference with the
// Memories read from the sources via, one after the other (see pick).
func testAttendMatchesReference(t *testing.T, via memSources) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(11)
		Ts := []int{1, 2, 3, 7, 8, 9, 31, 64, 100, 257, 300}
		i := 0
		for _, kind := range kinds {
			for _, T := range Ts {
				dq, dk, dv, da := 1+r.IntN(20), 1+r.IntN(70), 1+r.IntN(70), 1+r.IntN(40)
				p := newProblem(t, r, kind, T, dq, dk, dv, da)
				src, ok := via.pick(i)
				if i++; !ok {
					continue
				}
				p.src = src
				p.check(t, fmt.Sprintf("%s T=%d dk=%d dv=%d%v", p.scorer, T, dk, dv, p.src))
			}
		}
	})
}

func TestAttendMasks(t *testing.T) { testAttendMasks(t, matrices) }

func testAttendMasks(t *testing.T, via memSources) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(12)
		i := 0
		for _, kind := range kinds {
			for _, T := range []int{1, 5, 17, 100} {
				p := newProblem(t, r, kind, T, 6, 9, 13, 5)
				src, ok := via.pick(i)
				if i++; !ok {
					continue
				}
				p.src = src
				keep := make([]bool, T)
				for i := range keep {
					keep[i] = r.IntN(3) > 0
				}
				p.withKeep(keep)
				p.withValid(r.IntN(T + 1))
				// Masked keys and values may hold anything: they are never read.
				for i := range keep {
					if !keep[i] || i >= p.ref.Valid {
						p.ref.Keys[i][0] = float32(math.NaN())
						p.ref.Values[i][0] = float32(math.Inf(1))
					}
				}
				p.check(t, fmt.Sprintf("%s T=%d masked%v", p.scorer, T, p.src))
			}
		}
	})
}

func TestAttendFullyMasked(t *testing.T) { testAttendFullyMasked(t, matrices) }

func testAttendFullyMasked(t *testing.T, via memSources) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(13)
		i := 0
		for _, kind := range kinds {
			cases := map[string]func(p *problem){
				"keep all false": func(p *problem) { p.withKeep(make([]bool, 4)) },
				"valid 0":        func(p *problem) { p.withValid(0) },
				"scores -Inf": func(p *problem) {
					for i := range p.ref.Keys {
						p.ref.Keys[i][0] = float32(math.Inf(-1))
					}
					p.ref.Query[0] = 1
					if kind != reference.KindDot && kind != reference.KindScaledDot && kind != reference.KindDotScale {
						p.withValid(0) // -Inf keys give NaN under tanh/W; mask instead
					}
				},
			}
			for name, setup := range cases {
				p := newProblem(t, r, kind, 4, 3, 3, 5, 2)
				for i := range p.ref.Keys[0] {
					p.ref.Keys[0][i] = 1 // nonzero first column for the -Inf case
				}
				setup(&p)
				src, ok := via.pick(i)
				if i++; !ok {
					continue
				}
				p.src = src
				mem, _, err := p.memory(t)
				if err != nil {
					t.Fatal(err)
				}
				ctx := []float32{9, 9, 9, 9, 9}
				w := []float32{9, 9, 9, 9}
				if err := mem.Attend(ctx, w, p.ref.Query, nil); err != nil {
					t.Fatal(err)
				}
				for _, v := range append(ctx, w...) {
					if v != 0 || math.Signbit(float64(v)) {
						t.Fatalf("%s %s%v: ctx=%v weights=%v, want all +0", p.scorer, name, p.src, ctx, w)
					}
				}
			}
		}
		// No keys at all.
		mem, err := NewMemory(ScoreDot(), Matrix{}, mustMatrix(t, 0, 2, nil))
		if err != nil {
			t.Fatal(err)
		}
		ctx := []float32{1, 1}
		if err := mem.Attend(ctx, nil, nil, nil); err != nil || ctx[0] != 0 || ctx[1] != 0 {
			t.Fatalf("T=0: ctx=%v err=%v", ctx, err)
		}
	})
}

func TestAttendNaNPropagates(t *testing.T) { testAttendNaNPropagates(t, matrices) }

func testAttendNaNPropagates(t *testing.T, via memSources) {
	nan := float32(math.NaN())
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(14)
		i := 0
		for _, kind := range kinds {
			for where := range 3 {
				p := newProblem(t, r, kind, 6, 4, 4, 3, 3)
				switch where {
				case 0:
					p.ref.Query[1] = nan
				case 1:
					p.ref.Keys[2][1] = nan
				case 2:
					p.ref.Values[4][2] = nan
				}
				src, ok := via.pick(i)
				if i++; !ok {
					continue
				}
				p.src = src
				mem, _, err := p.memory(t)
				if err != nil {
					t.Fatal(err)
				}
				ctx := make([]float32, 3)
				if err := mem.Attend(ctx, nil, p.ref.Query, nil); err != nil {
					t.Fatal(err)
				}
				nans := 0
				for _, v := range ctx {
					if v != v {
						nans++
					}
				}
				if want := map[int]int{0: 3, 1: 3, 2: 1}[where]; nans < want {
					t.Fatalf("%s%v NaN in %s: ctx = %v, want NaN to propagate", p.scorer, p.src, []string{"query", "key", "value"}[where], ctx)
				}
			}
		}
	})
}

// Fresh weights every step: a call depends only on its own query, never on
// the previous one.
func TestAttendIsStateless(t *testing.T) {
	r := testutil.Rand(15)
	for _, kind := range kinds {
		p := newProblem(t, r, kind, 20, 5, 5, 4, 3)
		mem, err := NewMemory(p.scorer, p.keys, p.values)
		if err != nil {
			t.Fatal(err)
		}
		ws := new(Workspace)
		q1, q2 := p.ref.Query, testutil.Floats(r, len(p.ref.Query), 3)
		a, b := make([]float32, 4), make([]float32, 4)
		wa, wb := make([]float32, 20), make([]float32, 20)
		mem.Attend(a, wa, q1, ws)
		mem.Attend(b, wb, q2, ws)
		mem.Attend(b, wb, q1, ws)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: second call with the same query differs: %v vs %v", p.scorer, a, b)
			}
		}
	}
}

func TestAttendAllocatesNothing(t *testing.T) {
	r := testutil.Rand(16)
	for _, kind := range kinds {
		p := newProblem(t, r, kind, 128, 32, 64, 48, 16)
		keep := make([]bool, 128)
		for i := range keep {
			keep[i] = i%5 != 0
		}
		p.withKeep(keep)
		mem, err := NewMemory(p.scorer, p.keys, p.values, p.opts...)
		if err != nil {
			t.Fatal(err)
		}
		ws := new(Workspace)
		ctx, w := make([]float32, 48), make([]float32, 128)
		for _, wbuf := range [][]float32{w, nil} {
			mem.Attend(ctx, wbuf, p.ref.Query, ws)
			if n := testing.AllocsPerRun(100, func() { mem.Attend(ctx, wbuf, p.ref.Query, ws) }); n != 0 {
				t.Errorf("%s (weights buffer %v): %v allocations per Attend, want 0", p.scorer, wbuf != nil, n)
			}
		}
	}
}

func TestAttendShapeErrors(t *testing.T) {
	keys := mustMatrix(t, 3, 4, make([]float32, 12))
	vals := mustMatrix(t, 3, 2, make([]float32, 6))
	mem, err := NewMemory(ScoreDot(), keys, vals)
	if err != nil {
		t.Fatal(err)
	}
	q, ctx, w := make([]float32, 4), make([]float32, 2), make([]float32, 3)
	cases := []struct {
		name          string
		ctx, w, q     []float32
		what          string
		got, wantSize int
	}{
		{"query", ctx, w, q[:3], "len(query)", 3, 4},
		{"ctx", ctx[:1], w, q, "len(ctx)", 1, 2},
		{"weights", ctx, w[:2], q, "len(weights)", 2, 3},
	}
	for _, c := range cases {
		before := append([]float32{}, c.ctx...)
		err := mem.Attend(c.ctx, c.w, c.q, nil)
		var se *ShapeError
		if !errors.Is(err, ErrShape) || !errors.As(err, &se) || se.What != c.what || se.Got != c.got || se.Want != c.wantSize {
			t.Errorf("%s: err = %v, want a ShapeError on %s %d vs %d", c.name, err, c.what, c.got, c.wantSize)
		}
		for i := range before {
			if before[i] != c.ctx[i] {
				t.Errorf("%s: ctx changed on error", c.name)
			}
		}
	}

	w34 := mustMatrix(t, 3, 4, make([]float32, 12))
	w35 := mustMatrix(t, 3, 5, make([]float32, 15))
	gen5, _ := ScoreGeneral(w35)
	add, _ := ScoreAdditive(w34, w35, make([]float32, 3))
	cat, _ := ScoreConcat(w34, make([]float32, 3))
	for name, c := range map[string]struct {
		s          Scorer
		keys, vals Matrix
		opts       []MemoryOption
		want       error
	}{
		"values rows":     {ScoreDot(), keys, mustMatrix(t, 2, 2, make([]float32, 4)), nil, ErrShape},
		"general W cols":  {gen5, keys, vals, nil, ErrShape},
		"additive U cols": {add, keys, vals, nil, ErrShape},
		"concat W cols":   {cat, keys, vals, nil, ErrShape},
		"mask length":     {ScoreDot(), keys, vals, []MemoryOption{WithKeepMask(make([]bool, 2))}, ErrShape},
		"valid length":    {ScoreDot(), keys, vals, []MemoryOption{WithValidLength(4)}, ErrArgument},
		"negative valid":  {ScoreDot(), keys, vals, []MemoryOption{WithValidLength(-1)}, ErrArgument},
		"nil scorer":      {nil, keys, vals, nil, ErrArgument},
	} {
		if _, err := NewMemory(c.s, c.keys, c.vals, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("%s: NewMemory err = %v, want %v", name, err, c.want)
		}
	}

	// The error names the operand that disagrees with the other two (with
	// the W of ScoreConcat), not one of those that agree.
	w24 := mustMatrix(t, 2, 4, make([]float32, 8))
	for _, c := range []struct {
		name       string
		f          func() (Scorer, error)
		what       string
		got, wantN int
	}{
		{"ScoreAdditive short v", func() (Scorer, error) { return ScoreAdditive(w34, w35, make([]float32, 2)) }, "len(v)", 2, 3},
		{"ScoreAdditive long v", func() (Scorer, error) { return ScoreAdditive(w34, w35, make([]float32, 8)) }, "len(v)", 8, 3},
		{"ScoreAdditive short W", func() (Scorer, error) { return ScoreAdditive(w24, w35, make([]float32, 3)) }, "W.Rows", 2, 3},
		{"ScoreAdditive short U", func() (Scorer, error) { return ScoreAdditive(w34, w24, make([]float32, 3)) }, "U.Rows", 2, 3},
		{"ScoreConcat short v", func() (Scorer, error) { return ScoreConcat(w34, make([]float32, 2)) }, "len(v)", 2, 3},
	} {
		_, err := c.f()
		var se *ShapeError
		if !errors.Is(err, ErrShape) || !errors.As(err, &se) || se.What != c.what || se.Got != c.got || se.Want != c.wantN {
			t.Errorf("%s: err = %v, want a ShapeError on %s %d vs %d", c.name, err, c.what, c.got, c.wantN)
		}
	}
	if _, err := ScoreConcat(w34, nil); !errors.Is(err, ErrArgument) {
		t.Errorf("ScoreConcat with empty v: %v", err)
	}
	if _, err := ScoreDotWithScale(float32(math.NaN())); !errors.Is(err, ErrArgument) {
		t.Errorf("ScoreDotWithScale(NaN): %v", err)
	}
	if _, err := ScoreGeneral(Matrix{}); !errors.Is(err, ErrArgument) {
		t.Errorf("ScoreGeneral(empty): %v", err)
	}
}

// Options apply in order, a later one of a kind replacing an earlier one;
// the zero MemoryOption changes nothing, and the keep-mask is copied.
func TestMemoryOptions(t *testing.T) {
	keys := mustMatrix(t, 3, 1, []float32{2, 1, 0})
	vals := mustMatrix(t, 3, 1, []float32{4, 2, 0})
	weights := func(opts ...MemoryOption) string {
		t.Helper()
		mem, err := NewMemory(ScoreDot(), keys, vals, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, w := make([]float32, 1), make([]float32, 3)
		if err := mem.Attend(ctx, w, []float32{1}, nil); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%.3f", w)
	}
	keep := []bool{true, false, true}
	kept := weights(WithKeepMask(keep))
	for name, c := range map[string]struct {
		opts []MemoryOption
		want string
	}{
		"zero option":       {[]MemoryOption{{}}, weights()},
		"valid replaced":    {[]MemoryOption{WithValidLength(1), WithValidLength(3)}, weights()},
		"valid kept":        {[]MemoryOption{WithValidLength(2), {}, WithKeepMask(nil)}, weights(WithValidLength(2))},
		"mask replaced":     {[]MemoryOption{WithKeepMask([]bool{false, true, true}), WithKeepMask(keep)}, kept},
		"mask removed":      {[]MemoryOption{WithKeepMask(keep), WithKeepMask(nil)}, weights()},
		"mask and valid":    {[]MemoryOption{WithKeepMask(keep), WithValidLength(2)}, "[1.000 0.000 0.000]"},
		"valid before mask": {[]MemoryOption{WithValidLength(2), WithKeepMask(keep)}, "[1.000 0.000 0.000]"},
	} {
		if got := weights(c.opts...); got != c.want {
			t.Errorf("%s: weights %s, want %s", name, got, c.want)
		}
	}
	mem, err := NewMemory(ScoreDot(), keys, vals, WithKeepMask(keep))
	if err != nil {
		t.Fatal(err)
	}
	keep[1] = true
	w := make([]float32, 3)
	if err := mem.Attend(make([]float32, 1), w, []float32{1}, nil); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%.3f", w); got != kept {
		t.Errorf("after the mask changed: weights %s, want %s", got, kept)
	}
}

func TestMatrix(t *testing.T) {
	data := make([]float32, 20)
	for i := range data {
		data[i] = float32(i)
	}
	m, err := NewMatrixStrided(3, 4, 7, data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows() != 3 || m.Cols() != 4 || m.Stride() != 7 || m.At(2, 3) != 17 || len(m.Row(1)) != 4 || m.Row(1)[0] != 7 {
		t.Fatalf("bad view: %+v", m)
	}
	for _, c := range []struct {
		rows, cols, stride, n int
		want                  error
	}{
		{-1, 2, 2, 10, ErrArgument},
		{2, -1, 2, 10, ErrArgument},
		{2, 3, 2, 10, ErrShape},
		{3, 4, 7, 17, ErrShape},
		{2, 2, math.MaxInt, 10, ErrArgument},
	} {
		if _, err := NewMatrixStrided(c.rows, c.cols, c.stride, make([]float32, c.n)); !errors.Is(err, c.want) {
			t.Errorf("NewMatrixStrided(%d, %d, %d, len %d): err = %v, want %v", c.rows, c.cols, c.stride, c.n, err, c.want)
		}
	}
	if _, err := NewMatrix(3, 4, make([]float32, 12)); err != nil {
		t.Error(err)
	}
	if _, err := NewMatrix(0, 0, nil); err != nil {
		t.Error(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Row(3) of a 3-row matrix did not panic")
			}
		}()
		m.Row(3)
	}()
}
