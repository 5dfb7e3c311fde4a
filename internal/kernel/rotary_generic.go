package kernel

// The rotary-embedding kernels: each pair of a row's elements turned by
// its angle, as ONNX's RotaryEmbedding computes in float32 (a product and
// a sum each rounded once: the conversions keep the compiler from fusing
// them, which Go allows and arm64 would do).

// rotaryHalfGeneric rotates pairs (i, i+n) of each row.
func rotaryHalfGeneric(x []float32, stride, rows int, cos, sin []float32) {
	n := len(cos)
	for r := range rows {
		row := x[r*stride : r*stride+2*n]
		a, b := row[:n], row[n:2*n]
		for i, c := range cos[:n] {
			s := sin[i]
			x1, x2 := a[i], b[i]
			a[i] = float32(c*x1) - float32(s*x2)
			b[i] = float32(s*x1) + float32(c*x2)
		}
	}
}

// rotaryPairsGeneric rotates pairs (2i, 2i+1) of each row.
func rotaryPairsGeneric(x []float32, stride, rows int, cos, sin []float32) {
	n := len(cos)
	for r := range rows {
		row := x[r*stride : r*stride+2*n]
		for i, c := range cos[:n] {
			s := sin[i]
			x1, x2 := row[2*i], row[2*i+1]
			row[2*i] = float32(c*x1) - float32(s*x2)
			row[2*i+1] = float32(s*x1) + float32(c*x2)
		}
	}
}
