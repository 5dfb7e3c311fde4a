package attention

import (
	"math"

	"github.com/glancelab/attention/internal/scalar"
)

// The generic twins of the exported family (what Dot, Axpy, Exp and Softmax
// run; internal/kernel holds the same twins of its own, beside the
// engine's kernels). They are always
// compiled (no build tag) so tests can compare them with the assembly on any
// machine. Callers have checked lengths; these assume them.
//
// Sums use four independent accumulators, which keeps the error within the
// same γ_n bound as any other order and lets the CPU overlap the adds.

// dotGeneric returns Σ x[i]*y[i] for i < len(x); len(y) >= len(x).
func dotGeneric(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i <= n-4; i += 4 {
		s0 += float32(x[i] * y[i])
		s1 += float32(x[i+1] * y[i+1])
		s2 += float32(x[i+2] * y[i+2])
		s3 += float32(x[i+3] * y[i+3])
	}
	for ; i < n; i++ {
		s0 += float32(x[i] * y[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyGeneric sets y[i] += alpha*x[i] for i < len(x).
func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += float32(alpha * v)
	}
}

// maxGeneric returns the largest element of x, NaN if any element is NaN,
// and -Inf for an empty x.
func maxGeneric(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		} else if v != v {
			return v
		}
	}
	return m
}

// expGeneric sets dst[i] = e^x[i] for i < len(x).
func expGeneric(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = scalar.Exp32(v)
	}
}

// expSumGeneric sets dst[i] = e^(x[i]-m) for i < len(x) and returns the sum
// of the dst[i]: the fused middle pass of a stable softmax.
func expSumGeneric(dst, x []float32, m float32) float32 {
	dst = dst[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i <= len(x)-4; i += 4 {
		e0 := scalar.Exp32(x[i] - m)
		e1 := scalar.Exp32(x[i+1] - m)
		e2 := scalar.Exp32(x[i+2] - m)
		e3 := scalar.Exp32(x[i+3] - m)
		dst[i], dst[i+1], dst[i+2], dst[i+3] = e0, e1, e2, e3
		s0 += e0
		s1 += e1
		s2 += e2
		s3 += e3
	}
	for ; i < len(x); i++ {
		e := scalar.Exp32(x[i] - m)
		dst[i] = e
		s0 += e
	}
	return (s0 + s1) + (s2 + s3)
}

// scaleGeneric sets x[i] *= s.
func scaleGeneric(s float32, x []float32) {
	for i := range x {
		x[i] *= s
	}
}
