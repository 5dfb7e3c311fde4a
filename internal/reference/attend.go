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
	Start  int         // keys before Start are masked (a sliding window's first key)
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
	// ALiBi: Slope·(j − Pos) is added to the score of key j after Bias,
	// Pos being the query's position in key coordinates. The engine
	// computes it in float32 as fl(Slope·float32(j − Pos)), the distance
	// saturated to the range of int, and adds it with one more rounding;
	// the bounds cover that. Slope 0 adds nothing.
	Slope float32
	Pos   int
	// Sink, if HasSink, is a logit that joins the softmax's denominator
	// only: w_j = e^{s_j}/(Σ_k e^{s_k} + e^{Sink}), and no value is
	// blended for it. A −Inf sink is no sink; a NaN or +Inf one makes the
	// weights, the context and the LSE NaN, even with no key attended.
	HasSink bool
	Sink    float32
}

// Result is the oracle's answer with per-entry error bounds.
type Result struct {
	Scores, ScoreBound   []float64 // attended keys only; others NaN
	Weights, WeightBound []float64
	Context, CtxBound    []float64
	// LSE is the natural log of the softmax's denominator: of Σ e^{s_j}
	// over the attended keys whose score is above −Inf, plus e^{Sink}.
	// It is −Inf when that sum is empty, NaN when the weights are.
	LSE, LSEBound float64
}

// Attend computes p in float64 with the semantics the engine documents:
// masked keys have weight 0 and are never read; no attended key (or every
// attended score -Inf) gives zero weights and a zero context, and the sink
// alone (or −Inf) as the LSE; NaN or +Inf scores, or a NaN or +Inf sink,
// make every weight, the context and the LSE NaN.
func Attend(p Problem) Result { return attend(p, keyTerms(p)) }

// AttendEach is Attend for each of queries in turn in place of p.Query,
// against the same keys: the keys' halves of additive scores are computed
// once for all of them.
func AttendEach(p Problem, queries [][]float32) []Result {
	kts := keyTerms(p)
	rs := make([]Result, len(queries))
	for i, q := range queries {
		p.Query = q
		rs[i] = attend(p, kts)
	}
	return rs
}

// attend is Attend with the keys' halves of additive scores, kts (see
// keyTerms), given.
func attend(p Problem, kts [][]term) Result {
	T := len(p.Keys)
	dv := p.DV
	r := Result{
		Scores: make([]float64, T), ScoreBound: make([]float64, T),
		Weights: make([]float64, T), WeightBound: make([]float64, T),
		Context: make([]float64, dv), CtxBound: make([]float64, dv),
	}
	m, sink := scoreKeys(&p, &r, kts), p.sink()
	switch {
	case math.IsNaN(m) || math.IsInf(m, 1) || math.IsNaN(sink) || math.IsInf(sink, 1):
		poison(&p, &r)
		return r
	case math.IsInf(m, -1):
		r.LSE = sink // exact: the engine returns the float32 sink
		return r
	}
	n := weigh(&p, &r, m)
	accumulate(&p, &r, n)
	unscaled(&p, &r, m)
	return r
}

// Attended reports whether key i is attended: in [Start, Valid) and kept.
func (p *Problem) Attended(i int) bool {
	return i >= p.Start && i < p.Valid && (p.Keep == nil || p.Keep[i])
}

// sink returns the sink logit, −Inf without one.
func (p *Problem) sink() float64 {
	if !p.HasSink {
		return math.Inf(-1)
	}
	return float64(p.Sink)
}

// dead reports whether key i's final score is -Inf, which gives it weight
// exactly 0.
func (r *Result) dead(i int) bool { return math.IsInf(r.Scores[i], -1) }

// scoreKeys fills in the scores and score bounds (NaN scores for the keys
// not attended) and returns the largest attended score: NaN if any is NaN,
// -Inf if there is none.
func scoreKeys(p *Problem, r *Result, kts [][]term) float64 {
	m := math.Inf(-1)
	qt := queryTerms(*p)
	for i := range p.Keys {
		if !p.Attended(i) {
			r.Scores[i] = math.NaN()
			continue
		}
		var kt []term
		if kts != nil {
			kt = kts[i]
		}
		r.Scores[i], r.ScoreBound[i] = score(*p, qt, kt, p.Keys[i])
		r.Scores[i], r.ScoreBound[i] = adjust(*p, i, r.Scores[i], r.ScoreBound[i])
		if math.IsNaN(r.Scores[i]) || math.IsNaN(m) {
			m = math.NaN()
		} else {
			m = math.Max(m, r.Scores[i])
		}
	}
	return m
}

// poison gives every attended key a NaN weight and the context and the
// LSE NaN, as a NaN or +Inf score or sink does.
func poison(p *Problem, r *Result) {
	for i := range r.Weights {
		if p.Attended(i) {
			r.Weights[i] = math.NaN()
		}
	}
	for j := range r.Context {
		r.Context[j] = math.NaN()
	}
	r.LSE = math.NaN()
}

