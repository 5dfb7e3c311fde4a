package attention_test

import (
	"math"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/onnxattn"
)

// The library and the ONNX operator convert float16 alike (but for the
// library's quieting of a NaN): every 16-bit value, and float32 values spread over all exponents and payloads.
func TestF16AgreesWithONNX(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		a, b := attention.F16ToF32(h), onnxattn.Float16ToFloat32(h)
		if a != a && b != b {
			// The library quiets a NaN as it widens (as VCVTPH2PS does);
			// onnxattn keeps a signalling one. Both keep the payload.
			b = math.Float32frombits(math.Float32bits(b) | 1<<22)
		}
		if math.Float32bits(a) != math.Float32bits(b) {
			t.Fatalf("f16 %#04x: %#08x here, %#08x in onnxattn", h, math.Float32bits(a), math.Float32bits(b))
		}
	}
	const step = 4093 // prime: every residue of the low bits comes up
	for u := uint64(0); u < 1<<32; u += step {
		f := math.Float32frombits(uint32(u))
		if a, b := attention.F32ToF16(f), onnxattn.Float32ToFloat16(f); a != b {
			t.Fatalf("f32 %#08x: %#04x here, %#04x in onnxattn", uint32(u), a, b)
		}
	}
}
