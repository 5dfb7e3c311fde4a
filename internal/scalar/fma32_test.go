package scalar

import (
	"math"
	"math/big"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// fmaExact rounds a*b+c once to float32 using exact big.Float arithmetic.
func fmaExact(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

func TestFMA32(t *testing.T) {
	r := testutil.Rand(3)
	check := func(a, b, c float32) {
		if got, want := FMA32(a, b, c), fmaExact(a, b, c); math.Float32bits(got) != math.Float32bits(want) && want != 0 {
			t.Fatalf("fma32(%v, %v, %v) = %v, want %v", a, b, c, got, want)
		}
	}
	for range 200000 {
		a, b := r.Float32()*4-2, r.Float32()*4-2
		check(a, b, r.Float32()*4-2)
		// c chosen so that a*b+c lands near a float32 rounding midpoint in
		// float64, where double rounding would bite.
		p := float64(a) * float64(b)
		c := float32(-p)
		check(a, b, c)
		check(a, b, math.Nextafter32(c, 10))
	}
	// Crafted double-rounding case: a*b = 1 + 2^-24 + 2^-60 style values.
	a := float32(1 + 0x1p-12)
	b := float32(1 + 0x1p-12)
	check(a, b, -0x1p-24)
	check(a, b, float32(-0x1p-24-0x1p-47))
	check(a, b, float32(math.Inf(1)))
	if got := FMA32(float32(math.NaN()), 1, 1); got == got {
		t.Fatal("fma32(NaN) is not NaN")
	}
}
