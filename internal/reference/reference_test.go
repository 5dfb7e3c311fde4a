package reference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// problem returns a random scaled-dot problem of T keys, with a window,
// a valid length, a keep-mask and, at random, a bias, ALiBi and a sink.
func problem(r *rand.Rand, T, dk, dv int) Problem {
	p := Problem{Kind: KindDotScale, Scale: 0.5, Query: floats(r, dk), DV: dv, Valid: T - r.IntN(3), Start: r.IntN(3)}
	p.Keep = make([]bool, T)
	for j := range T {
		p.Keys = append(p.Keys, floats(r, dk))
		p.Values = append(p.Values, floats(r, dv))
		p.Keep[j] = r.IntN(5) > 0
	}
	if r.IntN(2) == 0 {
		p.Bias = floats(r, T)
	}
	if r.IntN(2) == 0 {
		p.Slope, p.Pos = float32(r.IntN(64))/64, r.IntN(2*T)-T/2
	}
	if r.IntN(2) == 0 {
		p.HasSink, p.Sink = true, 4*r.Float32()-2
	}
	return p
}

func floats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 4*r.Float32() - 2
	}
	return x
}

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsNaN(a) {
		return a == b || math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-12*(1+math.Abs(a))
}

// Attending the keys before h and the keys from h on, then merging, gives
// the answer over all keys; the sink belongs to one part.
func TestMergeHalves(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		T := 1 + r.IntN(40)
		p := problem(r, T, 1+r.IntN(6), 1+r.IntN(4))
		h := r.IntN(T + 1)
		a, b := p, p
		a.Valid = min(p.Valid, h)
		b.Start, b.HasSink = max(p.Start, h), false
		want, got := Attend(p), Merge(Attend(a), Attend(b))
		if !near(got.LSE, want.LSE) {
			t.Fatalf("T=%d h=%d: merged LSE %v, want %v", T, h, got.LSE, want.LSE)
		}
		for j := range want.Context {
			if !near(got.Context[j], want.Context[j]) {
				t.Fatalf("T=%d h=%d: merged context %v, want %v", T, h, got.Context, want.Context)
			}
		}
	}
}

// Merge's bound on how far the parts' LSE errors move their weights:
// |σ(x+d) − σ(x)| ≤ 2σ(x)(1−σ(x))·sinh|d|.
func TestMergeWeightShift(t *testing.T) {
	sigma := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	for x := -40.0; x <= 40; x += 0.37 {
		for _, d := range []float64{-3, -0.5, -1e-3, 1e-6, 1e-3, 0.2, 2, 5} {
			// σ(x+d) − σ(x) = σ(x+d)·σ(x)·e^{−x}·(1 − e^{−d}), without
			// the cancellation of the difference.
			s := sigma(x)
			got := math.Abs(sigma(x+d) * s * math.Exp(-x) * -math.Expm1(-d))
			if bound := 2 * s * sigma(-x) * math.Sinh(math.Abs(d)); got > bound*(1+1e-9) {
				t.Fatalf("x=%v d=%v: shift %v above %v", x, d, got, bound)
			}
		}
	}
}

// A part whose LSE is −Inf contributes nothing, even a NaN context; a NaN
// or +Inf LSE makes the merge NaN.
func TestMergeSpecials(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	part := func(lse, ctx float64) Result {
		return Result{Context: []float64{ctx}, CtxBound: []float64{0}, LSE: lse}
	}
	cases := []struct {
		a, b     Result
		lse, ctx float64
	}{
		{part(-inf, nan), part(1, 2), 1, 2},
		{part(1, 2), part(-inf, nan), 1, 2},
		{part(-inf, 0), part(-inf, 0), -inf, 0},
		{part(nan, 1), part(1, 2), nan, nan},
		{part(1, 2), part(inf, 1), nan, nan},
		{part(0, 1), part(0, 3), math.Ln2, 2},
	}
	for _, c := range cases {
		got := Merge(c.a, c.b)
		if !near(got.LSE, c.lse) || !near(got.Context[0], c.ctx) {
			t.Errorf("Merge(%v, %v) = %v, %v; want %v, %v", c.a.LSE, c.b.LSE, got.LSE, got.Context[0], c.lse, c.ctx)
		}
	}
}

