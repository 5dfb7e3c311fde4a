// Package reference is the float64 oracle the tests and fuzzers compare every
// kernel implementation against. It computes each quantity from the same
// float32 inputs in float64, straightforwardly, and also returns bounds on
// how far a correct float32 implementation may stray from it, derived from
// standard rounding-error analysis (Higham, "Accuracy and Stability of
// Numerical Algorithms", ch. 3): tolerances are never guessed.
package reference

import "math"

// U is the unit roundoff of float32.
const U = 0x1p-24

// TanhAbsErr bounds the absolute error of the float32 tanh used by the
// additive scorers (checked densely by the root package's tests).
const TanhAbsErr = 0x1p-22

// Tiny is the absolute slack allowed where a float32 result underflows
// (the smallest normal float32).
const Tiny = 0x1p-126

// Gamma returns γ_n = n·u/(1−n·u), the relative error bound of a float32
// sum or dot product of n terms in any order.
func Gamma(n int) float64 {
	nu := float64(n) * U
	if nu >= 1 {
		return math.Inf(1)
	}
	return nu / (1 - nu)
}

// Dot returns Σ x[i]·y[i] and Σ |x[i]·y[i]|.
func Dot(x, y []float32) (dot, abs float64) {
	for i := range x {
		p := float64(x[i]) * float64(y[i])
		dot += p
		abs += math.Abs(p)
	}
	return dot, abs
}

// DotBound is the error bound of a float32 dot product of length n whose
// terms have absolute sum abs: γ_n·abs, plus half a subnormal spacing for
// each of the 2n roundings, which γ_n does not cover when results underflow.
// It is +Inf when a partial sum may overflow float32, where no bound holds.
func DotBound(n int, abs float64) float64 {
	if !(abs <= math.MaxFloat32/2) {
		return math.Inf(1)
	}
	return Gamma(n)*abs + float64(n)*0x1p-149
}

// Exp returns e^x in float64.
func Exp(x float32) float64 { return math.Exp(float64(x)) }

// ULP32 returns the spacing of float32 values at |v| (2^-149 below the
// normal range), the unit in which exp's accuracy is stated.
func ULP32(v float64) float64 {
	a := math.Abs(v)
	if a < 0x1p-126 {
		return 0x1p-149
	}
	if a > math.MaxFloat32 {
		a = math.MaxFloat32
	}
	_, e := math.Frexp(a)
	return math.Ldexp(1, e-24)
}

// Softmax returns the stable softmax of x in float64 and, for each entry,
// the bound on a float32 implementation's error: relative
// (|x[i]−m| + 2n + 8)·u plus Tiny absolutely. Entries that are -Inf get
// 0; a row with no entry above -Inf gives zeros; NaN or +Inf give NaN.
func Softmax(x []float32) (w, bound []float64) {
	w = make([]float64, len(x))
	bound = make([]float64, len(x))
	m := math.Inf(-1)
	for _, v := range x {
		f := float64(v)
		if math.IsNaN(f) {
			m = f
			break
		}
		m = math.Max(m, f)
	}
	if math.IsNaN(m) || math.IsInf(m, 1) {
		for i := range w {
			w[i] = math.NaN()
		}
		return w, bound
	}
	if math.IsInf(m, -1) {
		return w, bound
	}
	var s float64
	for i, v := range x {
		w[i] = math.Exp(float64(v) - m)
		s += w[i]
	}
	n := float64(len(x))
	for i, v := range x {
		if math.IsInf(float64(v), -1) {
			continue // exactly 0
		}
		w[i] /= s
		bound[i] = w[i]*(math.Abs(float64(v)-m)+2*n+8)*U + Tiny
	}
	return w, bound
}
