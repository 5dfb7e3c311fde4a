//go:build !purego

package attention

import (
	"math"

	"golang.org/x/sys/cpu"

	"github.com/glancelab/attention/internal/impl"
)

// useNEON selects the NEON kernels (Advanced SIMD is part of every ARMv8-A
// core Go supports, but the check keeps the registry honest). Each wrapper
// branches on it and calls the assembly directly.
var useNEON = cpu.ARM64.HasASIMD

func init() { impl.Register("neon", &useNEON) }

// maxCall bounds the elements one assembly call processes: Go cannot
// preempt a goroutine inside assembly.
const maxCall = 1 << 16

// rowsPerCall is how many rows of d columns fit in one call's budget.
func rowsPerCall(d int) int { return max(1, maxCall/max(d, 1)) }

func dot(x, y []float32) float32 {
	if !useNEON {
		return dotGeneric(x, y)
	}
	var s float32
	for len(x) > maxCall {
		s += dotNEON(x[:maxCall], y)
		x, y = x[maxCall:], y[maxCall:]
	}
	return s + dotNEON(x, y)
}

func scoreRows(dst, k []float32, stride int, q []float32) {
	if !useNEON {
		scoreRowsGeneric(dst, k, stride, q)
		return
	}
	for r := rowsPerCall(len(q)); len(dst) > r; {
		scoreRowsNEON(dst[:r], k, stride, q)
		dst, k = dst[r:], k[r*stride:]
	}
	scoreRowsNEON(dst, k, stride, q)
}

func axpy(alpha float32, x, y []float32) {
	if !useNEON {
		axpyGeneric(alpha, x, y)
		return
	}
	for len(x) > maxCall {
		axpyNEON(alpha, x[:maxCall], y)
		x, y = x[maxCall:], y[maxCall:]
	}
	axpyNEON(alpha, x, y)
}

func blendRows(acc, w, v []float32, stride int) {
	if !useNEON {
		blendRowsGeneric(acc, w, v, stride)
		return
	}
	for r := rowsPerCall(len(acc)); len(w) > r; {
		blendRowsNEON(acc, w[:r], v, stride)
		w, v = w[r:], v[r*stride:]
	}
	blendRowsNEON(acc, w, v, stride)
}

func maxf(x []float32) float32 {
	if !useNEON {
		return maxGeneric(x)
	}
	m := float32(math.Inf(-1))
	for len(x) > maxCall {
		c := maxNEON(x[:maxCall])
		if c != c {
			return c
		}
		m = max(m, c)
		x = x[maxCall:]
	}
	c := maxNEON(x)
	if c != c {
		return c
	}
	return max(m, c)
}

func expv(dst, x []float32) {
	if !useNEON {
		expGeneric(dst, x)
		return
	}
	for len(x) > maxCall {
		expNEON(dst[:maxCall], x[:maxCall])
		dst, x = dst[maxCall:], x[maxCall:]
	}
	expNEON(dst, x)
}

func expSum(dst, x []float32, m float32) float32 {
	if !useNEON {
		return expSumGeneric(dst, x, m)
	}
	var s float32
	for len(x) > maxCall {
		s += expSumNEON(dst[:maxCall], x[:maxCall], m)
		dst, x = dst[maxCall:], x[maxCall:]
	}
	return s + expSumNEON(dst, x, m)
}

func scale(s float32, x []float32) {
	if !useNEON {
		scaleGeneric(s, x)
		return
	}
	for len(x) > maxCall {
		scaleNEON(s, x[:maxCall])
		x = x[maxCall:]
	}
	scaleNEON(s, x)
}
