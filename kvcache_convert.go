package attention

import "math"

// The KV cache stores 16-bit rows in the two formats models ship in:
// IEEE 754 binary16 (f16) and bfloat16 (bf16, the top half of a float32).
// Both widen to float32 exactly; narrowing rounds to nearest, ties to even,
// so a stored row is the nearest one the format holds.

// f32ToF16 returns the binary16 nearest to f, ties to even. Values at or
// beyond 65520 (half a unit past the largest, 65504) become ±Inf, values
// below 2^-25 become ±0, NaN stays NaN, made quiet, with the top bits of
// its payload.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased binary16 exponent
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		if e < -10 { // below 2^-25, float32 subnormals included: ±0
			return sign
		}
		// A binary16 subnormal: the significand with its implicit bit in
		// units of 2^-24. A carry into the smallest normal gives its bits.
		m := man | 0x800000
		shift := uint(14 - e)
		return sign | uint16(roundShift(m, shift))
	}
	// A carry out of the significand steps the exponent, up to Inf.
	return sign | uint16(uint32(e)<<10+roundShift(man, 13))
}

// roundShift returns m / 2^shift rounded to nearest, ties to even, for
// m < 2^31: adding just under half a unit, plus one more when the kept
// part is odd, carries into it exactly when the remainder is over half,
// or half with the kept part odd. Without a branch, as random data (whose
// remainders fall either side of half) would mispredict one.
func roundShift(m uint32, shift uint) uint32 {
	return (m + (1<<(shift-1) - 1) + (m>>shift)&1) >> shift
}

// f32ToBF16 returns the bfloat16 nearest to f, ties to even; finite values
// past the largest bfloat16 by half a unit or more become ±Inf. NaN stays
// NaN, made quiet: a payload only in the low half would otherwise
// truncate to Inf.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	// The rounding carry ripples into the exponent, up to Inf.
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// narrowF16Generic stores src rounded to binary16 in dst, which is at
// least as long: narrowF16's generic twin.
func narrowF16Generic(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = f32ToF16(x)
	}
}

// narrowBF16Generic stores src rounded to bfloat16 in dst, which is at
// least as long: narrowBF16's generic twin.
func narrowBF16Generic(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = f32ToBF16(x)
	}
}

// widenF16Generic stores the binary16 values of src in dst.
func widenF16Generic(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = f16to32(h)
	}
}

// widenBF16Generic stores the bfloat16 values of src in dst.
func widenBF16Generic(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = bf16to32(h)
	}
}
