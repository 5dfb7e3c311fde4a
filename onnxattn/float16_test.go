package onnxattn

import (
	"math"
	"testing"
)

// Every float16 converts to the float32 of the same value (checked in
// float64 from the format's definition) and back to the same bits.
func TestFloat16RoundTrip(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := Float16ToFloat32(h)
		exp, man := int(h>>10)&0x1f, float64(h&0x3ff)
		var want float64
		switch exp {
		case 0:
			want = man * 0x1p-24
		case 0x1f:
			want = math.Inf(1)
			if man != 0 {
				want = math.NaN()
			}
		default:
			want = math.Ldexp(1+man/1024, exp-15)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if math.IsNaN(want) {
			if f == f {
				t.Fatalf("%#04x: %v, want NaN", h, f)
			}
			if back := Float32ToFloat16(f); back&0x7e00 != 0x7e00 || back&0x8000 != h&0x8000 || back&0x1ff != h&0x1ff {
				t.Fatalf("%#04x: NaN came back as %#04x", h, back)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("%#04x: %v, want %v", h, f, want)
		}
		if back := Float32ToFloat16(f); back != h {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
}

// Between two neighbouring float16 values a < b every float32 rounds to the
// nearer one, the midpoint to the one with an even significand; past the
// largest finite value the upper neighbour is Inf.
func TestFloat16Rounding(t *testing.T) {
	next := func(f float32, dir float32) float32 { return math.Nextafter32(f, dir) }
	for i := range 0x7c00 {
		for _, sign := range []uint16{0, 0x8000} {
			lo, hi := uint16(i)|sign, uint16(i+1)|sign
			a, b := float64(Float16ToFloat32(lo)), float64(Float16ToFloat32(hi))
			if hi&0x7fff == 0x7c00 {
				b = math.Copysign(65536, a) // where the exponent range would go on
			}
			mid := float32((a + b) / 2) // exact: 12 significant bits
			if float64(mid) != (a+b)/2 {
				t.Fatalf("midpoint of %v and %v not exact", a, b)
			}
			even := lo
			if lo&1 == 1 {
				even = hi
			}
			away := float32(math.Copysign(math.Inf(1), a))
			if a == 0 {
				away = float32(math.Copysign(1, a))
			}
			cases := []struct {
				x    float32
				want uint16
			}{
				{mid, even},
				{next(mid, 0), lo},
				{next(mid, away), hi},
				{next(float32(a), away), lo},
			}
			for _, c := range cases {
				if got := Float32ToFloat16(c.x); got != c.want {
					t.Fatalf("Float32ToFloat16(%v) = %#04x, want %#04x (between %#04x and %#04x)", c.x, got, c.want, lo, hi)
				}
			}
		}
	}
	specials := []struct {
		x    float32
		want uint16
	}{
		{0x1p-25, 0}, {math.Nextafter32(0x1p-25, 1), 1}, {-0x1p-25, 0x8000}, {0x1p-149, 0},
		{65504, 0x7bff}, {65519.996, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {-1e10, 0xfc00},
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00}, {0x1p-14, 0x0400},
		{float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {1.0009765625, 0x3c01},
	}
	for _, c := range specials {
		if got := Float32ToFloat16(c.x); got != c.want {
			t.Errorf("Float32ToFloat16(%v) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
	if h := Float32ToFloat16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN -> %#04x, not a NaN", h)
	}
}
