package kernel

import "github.com/glancelab/attention/internal/half"

// The KV cache stores 16-bit rows in the two formats models ship in:
// IEEE 754 binary16 (f16) and bfloat16 (bf16, the top half of a float32).
// Both widen to float32 exactly; narrowing rounds to nearest, ties to even,
// so a stored row is the nearest one the format holds.

// narrowF16Generic stores src rounded to binary16 in dst, which is at
// least as long: narrowF16's generic twin.
func narrowF16Generic(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = half.F32ToF16(x)
	}
}

// narrowBF16Generic stores src rounded to bfloat16 in dst, which is at
// least as long: narrowBF16's generic twin.
func narrowBF16Generic(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = half.F32ToBF16(x)
	}
}

// widenF16Generic stores the binary16 values of src in dst.
func widenF16Generic(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = half.F16ToF32(h)
	}
}

// widenBF16Generic stores the bfloat16 values of src in dst.
func widenBF16Generic(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = half.BF16ToF32(h)
	}
}
