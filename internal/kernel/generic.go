package kernel

import (
	"math"

	"github.com/glancelab/attention/internal/scalar"
)

// Generic kernels: the pure-Go twin of every assembly kernel. They are always
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

// scoreRowsGeneric sets dst[i] = Σ_j k[i*stride+j]*q[j] for i < len(dst),
// j < len(q): the scores of a block of keys against one query.
func scoreRowsGeneric(dst, k []float32, stride int, q []float32) {
	for i := range dst {
		dst[i] = dotGeneric(q, k[i*stride:i*stride+len(q)])
	}
}

// scoreRowsMultiGeneric is scoreRows for each of the query rows. It calls
// the scoreRows front, so an implementation without a multi-row kernel of
// its own runs its one-row kernel; the generic path runs the generic code
// throughout.
func scoreRowsMultiGeneric(dst, k []float32, stride int, q []float32, rows int) {
	n, d := len(dst)/rows, len(q)/rows
	for r := range rows {
		ScoreRows(dst[r*n:(r+1)*n], k, stride, q[r*d:(r+1)*d])
	}
}

// blendRowsMultiGeneric is blendRows for each of the rows, through the
// blendRows front as scoreRowsMultiGeneric is; it asks for nothing ahead.
func blendRowsMultiGeneric(acc, w, v []float32, stride int, rows int, next []float32) {
	n, d := len(w)/rows, len(acc)/rows
	for r := range rows {
		BlendRows(acc[r*d:(r+1)*d], w[r*n:(r+1)*n], v, stride)
	}
}

// scoreRowsMultiNearGeneric is scoreRowsMulti, through its front: the
// kernels differ only in what they ask for ahead.
func scoreRowsMultiNearGeneric(dst, k []float32, stride int, q []float32, rows int) {
	ScoreRowsMulti(dst, k, stride, q, rows)
}

// scoreRowsMulti8Generic is scoreRowsMulti on the first four rows and on
// the rest, through its front, so that an implementation without the wide
// kernel runs its four-row one.
func scoreRowsMulti8Generic(dst, k []float32, stride int, q []float32, rows int, also []float32) {
	n, d := len(dst)/rows, len(q)/rows
	ScoreRowsMulti(dst[:4*n], k, stride, q[:4*d], 4)
	ScoreRowsMulti(dst[4*n:rows*n], k, stride, q[4*d:rows*d], rows-4)
}

// blendRowsMulti8Generic is blendRowsMulti on the first four rows and on
// the rest, through its front.
func blendRowsMulti8Generic(acc, w, v []float32, stride int, rows int, next []float32) {
	n, d := len(w)/rows, len(acc)/rows
	BlendRowsMulti(acc[:4*d], w[:4*n], v, stride, 4, nil)
	BlendRowsMulti(acc[4*d:rows*d], w[4*n:rows*n], v, stride, rows-4, next)
}

// axpyGeneric sets y[i] += alpha*x[i] for i < len(x).
func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += float32(alpha * v)
	}
}

// blendRowsGeneric sets acc[j] += Σ_i w[i]*v[i*stride+j] for i < len(w),
// j < len(acc): the weighted sum of a block of value rows. Rows are added
// in order, so acc[j] sees the same rounding as repeated axpy.
func blendRowsGeneric(acc, w, v []float32, stride int) {
	d := len(acc)
	for i, wi := range w {
		axpyGeneric(wi, v[i*stride:i*stride+d], acc)
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

// softcapPrepGeneric sets x[i] *= inv and z[i] = 2|x[i]| for i < len(x):
// the scaled scores of a softcap and the arguments of their exponentials.
func softcapPrepGeneric(x, z []float32, inv float32) {
	z = z[:len(x)]
	for k, v := range x {
		v *= inv
		x[k] = v
		z[k] = 2 * float32(math.Abs(float64(v)))
	}
}

// additivePrepGeneric sets x[r*d+j] = s[j] + u[r*stride+j] and
// z[r*d+j] = 2|x[r*d+j]| for r < len(x)/d, j < d, d = len(s): the tanh
// arguments of a block of additive scores and the arguments of their
// exponentials.
func additivePrepGeneric(x, z, u []float32, stride int, s []float32) {
	d := len(s)
	if d == 0 {
		return
	}
	for r := range len(x) / d {
		xr, zr, ur := x[r*d:(r+1)*d], z[r*d:(r+1)*d], u[r*stride:r*stride+d]
		for j, a := range s {
			v := a + ur[j]
			xr[j] = v
			zr[j] = 2 * float32(math.Abs(float64(v)))
		}
	}
}

// softcapFinishGeneric sets x[i] = c·tanhFinish(x[i], e[i]) for i < len(x).
func softcapFinishGeneric(x, e []float32, c float32) {
	e = e[:len(x)]
	for k, v := range x {
		x[k] = c * scalar.TanhFinish(v, e[k])
	}
}
