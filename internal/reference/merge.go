package reference

import "math"

// Merge combines the results of one query over two disjoint sets of keys
// into the result over their union, as the engine's MergeAttention does:
// with M = max(a.LSE, b.LSE), the parts weigh c_a = e^{a.LSE−M}/(e^{a.LSE−M}
// + e^{b.LSE−M}) and c_b = 1 − c_a, the context is c_a·a + c_b·b and the LSE
// log(e^{a.LSE} + e^{b.LSE}). A part whose LSE is −Inf (nothing attended)
// contributes nothing, not even a NaN context; otherwise a NaN or +Inf LSE
// makes the context and the LSE NaN. Only Context, LSE and their bounds
// are set.
//
// The bounds carry the parts' own: the LSEs, off by δ_a and δ_b, move c_a
// by at most Δ = 2·c_a·c_b·sinh(δ_a + δ_b), so the context is off by up to
// (c_a+Δ)·a.CtxBound + (c_b+Δ)·b.CtxBound + Δ·|a − b|, and the LSE (1-Lipschitz
// in each part's) by max(δ_a, δ_b). On top, the merge computed in float64
// and rounded to float32 once: 2u of the magnitudes that enter it.
func Merge(a, b Result) Result {
	switch {
	case math.IsInf(b.LSE, -1):
		return mergeCopy(a)
	case math.IsInf(a.LSE, -1):
		return mergeCopy(b)
	}
	r := Result{Context: make([]float64, len(a.Context)), CtxBound: make([]float64, len(a.Context))}
	if math.IsNaN(a.LSE) || math.IsNaN(b.LSE) || math.IsInf(a.LSE, 1) || math.IsInf(b.LSE, 1) {
		r.LSE = math.NaN()
		for j := range r.Context {
			r.Context[j] = math.NaN()
		}
		return r
	}
	m := math.Max(a.LSE, b.LSE)
	ea, eb := math.Exp(a.LSE-m), math.Exp(b.LSE-m)
	ca, cb := ea/(ea+eb), eb/(ea+eb)
	r.LSE = m + math.Log(ea+eb)
	r.LSEBound = math.Max(a.LSEBound, b.LSEBound) + 2*U*(math.Abs(r.LSE)+1)
	d := 2 * ca * cb * math.Sinh(a.LSEBound+b.LSEBound)
	for j := range r.Context {
		x, y := a.Context[j], b.Context[j]
		r.Context[j] = ca*x + cb*y
		mag := (ca+d)*(math.Abs(x)+a.CtxBound[j]) + (cb+d)*(math.Abs(y)+b.CtxBound[j])
		r.CtxBound[j] = (ca+d)*a.CtxBound[j] + (cb+d)*b.CtxBound[j] + d*math.Abs(x-y) + 2*U*mag + 0x1p-149
		if math.IsNaN(r.CtxBound[j]) {
			r.CtxBound[j] = math.Inf(1) // an unbounded part next to a zero weight
		}
	}
	return r
}

// mergeCopy returns the context and LSE of r, with their bounds.
func mergeCopy(r Result) Result {
	return Result{
		Context: append([]float64(nil), r.Context...), CtxBound: append([]float64(nil), r.CtxBound...),
		LSE: r.LSE, LSEBound: r.LSEBound,
	}
}
