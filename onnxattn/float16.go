package onnxattn

import (
	"math"

	"github.com/glancelab/attention/internal/half"
)

// Float16ToFloat32 returns the value of the IEEE 754 half-precision number
// with bits h. Every float16 is a float32, so the conversion is exact:
// subnormals, ±0, ±Inf and NaN payloads included.
//
// It is the widening of package attention's f16 KV cache, but that a NaN
// keeps its payload as it is, signalling or quiet, where the cache's
// kernels quiet it as VCVTPH2PS does.
func Float16ToFloat32(h uint16) float32 {
	if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
		return math.Float32frombits(uint32(h&0x8000)<<16 | 0x7f800000 | uint32(h&0x3ff)<<13)
	}
	return half.F16ToF32(h)
}

// Float32ToFloat16 returns the float16 nearest to f, ties to even: values
// beyond the largest float16 (65504) by half a unit or more become ±Inf,
// small values become float16 subnormals or ±0, ±Inf stay ±Inf and NaN
// stays NaN (quiet, with the top bits of its payload): the narrowing of
// package attention's f16 KV cache.
func Float32ToFloat16(f float32) uint16 { return half.F32ToF16(f) }
