package reference

import "math"

// Kind selects a score function.
type Kind int

const (
	KindDot       Kind = iota // sᵀh
	KindScaledDot             // sᵀh/√dk
	KindDotScale              // Scale·sᵀh
	KindGeneral               // sᵀ W h
	KindAdditive              // vᵀ tanh(W s + U h)
	KindConcat                // vᵀ tanh(W [s; h])
)

// Problem is one decoder step, stated with plain rows so this package
// depends on nothing in the module.
type Problem struct {
	Kind   Kind
	Scale  float32     // DotScale only
	W, U   [][]float32 // General: W is ds×dk. Additive: W da×ds, U da×dk. Concat: W da×(ds+dk)
	V      []float32   // Additive and Concat
	Keys   [][]float32 // T×dk
	Values [][]float32 // T×dv
	Keep   []bool      // nil: all
	Valid  int         // keys at or past Valid are masked
	Query  []float32
	DV     int // value dimension, needed when there are no keys
	// Score-stage options of the batched engine, applied in this order
	// after the score: Softcap > 0 gives Softcap·tanh(s/Softcap); Bias
	// (one entry per key, nil for none) is then added. A key whose final
	// score is -Inf gets weight exactly 0 (its value still multiplied
	// by 0).
	Softcap float32
	Bias    []float32
}

// Result is the oracle's answer with per-entry error bounds.
type Result struct {
	Scores, ScoreBound   []float64 // attended keys only; others NaN
	Weights, WeightBound []float64
	Context, CtxBound    []float64
}

// Attend computes p in float64 with the semantics the engine documents:
// masked keys have weight 0 and are never read; no attended key (or every
// attended score -Inf) gives zero weights and a zero context; NaN or +Inf
// scores make every weight NaN.
func Attend(p Problem) Result {
	T := len(p.Keys)
	dv := p.DV
	r := Result{
		Scores: make([]float64, T), ScoreBound: make([]float64, T),
		Weights: make([]float64, T), WeightBound: make([]float64, T),
		Context: make([]float64, dv), CtxBound: make([]float64, dv),
	}
	attended := func(i int) bool { return i < p.Valid && (p.Keep == nil || p.Keep[i]) }

	m := math.Inf(-1)
	for i := range p.Keys {
		if !attended(i) {
			r.Scores[i] = math.NaN()
			continue
		}
		r.Scores[i], r.ScoreBound[i] = score(p, p.Keys[i])
		r.Scores[i], r.ScoreBound[i] = adjust(p, i, r.Scores[i], r.ScoreBound[i])
		if math.IsNaN(r.Scores[i]) || math.IsNaN(m) {
			m = math.NaN()
		} else {
			m = math.Max(m, r.Scores[i])
		}
	}
	if math.IsInf(m, -1) {
		return r
	}
	if math.IsNaN(m) || math.IsInf(m, 1) {
		for i := range r.Weights {
			if attended(i) {
				r.Weights[i] = math.NaN()
			}
		}
		for j := range r.Context {
			r.Context[j] = math.NaN()
		}
		return r
	}

	// Weights: the float32 scores differ from the exact ones by up to
	// ScoreBound; a perturbation δ_i of score i moves log w_i by at most
	// δ_i + max_j δ_j. On top comes the softmax's own rounding.
	var sum, maxDelta float64
	n := 0
	dead := func(i int) bool { return math.IsInf(r.Scores[i], -1) }
	for i := range p.Keys {
		if attended(i) && !dead(i) {
			r.Weights[i] = math.Exp(r.Scores[i] - m)
			sum += r.Weights[i]
			maxDelta = math.Max(maxDelta, r.ScoreBound[i])
			n++
		}
	}
	for i := range p.Keys {
		if !attended(i) || dead(i) {
			continue
		}
		r.Weights[i] /= sum
		// The float32 score row's max may sit up to maxDelta from m.
		spread := math.Abs(r.Scores[i]-m) + r.ScoreBound[i] + maxDelta
		rel := math.Expm1(r.ScoreBound[i]+maxDelta) + (spread+2*float64(n)+8)*U
		r.WeightBound[i] = r.Weights[i]*rel*(1+rel) + Tiny
		if math.IsNaN(r.WeightBound[i]) {
			// 0·Inf: a weight that underflowed next to a score whose
			// error is unbounded (a biased score near the float32 limit).
			r.WeightBound[i] = math.Inf(1)
		}
	}
	// Context: Σ w_i v_i accumulated over n rows, each weight off by its
	// bound.
	g := Gamma(n + 1)
	for i := range p.Keys {
		if !attended(i) {
			continue
		}
		if dead(i) {
			for j, v := range p.Values[i] {
				r.Context[j] += 0 * float64(v) // NaN for a non-finite value
			}
			continue
		}
		w, wb := r.Weights[i], r.WeightBound[i]
		for j, v := range p.Values[i] {
			av := math.Abs(float64(v))
			r.Context[j] += w * float64(v)
			// Plus two roundings that may land in the subnormal range,
			// where relative bounds do not hold.
			if math.IsInf(wb, 1) {
				r.CtxBound[j] = math.Inf(1) // nothing is known
				continue
			}
			r.CtxBound[j] += av*(wb+g*(w+wb)) + 0x1p-149
		}
	}
	return r
}

