package attention

import "math"

// fma32 returns a*b+c rounded once to float32, the value an FMA instruction
// produces, so the generic exp matches the SIMD paths bit for bit.
//
// a*b is exact in float64 (24+24 bits), so a*b+c rounds once to float64;
// converting that to float32 rounds a second time, which differs from a
// single rounding only when the float64 sum lies exactly halfway between two
// float32 values while the true sum does not. That case is detected and the
// float64 value nudged towards the true sum first (the method of musl's
// fmaf). Valid whenever the result is a normal float32, Inf or NaN, which is
// all the exp scheme needs.
func fma32(a, b, c float32) float32 {
	xy := float64(a) * float64(b)
	z := float64(c)
	s := xy + z
	bits := math.Float64bits(s)
	if bits&0x1fffffff != 0x10000000 || bits>>52&0x7ff == 0x7ff || (s-xy == z && s-z == xy) {
		return float32(s)
	}
	// Halfway and inexact: the rounding error of the float64 sum says which
	// way the true value lies.
	var err float64
	neg := bits>>63 != 0
	if neg == (z > xy) {
		err = xy - s + z
	} else {
		err = z - s + xy
	}
	if neg == (err < 0) {
		bits++
	} else {
		bits--
	}
	return float32(math.Float64frombits(bits))
}
