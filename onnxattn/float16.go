package onnxattn

import "math"

// Float16ToFloat32 returns the value of the IEEE 754 half-precision number
// with bits h. Every float16 is a float32, so the conversion is exact:
// subnormals, ±0, ±Inf and NaN payloads included.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0: // ±0 and subnormals: man·2^-24
		v := float32(man) * 0x1p-24
		return math.Float32frombits(sign | math.Float32bits(v))
	case 0x1f: // Inf and NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// Float32ToFloat16 returns the float16 nearest to f, ties to even: values
// beyond the largest float16 (65504) by half a unit or more become ±Inf,
// small values become float16 subnormals or ±0, ±Inf stay ±Inf and NaN
// stays NaN (quiet, with the top bits of its payload).
func Float32ToFloat16(f float32) uint16 {
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
	e := exp - 127 + 15 // biased float16 exponent
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		// A float16 subnormal (or 0): the significand with its implicit
		// bit, in units of 2^-24. Below 2^-25 everything rounds to 0
		// (float32 subnormals included).
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem, half := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++ // may carry into the smallest normal: still the right bits
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent is right, up to Inf
	}
	return sign | uint16(h)
}
