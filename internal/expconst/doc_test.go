package expconst

import (
	"math"
	"testing"
)

// The coefficients must be exactly representable as float32: the generic
// code converts them implicitly and the generators emit their bits.
func TestConstantsAreFloat32(t *testing.T) {
	for _, c := range []float64{InvLn2, Shift, Ln2Hi, Ln2Lo, C2, C3, C4, C5, C6} {
		if float64(float32(c)) != c {
			t.Errorf("%v (%x) is not a float32", c, c)
		}
	}
	// Ln2Hi·n must be exact for every |n| <= SaturateN+1 (at most 24 bits).
	for n := -SaturateN - 1; n <= SaturateN+1; n++ {
		p := float64(n) * Ln2Hi
		if float64(float32(p)) != p {
			t.Fatalf("Ln2Hi·%d = %v is inexact in float32", n, p)
		}
	}
}

// The fast paths' integer add onto p's exponent field is the exact product
// p·2^n for every |n| <= FastN and every p the polynomial can return: e^r
// for |r| a little above ln2/2 lies well inside [0.70, 1.42].
func TestFastScaleIsExact(t *testing.T) {
	lo, hi := math.Float32bits(0.70), math.Float32bits(1.42)
	for n := -FastN; n <= FastN; n++ {
		for b := lo; b <= hi; b += 997 {
			p := math.Float32frombits(b)
			got := math.Float32frombits(b + uint32(int32(n)<<23))
			if want := float32(math.Ldexp(float64(p), n)); got != want {
				t.Fatalf("p=%v n=%d: %v, want %v", p, n, got, want)
			}
		}
	}
}