// weigh fills in the weights of the scores, whose maximum is m, their
// bounds and the LSE, and returns how many keys have a weight. The float32
// scores differ from the exact ones by up to ScoreBound; a perturbation δ_i
// of score i moves log w_i by at most δ_i + max_j δ_j (the sink is exact).
// On top comes the softmax's own rounding, over one more term with a sink.
func weigh(p *Problem, r *Result, m float64) int {
	// Exponentials relative to the larger of m and the sink: none
	// overflows.
	top := math.Max(m, p.sink())
	var sum, maxDelta float64
	n := 0
	for i := range p.Keys {
		if r.live(p, i) {
			r.Weights[i] = math.Exp(r.Scores[i] - top)
			sum += r.Weights[i]
			maxDelta = math.Max(maxDelta, r.ScoreBound[i])
			n++
		}
	}
	sum += math.Exp(p.sink() - top)
	r.LSE = top + math.Log(sum)
	r.LSEBound = lseBound(p, r, m, maxDelta, n)
	terms := n
	if p.HasSink {
		terms++
	}
	for i := range p.Keys {
		if !r.live(p, i) {
			continue
		}
		r.Weights[i] /= sum
		// The float32 score row's max may sit up to maxDelta from m.
		spread := math.Abs(r.Scores[i]-m) + r.ScoreBound[i] + maxDelta
		rel := math.Expm1(r.ScoreBound[i]+maxDelta) + (spread+2*float64(terms)+8)*U
		r.WeightBound[i] = r.Weights[i]*rel*(1+rel) + Tiny
		if math.IsNaN(r.WeightBound[i]) {
			// 0·Inf: a weight that underflowed next to a score whose
			// error is unbounded (a biased score near the float32 limit).
			r.WeightBound[i] = math.Inf(1)
		}
	}
	return n
}

// live reports whether key i has a weight: attended, its score above -Inf.
func (r *Result) live(p *Problem, i int) bool { return p.Attended(i) && !r.dead(i) }

// lseBound bounds the error of a float32 LSE computed as the engine does:
// m + log Σ_i e^{s_i − m} over the float32 scores, m their maximum, then
// combined with the sink, in float64, rounded to float32 once. The scores'
// errors move it by at most maxDelta (LSE is 1-Lipschitz in each score).
// Each term of the sum is off by the rounding of its argument, which
// itself may be up to 2·maxDelta from the exact s_i − m, and the exp's 2u
// (e^{a}(1+2u) − 1 ≤ e^{a+2u} − 1); the sum by γ_n and a subnormal spacing
// per term. A relative error ε < 1/2 of the sum moves its log by at most
// 2ε, and it moves the combination with the sink by no more. The float64
// steps and the last rounding add 2u·(|LSE| + 1).
func lseBound(p *Problem, r *Result, m, maxDelta float64, n int) float64 {
	var sum, err float64
	for i := range p.Keys {
		if !r.live(p, i) {
			continue
		}
		t := math.Exp(r.Scores[i] - m)
		sum += t // at least 1: the maximum's term
		if t > 0 {
			err += t * math.Expm1((math.Abs(r.Scores[i]-m)+2*maxDelta)*U+2*U)
		}
	}
	eps := err/sum + Gamma(n) + float64(n)*0x1p-149
	if !(eps < 0.5) {
		return math.Inf(1)
	}
	return maxDelta + 2*eps + 2*U*(math.Abs(r.LSE)+1)
}

// accumulate fills in the context, Σ w_i v_i over the n weighted keys,
// and its bound, each weight off by its own bound. A dead key's value is
// still multiplied by its zero weight, as the engine does, so a
// non-finite one makes the context NaN.
func accumulate(p *Problem, r *Result, n int) {
	g := Gamma(n + 1)
	for i := range p.Keys {
		if !p.Attended(i) {
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

// unscaled sets the context bounds to +Inf where the engine's
// unnormalised sum Σ_i e^{s_i − m}·|v_i| may overflow float32 (m the
// scores' maximum; a sink joins the sum only when it is normalised at the
// end): the context itself may be small, beside a sink that outweighs
// every key, while that sum is not, and no bound holds then.
func unscaled(p *Problem, r *Result, m float64) {
	raw := make([]float64, len(r.Context))
	for i := range p.Keys {
		if !r.live(p, i) {
			continue
		}
		t := math.Exp(r.Scores[i] - m)
		for j, v := range p.Values[i] {
			raw[j] += t * math.Abs(float64(v))
		}
	}
	for j, x := range raw {
		if !(x <= math.MaxFloat32/2) {
			r.CtxBound[j] = math.Inf(1)
		}
	}
}