// A sink weighs as a key of that score whose value is zero: the weights,
// the context and the LSE agree with such a problem.
func TestSinkIsAZeroValueKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		T, dv := r.IntN(10), 3
		p := Problem{Kind: KindDot, Query: []float32{1}, DV: dv, Valid: T + 1, HasSink: true, Sink: 4*r.Float32() - 2}
		q := p
		q.HasSink = false
		for range T {
			k := []float32{4*r.Float32() - 2}
			p.Keys, q.Keys = append(p.Keys, k), append(q.Keys, k)
			v := floats(r, dv)
			p.Values, q.Values = append(p.Values, v), append(q.Values, v)
		}
		p.Valid = T
		q.Keys, q.Values = append(q.Keys, []float32{p.Sink}), append(q.Values, make([]float32, dv))
		got, want := Attend(p), Attend(q)
		if !near(got.LSE, want.LSE) {
			t.Fatalf("LSE %v, want %v", got.LSE, want.LSE)
		}
		for j := range got.Context {
			if !near(got.Context[j], want.Context[j]) {
				t.Fatalf("context %v, want %v", got.Context, want.Context)
			}
		}
		for j := range T {
			if !near(got.Weights[j], want.Weights[j]) {
				t.Fatalf("weights %v, want %v", got.Weights, want.Weights)
			}
		}
	}
}

// The sink's special values: −Inf is no sink, NaN and +Inf poison the row
// even with nothing attended, a finite sink alone is the LSE of a row with
// nothing attended.
func TestSinkSpecials(t *testing.T) {
	p := Problem{Kind: KindDot, Query: []float32{1}, Keys: [][]float32{{2}}, Values: [][]float32{{3}}, Valid: 1, DV: 1}
	plain := Attend(p)
	p.HasSink, p.Sink = true, float32(math.Inf(-1))
	if got := Attend(p); got.LSE != plain.LSE || got.Context[0] != plain.Context[0] || got.LSE != 2 {
		t.Errorf("−Inf sink: LSE %v context %v, want %v %v", got.LSE, got.Context, plain.LSE, plain.Context)
	}
	for _, s := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		for _, valid := range []int{0, 1} {
			p.Sink, p.Valid = s, valid
			if got := Attend(p); !math.IsNaN(got.LSE) || !math.IsNaN(got.Context[0]) {
				t.Errorf("sink %v, valid %d: LSE %v context %v, want NaN", s, valid, got.LSE, got.Context)
			}
		}
	}
	p.Sink, p.Valid = 1.5, 0
	if got := Attend(p); got.LSE != 1.5 || got.Context[0] != 0 || got.LSEBound != 0 {
		t.Errorf("nothing attended, sink 1.5: LSE %v ± %v context %v", got.LSE, got.LSEBound, got.Context)
	}
	p.HasSink = false
	if got := Attend(p); !math.IsInf(got.LSE, -1) {
		t.Errorf("nothing attended, no sink: LSE %v, want −Inf", got.LSE)
	}
}

// ALiBi is the bias Slope·(j − Pos), and a window's Start the keep-mask
// that drops the keys before it.
func TestALiBiAndStart(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		T := 1 + r.IntN(20)
		p := problem(r, T, 3, 2)
		p.Bias = nil
		q := p
		q.Slope, q.Start = 0, 0
		q.Bias = make([]float32, T)
		q.Keep = append([]bool(nil), p.Keep...)
		for j := range T {
			q.Bias[j] = p.Slope * float32(j-p.Pos) // exact: a small distance, a slope of 6 bits
			q.Keep[j] = q.Keep[j] && j >= p.Start
		}
		got, want := Attend(p), Attend(q)
		if !near(got.LSE, want.LSE) {
			t.Fatalf("LSE %v, want %v", got.LSE, want.LSE)
		}
		for j := range got.Context {
			if !near(got.Context[j], want.Context[j]) {
				t.Fatalf("context %v, want %v", got.Context, want.Context)
			}
		}
	}
}
