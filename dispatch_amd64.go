//go:build !purego

package attention

import (
	"math"

	"golang.org/x/sys/cpu"

	"github.com/glancelab/attention/internal/impl"
)

// avx2Features are the CPU features the generated kernels use, by the names
// their "// Requires:" lines give (a test checks every such line against
// this table). SSE and SSE2 are part of the amd64 baseline.
var avx2Features = map[string]bool{
	"SSE":  true,
	"SSE2": true,
	"AVX":  cpu.X86.HasAVX,
	"AVX2": cpu.X86.HasAVX2,
	"FMA3": cpu.X86.HasFMA,
}

// useAVX2 selects the AVX2+FMA kernels; each wrapper below branches on it
// and calls the assembly directly (a func value would add a wrapper call).
var useAVX2 = allTrue(avx2Features)

func allTrue(m map[string]bool) bool {
	for _, ok := range m {
		if !ok {
			return false
		}
	}
	return true
}

func init() { impl.Register("avx2", &useAVX2) }

// maxCall bounds the elements one assembly call processes: Go cannot
// preempt a goroutine inside assembly, so a long call would delay the
// garbage collector and the scheduler. 64Ki elements take ~10–30 µs.
const maxCall = 1 << 16

// rowsPerCall is how many rows of d columns fit in one call's budget.
func rowsPerCall(d int) int { return max(1, maxCall/max(d, 1)) }

func dot(x, y []float32) float32 {
	if !useAVX2 {
		return dotGeneric(x, y)
	}
	var s float32
	for len(x) > maxCall {
		s += dotAVX2(x[:maxCall], y)
		x, y = x[maxCall:], y[maxCall:]
	}
	return s + dotAVX2(x, y)
}

func scoreRows(dst, k []float32, stride int, q []float32) {
	if !useAVX2 {
		scoreRowsGeneric(dst, k, stride, q)
		return
	}
	for r := rowsPerCall(len(q)); len(dst) > r; {
		scoreRowsAVX2(dst[:r], k, stride, q)
		dst, k = dst[r:], k[r*stride:]
	}
	scoreRowsAVX2(dst, k, stride, q)
}

func axpy(alpha float32, x, y []float32) {
	if !useAVX2 {
		axpyGeneric(alpha, x, y)
		return
	}
	for len(x) > maxCall {
		axpyAVX2(alpha, x[:maxCall], y)
		x, y = x[maxCall:], y[maxCall:]
	}
	axpyAVX2(alpha, x, y)
}

func blendRows(acc, w, v []float32, stride int) {
	if !useAVX2 {
		blendRowsGeneric(acc, w, v, stride)
		return
	}
	for r := rowsPerCall(len(acc)); len(w) > r; {
		blendRowsAVX2(acc, w[:r], v, stride)
		w, v = w[r:], v[r*stride:]
	}
	blendRowsAVX2(acc, w, v, stride)
}

func maxf(x []float32) float32 {
	if !useAVX2 {
		return maxGeneric(x)
	}
	m := float32(math.Inf(-1))
	for len(x) > maxCall {
		c := maxAVX2(x[:maxCall])
		if c != c {
			return c
		}
		m = max(m, c)
		x = x[maxCall:]
	}
	c := maxAVX2(x)
	if c != c {
		return c
	}
	return max(m, c)
}

// The exp kernels come in pairs: the fast one stops at the first block
// holding a large, infinite or NaN input, the special one takes over until
// the inputs are ordinary again. Both always make progress.
func expv(dst, x []float32) {
	if !useAVX2 {
		expGeneric(dst, x)
		return
	}
	for len(x) > 0 {
		c := min(len(x), maxCall)
		k := expAVX2(dst[:c], x[:c])
		if k < c {
			k += expSpecialAVX2(dst[k:c], x[k:c])
		}
		dst, x = dst[k:], x[k:]
	}
}

func expSum(dst, x []float32, m float32) float32 {
	if !useAVX2 {
		return expSumGeneric(dst, x, m)
	}
	var s float32
	for len(x) > 0 {
		c := min(len(x), maxCall)
		part, k := expSumAVX2(dst[:c], x[:c], m)
		s += part
		if k < c {
			part, k2 := expSumSpecialAVX2(dst[k:c], x[k:c], m)
			s += part
			k += k2
		}
		dst, x = dst[k:], x[k:]
	}
	return s
}

func scale(s float32, x []float32) {
	if !useAVX2 {
		scaleGeneric(s, x)
		return
	}
	for len(x) > maxCall {
		scaleAVX2(s, x[:maxCall])
		x = x[maxCall:]
	}
	scaleAVX2(s, x)
}
