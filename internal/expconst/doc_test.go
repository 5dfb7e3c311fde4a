package expconst

import "testing"

// The coefficients must be exactly representable as float32: the generic
// code converts them implicitly and the generators emit their bits.
func TestConstantsAreFloat32(t *testing.T) {
	for _, c := range []float64{InvLn2, Shift, ShiftBias, Ln2Hi, Ln2Lo, C2, C3, C4, C5, C6} {
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
