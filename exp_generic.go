package attention

import (
	"math"

	"github.com/glancelab/attention/internal/expconst"
)

// exp32 is the scalar form of the shared exp scheme (see internal/expconst);
// the SIMD kernels compute the same operations lane by lane.
func exp32(x float32) float32 {
	z := fma32(x, expconst.InvLn2, expconst.Shift)
	n := z - expconst.Shift
	r := fma32(n, -expconst.Ln2Hi, x)
	r = fma32(n, -expconst.Ln2Lo, r)
	e := math.Float32bits(z) << 23

	p := float32(expconst.C6)
	p = fma32(p, r, expconst.C5)
	p = fma32(p, r, expconst.C4)
	p = fma32(p, r, expconst.C3)
	p = fma32(p, r, expconst.C2)
	p = fma32(p, r, 1)
	p = fma32(p, r, 1)

	if !(n > expconst.SpecialN || n < -expconst.SpecialN) {
		return math.Float32frombits(e+expconst.ExpBias) * p
	}
	return expSpecial(p, n, e)
}

// expSpecial finishes e^x when 2^n is not a normal float32: the scale is
// split as s1·s2 so that each factor is normal and the product rounds once
// (into the subnormal range or to Inf); past SaturateN the result is
// s1·s1, i.e. +Inf or +0, which also handles x = ±Inf and p = NaN.
func expSpecial(p, n float32, e uint32) float32 {
	var b uint32
	if n <= 0 {
		b = expconst.SpecialOffset
	}
	s1 := math.Float32frombits(expconst.SpecialBias + b)
	s2 := math.Float32frombits(e - b)
	if n > expconst.SaturateN || n < -expconst.SaturateN {
		return s1 * s1
	}
	return float32(p*s1) * s2
}
