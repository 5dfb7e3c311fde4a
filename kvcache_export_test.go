package attention

import "github.com/glancelab/attention/internal/half"

// The conversions, for the external tests that compare them with
// onnxattn's (which imports this package, so only an external test can
// import it back).
var (
	F32ToF16 = half.F32ToF16
	F16ToF32 = half.F16ToF32
)
