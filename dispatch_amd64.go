//go:build !purego

package attention

import (
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

func dot(x, y []float32) float32 {
	if useAVX2 {
		return dotAVX2(x, y)
	}
	return dotGeneric(x, y)
}

func scoreRows(dst, k []float32, stride int, q []float32) {
	if useAVX2 {
		scoreRowsAVX2(dst, k, stride, q)
		return
	}
	scoreRowsGeneric(dst, k, stride, q)
}

func axpy(alpha float32, x, y []float32) {
	if useAVX2 {
		axpyAVX2(alpha, x, y)
		return
	}
	axpyGeneric(alpha, x, y)
}

func blendRows(acc, w, v []float32, stride int) {
	if useAVX2 {
		blendRowsAVX2(acc, w, v, stride)
		return
	}
	blendRowsGeneric(acc, w, v, stride)
}

func maxf(x []float32) float32 {
	if useAVX2 {
		return maxAVX2(x)
	}
	return maxGeneric(x)
}

func expv(dst, x []float32) {
	if useAVX2 {
		expAVX2(dst, x)
		return
	}
	expGeneric(dst, x)
}

func expSum(dst, x []float32, m float32) float32 {
	if useAVX2 {
		return expSumAVX2(dst, x, m)
	}
	return expSumGeneric(dst, x, m)
}

func scale(s float32, x []float32) {
	if useAVX2 {
		scaleAVX2(s, x)
		return
	}
	scaleGeneric(s, x)
}