// adjust applies Softcap and Bias to the exact score s of key i, whose
// float32 error bound is e, and returns the new score and bound. c·tanh(s/c)
// is 1-Lipschitz in s; on top come the rounding of s/c (computed as
// s·(1/c), 2u relative), the float32 tanh's error and the rounding of the
// product by c. Adding the bias rounds once more.
func adjust(p Problem, i int, s, e float64) (float64, float64) {
	if c := float64(p.Softcap); c > 0 {
		x := s / c
		if math.IsNaN(x) {
			return x, e
		}
		t := c * math.Tanh(x)
		// The result lies in [-c, c] whatever the error, and ±Inf map
		// to ±c exactly.
		e = math.Min(e+2*U*math.Abs(s)+c*TanhAbsErr+U*math.Abs(t)+Tiny, 2*c)
		if math.IsInf(s, 0) {
			e = 0
		}
		s = t
	}
	if p.Bias != nil {
		b := float64(p.Bias[i])
		s += b
		if math.IsInf(b, 0) {
			return s, 0 // exact: ±Inf (or NaN) whatever the score's error
		}
		e += U*(math.Abs(s)+e) + 0x1p-149
	}
	return s, e
}

// score returns the exact score of key h and the bound on a float32
// implementation's error.
func score(p Problem, h []float32) (float64, float64) {
	s := p.Query
	switch p.Kind {
	case KindDot:
		d, a := Dot(s, h)
		return d, DotBound(len(h), a)
	case KindScaledDot, KindDotScale:
		f := 1 / math.Sqrt(float64(len(h)))
		if p.Kind == KindDotScale {
			f = float64(p.Scale)
		} else if len(h) == 0 {
			f = 1
		}
		d, a := Dot(s, h)
		// The query is scaled in float32 first (one more rounding each),
		// and the scale itself is a rounded float32.
		return f * d, Gamma(len(h)+2) * math.Abs(f) * a
	case KindGeneral:
		// W·h is computed once per key (rounded, dk terms), then dotted
		// with s (ds terms).
		var sc, ab float64
		for a, wa := range p.W {
			wh, whAbs := Dot(wa, h)
			if math.IsInf(DotBound(len(h), whAbs), 1) {
				return sc, math.Inf(1) // W·h itself may overflow
			}
			sc += float64(s[a]) * wh
			ab += math.Abs(float64(s[a])) * whAbs
		}
		return sc, DotBound(len(s)+len(h), ab)
	case KindAdditive, KindConcat:
		return additive(p, s, h)
	}
	panic("reference: unknown kind")
}

func additive(p Problem, s, h []float32) (float64, float64) {
	var sc, err, abs float64
	for a, va := range p.V {
		var ws, wsAbs, uh, uhAbs float64
		if p.Kind == KindAdditive {
			ws, wsAbs = Dot(p.W[a], s)
			uh, uhAbs = Dot(p.U[a], h)
		} else {
			ws, wsAbs = Dot(p.W[a][:len(s)], s)
			uh, uhAbs = Dot(p.W[a][len(s):], h)
		}
		z := ws + uh
		// Errors of W·s and U·h, then the rounding of their sum; tanh is
		// 1-Lipschitz, then its own error.
		dz := DotBound(len(s), wsAbs) + DotBound(len(h), uhAbs) + U*(math.Abs(z)+DotBound(len(s), wsAbs)+DotBound(len(h), uhAbs))
		t := math.Tanh(z)
		sc += float64(va) * t
		abs += math.Abs(float64(va)) * (math.Abs(t) + dz + TanhAbsErr)
		err += math.Abs(float64(va)) * (dz + TanhAbsErr)
	}
	return sc, err + Gamma(len(p.V))*abs
}
