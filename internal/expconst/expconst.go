// Package expconst holds the constants of the float32 exp scheme shared by
// the generic Go kernels and the assembly generators, so that every path
// evaluates the same polynomial with the same range reduction.
//
// The scheme (one for all paths):
//
//	z     = fma(x, InvLn2, Shift)          // n = round(x/ln2) sits in z's low mantissa bits
//	n     = z - Shift
//	r     = fma(n, -Ln2Hi, x)              // exact: Ln2Hi has 15 significant bits
//	r     = fma(n, -Ln2Lo, r)              // |r| <= ln2/2 (+ a few ulp)
//	p     = C6; p = fma(p, r, C5); … p = fma(p, r, C2)
//	p     = fma(p, r, 1); p = fma(p, r, 1) // p ≈ e^r, Horner in FMA
//	scale = bits(z << 23 + ExpBias)        // 2^n, valid while |n| <= SpecialN
//	e^x   = scale * p                      // exact: scale is a power of two
//
// When |n| > SpecialN, 2^n is not a normal float32 and the product is
// split into two scales (see SpecialOffset); when |n| > SaturateN the
// result is +Inf or +0 whatever the polynomial says, which also covers ±Inf
// inputs (for which r is NaN).
//
// The polynomial coefficients are the degree-6 minimax set published in
// Arm's optimized-routines (expf_1u); with the final multiply exact, the
// total error is below 0.87 ulp wherever e^x is a normal float32. The
// exhaustive test in the root package checks every float32 input.
package expconst

const (
	// InvLn2 is 1/ln2 rounded to float32.
	InvLn2 = 0x1.715476p+0
	// Shift is 1.5·2^23: adding it rounds to an integer held in the low
	// mantissa bits (round-to-nearest-even, like FRINTN/VROUNDPS mode 0).
	Shift = 0x1.8p23
	// Ln2Hi + Ln2Lo ≈ ln2 with Ln2Hi·n exact for |n| < 2^9.
	Ln2Hi = 0x1.62e4p-1
	Ln2Lo = 0x1.7f7d1cp-20

	// Polynomial coefficients: e^r ≈ 1 + r + C2 r² + C3 r³ + C4 r⁴ + C5 r⁵ + C6 r⁶.
	C2 = 0x1.fffff4p-2
	C3 = 0x1.555430p-3
	C4 = 0x1.555af0p-5
	C5 = 0x1.12718ep-7
	C6 = 0x1.6a6000p-10

	// ExpBias is the bit pattern of 1.0f: (n << 23) + ExpBias is 2^n.
	ExpBias = 0x3f800000
	// FastN bounds the SIMD kernels' fast path, which forms scale * p as
	// bits(p) + (n << 23): an integer add onto p's exponent field in place
	// of the multiply (z << 23 is n << 23 modulo 2^32, with z from Shift).
	// p ≈ e^r lies in [0.70, 1.42], whose exponent field is 126 or 127, so
	// for |n| <= FastN the sum's field stays in [1, 252]: p·2^n is normal,
	// the multiply would be exact, and the two agree bit for bit. At n = -126
	// the product can be subnormal, which only the multiply rounds right.
	FastN = 125
	// SpecialN: for |n| above it 2^n is not a normal float32.
	SpecialN = 126
	// SaturateN: for |n| above it e^x is +Inf (n > 0) or +0 (n < 0),
	// computed as s1·s1 (2^127·2^127 or 2^-123·2^-123).
	SaturateN = 192
	// SpecialBias is 2^127 as float32 bits: s1 when n > 0.
	SpecialBias = 0x7f000000
	// SpecialOffset moves 2^127 to 2^-123 (wrapping add) when n <= 0; it is
	// subtracted from scale's bits to form s2, so that s1·s2 = 2^n.
	SpecialOffset = 0x83000000
)
