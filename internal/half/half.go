// Package half converts between float32 and the two 16-bit formats the KV
// cache stores and models ship in: IEEE 754 binary16 (f16) and bfloat16
// (bf16, the top half of a float32). Both widen to float32 exactly;
// narrowing rounds to nearest, ties to even. Package attention,
// internal/kernel (the generic twins of the 16-bit kernels) and onnxattn
// share these.
package half

import "math"

// F16ToF32 returns the float32 equal to the binary16 value h. Every
// binary16 value, subnormals included, is a normal float32 or zero, so
// the widening is exact; a NaN keeps its sign and payload (quieted, as
// VCVTPH2PS quiets it).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	if h&0x7c00 == 0x7c00 { // Inf or NaN
		man := uint32(h&0x3ff) << 13
		if man != 0 {
			man |= 1 << 22
		}
		return math.Float32frombits(sign | 0x7f800000 | man)
	}
	// Exponent and mantissa shifted into a float32's fields give the value
	// times 2^-112 (a subnormal half lands on the float32 subnormal with
	// the same mantissa); the product by 2^112 is exact and normalises it,
	// without a branch on the exponent, which random data mispredicts.
	m := math.Float32frombits(uint32(h&0x7fff)<<13) * 0x1p112
	return math.Float32frombits(sign | math.Float32bits(m))
}

// BF16ToF32 returns the float32 whose top 16 bits are b: bfloat16 is the
// upper half of a float32, so the widening is a shift.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToF16 returns the binary16 nearest to f, ties to even. Values at or
// beyond 65520 (half a unit past the largest, 65504) become ±Inf, values
// below 2^-25 become ±0, NaN stays NaN, made quiet, with the top bits of
// its payload.
func F32ToF16(f float32) uint16 {
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

// F32ToBF16 returns the bfloat16 nearest to f, ties to even; finite values
// past the largest bfloat16 by half a unit or more become ±Inf. NaN stays
// NaN, made quiet: a payload only in the low half would otherwise
// truncate to Inf.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	// The rounding carry ripples into the exponent, up to Inf.
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
