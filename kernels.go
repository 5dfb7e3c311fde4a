package attention

import (
	"fmt"
	"math"
)

// The exported kernels check lengths and then run the fastest available
// implementation (see Implementation). They panic on mismatched lengths, with
// an error naming the call and both lengths, as gonum's BLAS does: a length
// mismatch there is a programming error, not a data condition. The engine
// API (Memory, Attend) returns errors instead.

// Dot returns the dot product of x and y:
//
//	var s float32
//	for i := range x {
//		s += x[i] * y[i]
//	}
//	return s
//
// The summation order is unspecified (several partial sums are kept), so the
// result may differ from the loop above in the last bits; it is always within
// γ_n·Σ|x[i]·y[i]| of the exact dot product, γ_n = n·u/(1−n·u), u = 2^-24
// (plus n·2^-149 where products fall in the subnormal range).
// NaN in either input gives NaN; Inf gives ±Inf or NaN as IEEE arithmetic
// does. Dot panics if len(x) != len(y).
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic(lengthError{"Dot", len(x), len(y)})
	}
	return dot(x, y)
}

// Axpy adds alpha times x to y:
//
//	for i := range x {
//		y[i] += alpha * x[i]
//	}
//
// Each element is rounded at most twice (product, sum) or once where the
// implementation fuses them, so |error| ≤ 2u·(|alpha·x[i]| + |y[i]|)
// (plus 2^-149 in the subnormal range). x and y may be the same slice; if
// they overlap otherwise the result is unspecified.
// Axpy panics if len(x) != len(y).
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		panic(lengthError{"Axpy", len(x), len(y)})
	}
	axpy(alpha, x, y)
}

// Exp sets dst[i] = e^x[i]:
//
//	for i := range x {
//		dst[i] = float32(math.Exp(float64(x[i])))
//	}
//
// but computed in float32 with one polynomial scheme shared by every
// implementation (see internal/expconst). Accuracy: at most 1 ulp wherever
// e^x is a normal float32 (0.866 ulp measured over all 2^32 inputs); where
// it is subnormal the absolute error is below 2^-149. Special values:
// Exp(-Inf) = +0, Exp(+Inf) = +Inf, Exp(NaN) = NaN, Exp(±0) = 1, inputs
// above 88.72283 (ln of the largest float32) give +Inf and inputs below
// -103.97 give +0. dst and x may be the same slice; if they overlap
// otherwise the result is unspecified. Exp panics if len(dst) != len(x).
func Exp(dst, x []float32) {
	if len(dst) != len(x) {
		panic(lengthError{"Exp", len(dst), len(x)})
	}
	expv(dst, x)
}

// Softmax sets dst to the softmax of x, computed stably:
//
//	m := max(x)
//	for i := range x {
//		dst[i] = exp(x[i] - m)
//	}
//	s := sum(dst)
//	for i := range dst {
//		dst[i] /= s
//	}
//
// Subtracting the maximum first means any finite input is safe from
// overflow. Entries equal to -Inf get exactly 0, which is how a mask is
// expressed. If x has no entry above -Inf (empty, or every entry masked),
// dst is all zeros rather than NaN. If any entry is NaN, or the largest is
// +Inf (so that ∞−∞ arises), every dst[i] is NaN: the input has no
// meaningful distribution, and a NaN is never hidden.
//
// Accuracy: each dst[i] is within (|x[i]−m| + 2n + 8)·u of the exact value
// relatively, u = 2^-24, n = len(x) (the rounding of x[i]−m, the exp, the sum
// of n terms and the final scaling), plus 2^-126 absolutely where
// e^(x[i]−m) is subnormal; the tests check that bound against a float64
// reference. dst and x may be the same slice; if they overlap otherwise
// the result is unspecified. Softmax panics if len(dst) != len(x).
func Softmax(dst, x []float32) {
	if len(dst) != len(x) {
		panic(lengthError{"Softmax", len(dst), len(x)})
	}
	softmax(dst, x)
}

// lengthError is the panic value of the exported kernels on mismatched
// lengths; it matches ErrShape under errors.Is. It formats its message only
// when asked, which keeps the kernels' length check small enough for them
// to be inlined into their callers.
type lengthError struct {
	op     string
	la, lb int
}

func (e lengthError) Error() string {
	a, b := "dst", "x"
	if e.op == "Dot" || e.op == "Axpy" {
		a, b = "x", "y"
	}
	return fmt.Sprintf("attention: %s: len(%s)=%d != len(%s)=%d", e.op, a, e.la, b, e.lb)
}

// Is reports whether target is ErrShape.
func (e lengthError) Is(target error) bool { return target == ErrShape }

// softmax is Softmax without the length check; the engine calls it with a
// score row. It returns the row's maximum, -Inf when nothing is attended.
func softmax(dst, x []float32) float32 {
	m, s := softmaxTerms(dst, x)
	if m-m == 0 {
		scale(1/s, dst)
	}
	return m
}

// softmaxTerms is softmax before its normalisation: it sets
// dst[i] = e^{x[i]−m} with m the maximum of x, and returns m and the sum
// of the terms. When m is NaN or +Inf, dst is all NaN and so is the sum;
// when m is -Inf (no entry above it), dst is all 0 and so is the sum.
func softmaxTerms(dst, x []float32) (m, sum float32) {
	m = maxf(x)
	switch {
	case m != m || math.IsInf(float64(m), 1):
		fillNaN(dst)
		return m, float32(math.NaN())
	case math.IsInf(float64(m), -1):
		clear(dst)
		return m, 0
	}
	return m, expSum(dst, x, m)
}
