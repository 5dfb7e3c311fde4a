package attention

import "math"

// The row kernels over 16-bit key and value rows: half precision (IEEE
// binary16) or bfloat16, each element widened to float32 exactly and the
// sums formed in float32, so a row costs half the bytes of a float32 row
// and the arithmetic is that of scoreRows and blendRows.

// f16to32 returns the float32 equal to the binary16 value h. Every
// binary16 value, subnormals included, is a normal float32 or zero, so
// the widening is exact; a NaN keeps its sign and payload (quieted).
func f16to32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13 | quiet(man))
	case exp != 0: // normal: rebias 15 -> 127
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: man·2^-24, normalised by shifting the leading one out.
	e := uint32(113)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// quiet is the float32 quiet bit for a NaN's mantissa, as VCVTPH2PS sets
// it, and 0 for an Inf.
func quiet(man uint32) uint32 {
	if man != 0 {
		return 1 << 22
	}
	return 0
}

// bf16to32 returns the float32 whose top 16 bits are b: bfloat16 is the
// upper half of a float32, so the widening is a shift.
func bf16to32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// scoreRowsF16Generic sets dst[i] = Σ_j f16(k[i*stride+j])*q[j] for
// i < len(dst), j < len(q).
func scoreRowsF16Generic(dst []float32, k []uint16, stride int, q []float32) {
	scoreRows16(dst, k, stride, q, f16to32)
}

// scoreRowsBF16Generic is scoreRowsF16Generic for bfloat16 rows.
func scoreRowsBF16Generic(dst []float32, k []uint16, stride int, q []float32) {
	scoreRows16(dst, k, stride, q, bf16to32)
}

// blendRowsF16Generic sets acc[j] += Σ_i w[i]*f16(v[i*stride+j]) for
// i < len(w), j < len(acc).
func blendRowsF16Generic(acc, w []float32, v []uint16, stride int) {
	blendRows16(acc, w, v, stride, f16to32)
}

// blendRowsBF16Generic is blendRowsF16Generic for bfloat16 rows.
func blendRowsBF16Generic(acc, w []float32, v []uint16, stride int) {
	blendRows16(acc, w, v, stride, bf16to32)
}

// scoreRows16 is scoreRowsGeneric with k's elements widened by f.
func scoreRows16(dst []float32, k []uint16, stride int, q []float32, f func(uint16) float32) {
	d := len(q)
	for i := range dst {
		row := k[i*stride : i*stride+d]
		var s float32
		for j, x := range row {
			s += float32(f(x) * q[j])
		}
		dst[i] = s
	}
}

// blendRows16 is blendRowsGeneric with v's elements widened by f.
func blendRows16(acc, w []float32, v []uint16, stride int, f func(uint16) float32) {
	d := len(acc)
	for i, wi := range w {
		row := v[i*stride : i*stride+d]
		for j, x := range row {
			acc[j] += float32(wi * f(x))
		}
	}
}
