package attention

// The conversions, for the external tests that compare them with
// onnxattn's (which imports this package, so only an external test can
// import it back).
var (
	F32ToF16 = f32ToF16
	F16ToF32 = f16to32
)
