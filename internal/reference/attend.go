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
	m := scoreKeys(&p, &r)
	if math.IsInf(m, -1) {
		return r
	}
	if math.IsNaN(m) || math.IsInf(m, 1) {
		poison(&p, &r)
		return r
	}
	n := weigh(&p, &r, m)
	accumulate(&p, &r, n)
	return r
}

// attended reports whether key i is attended: before Valid and kept.
func (p *Problem) attended(i int) bool { return i < p.Valid && (p.Keep == nil || p.Keep[i]) }

// dead reports whether key i's final score is -Inf, which gives it weight
// exactly 0.
func (r *Result) dead(i int) bool { return math.IsInf(r.Scores[i], -1) }

// scoreKeys fills in the scores and score bounds (NaN scores for the keys
// not attended) and returns the largest attended score: NaN if any is NaN,
// -Inf if there is none.
func scoreKeys(p *Problem, r *Result) float64 {
	m := math.Inf(-1)
	for i := range p.Keys {
		if !p.attended(i) {
			r.Scores[i] = math.NaN()
			continue
		}
		r.Scores[i], r.ScoreBound[i] = score(*p, p.Keys[i])
		r.Scores[i], r.ScoreBound[i] = adjust(*p, i, r.Scores[i], r.ScoreBound[i])
		if math.IsNaN(r.Scores[i]) || math.IsNaN(m) {
			m = math.NaN()
		} else {
			m = math.Max(m, r.Scores[i])
		}
	}
	return m
}

// poison gives every attended key a NaN weight and the context NaN, as a
// NaN or +Inf score does.
func poison(p *Problem, r *Result) {
	for i := range r.Weights {
		if p.attended(i) {
			r.Weights[i] = math.NaN()
		}
	}
	for j := range r.Context {
		r.Context[j] = math.NaN()
	}
}

// weigh fills in the weights of the scores, whose maximum is m, and their
// bounds, and returns how many keys have a weight. The float32 scores
// differ from the exact ones by up to ScoreBound; a perturbation δ_i of
// score i moves log w_i by at most δ_i + max_j δ_j. On top comes the
// softmax's own rounding.
func weigh(p *Problem, r *Result, m float64) int {
	var sum, maxDelta float64
	n := 0
	for i := range p.Keys {
		if p.attended(i) && !r.dead(i) {
			r.Weights[i] = math.Exp(r.Scores[i] - m)
			sum += r.Weights[i]
			maxDelta = math.Max(maxDelta, r.ScoreBound[i])
			n++
		}
	}
	for i := range p.Keys {
		if !p.attended(i) || r.dead(i) {
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
	return n
}

// accumulate fills in the context, Σ w_i v_i over the n weighted keys,
// and its bound, each weight off by its own bound. A dead key's value is
// still multiplied by its zero weight, as the engine does, so a
// non-finite one makes the context NaN.
func accumulate(p *Problem, r *Result, n int) {
	g := Gamma(n + 1)
	for i := range p.Keys {
		if !p.attended(i) {
			continue
		}
		if r.dead(i) {
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
}
