// Package scalar holds the scalar float32 functions that package attention,
// internal/kernel and their tests share: Exp32 and Tanh32, the scalar forms
// of the kernels' exp and tanh schemes, and FMA32, a*b+c rounded once as an
// FMA does, so the generic twins give the assembly's bits.
package scalar

import (
	"math"

	"github.com/glancelab/attention/internal/expconst"
)

// Exp32 is the scalar form of the shared exp scheme (see internal/expconst);
// the SIMD kernels compute the same operations lane by lane.
func Exp32(x float32) float32 {
	z := FMA32(x, expconst.InvLn2, expconst.Shift)
	n := z - expconst.Shift
	r := FMA32(n, -expconst.Ln2Hi, x)
	r = FMA32(n, -expconst.Ln2Lo, r)
	e := math.Float32bits(z) << 23

	p := float32(expconst.C6)
	p = FMA32(p, r, expconst.C5)
	p = FMA32(p, r, expconst.C4)
	p = FMA32(p, r, expconst.C3)
	p = FMA32(p, r, expconst.C2)
	p = FMA32(p, r, 1)
	p = FMA32(p, r, 1)

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

// FMA32 returns a*b+c rounded once to float32, the value an FMA instruction
// produces, so the generic exp matches the SIMD paths bit for bit.
//
// a*b is exact in float64 (24+24 bits), so a*b+c rounds once to float64;
// converting that to float32 rounds a second time, which differs from a
// single rounding only when the float64 sum lies exactly halfway between two
// float32 values while the true sum does not. That case is detected and the
// float64 value nudged towards the true sum first (the method of musl's
// fmaf). Valid whenever the result is a normal float32, Inf or NaN, which is
// all the exp scheme needs.
func FMA32(a, b, c float32) float32 {
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

// Tanh32 returns tanh(x) with absolute error below 2^-22 (measured densely
// in tests): 1 - 2/(e^{2|x|}+1) with the sign restored. Below 2^-4 the
// odd Taylor polynomial is used instead, because the subtraction would
// cancel there.
func Tanh32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	return TanhFinish(x, Exp32(2*a))
}

// TanhFinish completes Tanh32(x) given e = e^{2|x|}; the SIMD paths compute
// e for many x at once.
func TanhFinish(x, e float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	var t float32
	if a < 0x1p-4 {
		a2 := float32(a * a)
		// x - x³/3 + 2x⁵/15 - 17x⁷/315: truncation < 2^-33 relative at 2^-4.
		t = a + float32(a*float32(a2*float32(-1.0/3+float32(a2*float32(2.0/15-float32(a2*(17.0/315)))))))
	} else {
		t = 1 - 2/(e+1)
	}
	// t >= 0, or NaN when x is (e is then NaN too): x's sign bit makes it
	// the odd function, tanh(-0) = -0 included.
	return math.Float32frombits(math.Float32bits(t) | math.Float32bits(x)&(1<<31))
}
