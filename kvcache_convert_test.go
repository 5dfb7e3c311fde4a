package attention

import (
	"math"
	"testing"

	"github.com/glancelab/attention/internal/half"
)

// f16Value is binary16's definition, in float64: an independent reading
// of the bits to check f16to32 against.
func f16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, man := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(man, -24)
	case 0x1f:
		if man != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+man, exp-25)
}

func TestF16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := half.F16ToF32(h)
		want := f16Value(h)
		if math.IsNaN(want) {
			// Widening quiets a NaN, as VCVTPH2PS does, and keeps its payload.
			if !isNaN32(f) || math.Float32bits(f)&0x1fff != 0 || uint16(math.Float32bits(f)>>13)&0x3ff != h&0x3ff|0x200 {
				t.Fatalf("f16to32(%#04x) = %#08x, want the quiet NaN with its payload", h, math.Float32bits(f))
			}
			if got := half.F32ToF16(f); got != h|0x0200 {
				t.Fatalf("f32ToF16(f16to32(%#04x)) = %#04x, want the quiet NaN %#04x", h, got, h|0x0200)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("f16to32(%#04x) = %g, want %g", h, f, want)
		}
		if got := half.F32ToF16(f); got != h {
			t.Fatalf("f32ToF16(f16to32(%#04x)) = %#04x", h, got)
		}
	}
}

func TestBF16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := half.BF16ToF32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("bf16to32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		want := h
		if isNaN32(f) {
			want |= 0x0040
		}
		if got := half.F32ToBF16(f); got != want {
			t.Fatalf("f32ToBF16(bf16to32(%#04x)) = %#04x, want %#04x", h, got, want)
		}
	}
}

// checkTies narrows, for every two neighbours lo < hi of a 16-bit format
// (positive and negative), their midpoint and the float32 values either
// side of it: the midpoint goes to the even one, the others to the nearer.
// Midpoints have at most 12 significant bits, so they are float32 values.
func checkTies(t *testing.T, name string, last uint16, widen func(uint16) float32, narrow func(float32) uint16) {
	t.Helper()
	for lo := uint16(0); lo <= last; lo++ {
		for _, sign := range []uint16{0, 0x8000} {
			a, b := lo|sign, (lo+1)|sign
			mid64 := (float64(widen(a)) + float64(widen(b))) / 2
			if lo == last { // b is Inf: a unit past a stands in for it
				below := float64(widen((lo - 1) | sign))
				mid64 = float64(widen(a)) + (float64(widen(a))-below)/2
			}
			mid := float32(mid64)
			if float64(mid) != mid64 {
				t.Fatalf("%s: midpoint of %#04x and %#04x is not a float32", name, a, b)
			}
			even := a
			if a&1 == 1 {
				even = b
			}
			toA := math.Nextafter32(mid, widen(a))
			toB := math.Nextafter32(mid, widen(b))
			for _, c := range []struct {
				x    float32
				want uint16
			}{{mid, even}, {toA, a}, {toB, b}} {
				if got := narrow(c.x); got != c.want {
					t.Fatalf("%s(%g = %#08x) = %#04x, want %#04x", name, c.x, math.Float32bits(c.x), got, c.want)
				}
			}
		}
	}
}

// All neighbours, subnormals included; the last pair is the largest finite
// value and Inf, so the overflow threshold is a tie to even (Inf).
func TestF16Ties(t *testing.T)  { checkTies(t, "f32ToF16", 0x7bff, half.F16ToF32, half.F32ToF16) }
func TestBF16Ties(t *testing.T) { checkTies(t, "f32ToBF16", 0x7f7f, half.BF16ToF32, half.F32ToBF16) }

func TestF16Specials(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000},
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{math.Float32frombits(0x7f800001), 0x7e00}, // a signalling NaN becomes quiet
		{math.Float32frombits(0xffc02000), 0xfe01}, // sign and top payload kept
		{65504, 0x7bff}, {65519.998, 0x7bff}, {65520, 0x7c00}, {-65520, 0xfc00},
		{math.MaxFloat32, 0x7c00}, {1e10, 0x7c00},
		{0x1p-24, 0x0001}, {0x1p-25, 0}, {0x1.000002p-25, 0x0001}, {0x1.8p-24, 0x0002},
		{0x1p-14, 0x0400}, {0x1.ff8p-15, 0x03ff}, {0x1.ffcp-15, 0x0400}, // rounding up into the smallest normal
		{math.SmallestNonzeroFloat32, 0}, {-0x1p-140, 0x8000},
		{1, 0x3c00}, {1 + 0x1p-11, 0x3c00}, {1 + 0x3p-11, 0x3c02}, {2049, 0x6800},
	} {
		if got := half.F32ToF16(c.x); got != c.want {
			t.Errorf("f32ToF16(%g) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
}

func TestBF16Specials(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000},
		{float32(math.Inf(1)), 0x7f80}, {float32(math.Inf(-1)), 0xff80},
		{math.Float32frombits(0x7f800001), 0x7fc0}, // the payload is all in the low half
		{math.Float32frombits(0xff812345), 0xffc1},
		{math.MaxFloat32, 0x7f80}, {-math.MaxFloat32, 0xff80},
		{math.SmallestNonzeroFloat32, 0}, {0x1p-133, 0x0001},
		{1, 0x3f80}, {1 + 0x1p-8, 0x3f80}, {1 + 0x3p-8, 0x3f82},
	} {
		if got := half.F32ToBF16(c.x); got != c.want {
			t.Errorf("f32ToBF16(%g) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
}

func isNaN32(f float32) bool { return f != f }
