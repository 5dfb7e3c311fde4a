package kernel

import (
	"math"
	"testing"
	"unsafe"

	"github.com/glancelab/attention/internal/half"
	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// Every binary16 and bfloat16 value widens to the float32 its fields
// describe, computed here from sign, exponent and mantissa with Ldexp.
func TestWiden16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		checkWiden(t, "f16", h, half.F16ToF32(h), fields(h, 10, 15))
		checkWiden(t, "bf16", h, half.BF16ToF32(h), fields(h, 7, 127))
	}
}

// fields returns the value of a 16-bit float with mb mantissa bits and
// exponent bias bias.
func fields(h uint16, mb, bias int) float64 {
	sign := 1.0
	if h>>15 != 0 {
		sign = -1
	}
	eb := 15 - mb
	exp := int(h>>mb) & (1<<eb - 1)
	man := float64(int(h) & (1<<mb - 1))
	switch {
	case exp == 1<<eb-1 && man != 0:
		return math.Copysign(math.NaN(), sign)
	case exp == 1<<eb-1:
		return math.Inf(int(sign))
	case exp == 0:
		return sign * math.Ldexp(man, 1-bias-mb)
	}
	return sign * math.Ldexp(man+float64(int(1)<<mb), exp-bias-mb)
}

func checkWiden(t *testing.T, kind string, h uint16, got float32, want float64) {
	t.Helper()
	if math.IsNaN(want) {
		if got == got || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("%s %#04x: %v (%#x), want a NaN of the same sign", kind, h, got, math.Float32bits(got))
		}
		return
	}
	if math.Float32bits(got) != math.Float32bits(float32(want)) || float64(float32(want)) != want {
		t.Fatalf("%s %#04x: %v (%#x), want %v", kind, h, got, math.Float32bits(got), want)
	}
}

// The kernels widen as f16to32 and bf16to32 do, bit for bit, on every
// implementation: every 16-bit value goes through blendRows with weight 1
// onto -0 (x·1 + -0 is x, and a NaN stays the NaN the widening made,
// quieted as any arithmetic quiets it), in calls of every width a kernel
// cuts its columns into, and through scoreRows against q = [1] (where
// +0 + x is x but for -0, which the generic sum from +0 makes +0 too).
func TestRows16WidenBits(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	kinds := []struct {
		name  string
		f     func(uint16) float32
		blend func([]float32, []float32, []uint16, int)
		score func([]float32, []uint16, int, []float32)
	}{
		{"f16", half.F16ToF32, BlendRowsF16, ScoreRowsF16},
		{"bf16", half.BF16ToF32, BlendRowsBF16, ScoreRowsBF16},
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, kind := range kinds {
			want := func(h uint16, sum bool) uint32 {
				b := math.Float32bits(kind.f(h))
				switch {
				case b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0:
					b |= 1 << 22
				case sum && b == 0x80000000:
					b = 0
				}
				return b
			}
			acc := make([]float32, len(all))
			for i := range acc {
				acc[i] = float32(math.Copysign(0, -1))
			}
			widths := []int{32, 16, 8, 4, 3, 2, 1, 67}
			for lo, i := 0, 0; lo < len(all); i++ {
				hi := min(len(all), lo+widths[i%len(widths)])
				kind.blend(acc[lo:hi], []float32{1}, all[lo:hi], hi-lo)
				lo = hi
			}
			dst := make([]float32, len(all))
			kind.score(dst, all, 1, []float32{1})
			for i, h := range all {
				if got, w := math.Float32bits(acc[i]), want(h, false); got != w {
					t.Fatalf("%s %#04x: blendRows widens it to %#08x, want %#08x", kind.name, h, got, w)
				}
				if got, w := math.Float32bits(dst[i]), want(h, true); got != w {
					t.Fatalf("%s %#04x: scoreRows widens it to %#08x, want %#08x", kind.name, h, got, w)
				}
			}
		}
	})
}

// The widening kernels give f16to32's and bf16to32's bits for every
// 16-bit value on every implementation, in calls of every width a kernel
// cuts its elements into: a binary16 NaN quieted with its sign and
// payload, a bfloat16 one left as it is, signalling or not.
func TestWiden16KernelBits(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	kinds := []struct {
		name   string
		f      func(uint16) float32
		kernel func([]float32, []uint16)
	}{
		{"f16", half.F16ToF32, WidenF16},
		{"bf16", half.BF16ToF32, WidenBF16},
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, kind := range kinds {
			dst := make([]float32, len(all))
			widths := []int{64, 32, 16, 8, 4, 3, 2, 1, 67}
			for lo, i := 0, 0; lo < len(all); i++ {
				hi := min(len(all), lo+widths[i%len(widths)])
				kind.kernel(dst[lo:hi], all[lo:hi])
				lo = hi
			}
			for i, h := range all {
				if got, want := math.Float32bits(dst[i]), math.Float32bits(kind.f(h)); got != want {
					t.Fatalf("%s %#04x: widens to %#08x, want %#08x", kind.name, h, got, want)
				}
			}
		}
	})
}

// halves returns n 16-bit elements where the placement says: against a
// guard page, or starting an odd or even number of elements into a buffer
// (the kernels only read them).
func (a *kernelArgs) halves(n int) []uint16 {
	a.slices++
	switch a.pl.guard {
	case 1, -1:
		f := testutil.Guarded(a.t, (n+1)/2, a.pl.guard == 1)
		h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(f))), 2*len(f))
		if a.pl.guard == 1 {
			return h[len(h)-n:]
		}
		return h[:n]
	}
	off := (a.pl.off + 3*a.slices) % 16
	return make([]uint16, off+n+16)[off : off+n : off+n]
}

// f16s returns n binary16 values of magnitude below 4, subnormals among
// them, with about one in sixteen a special value.
func (a *kernelArgs) f16s(n int) []uint16 {
	h := a.halves(n)
	specials := []uint16{0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd55, 0x0001, 0x83ff, 0x7bff}
	for i := range h {
		h[i] = uint16(a.r.IntN(2))<<15 | uint16(a.r.IntN(17))<<10 | uint16(a.r.IntN(1024))
		if a.r.IntN(16) == 0 {
			h[i] = specials[a.r.IntN(len(specials))]
		}
	}
	return h
}

// bf16s returns n bfloat16 values, the top halves of floats in ±3, with
// about one in sixteen a special value; none near the largest finite one,
// whose products overflow in one order of the sums and not in another.
func (a *kernelArgs) bf16s(n int) []uint16 {
	h := a.halves(n)
	specials := []uint16{0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffa5, 0x0001, 0x807f, 0x0080}
	for i := range h {
		h[i] = uint16(math.Float32bits(testutil.Floats(a.r, 1, 3)[0]) >> 16)
		if a.r.IntN(16) == 0 {
			h[i] = specials[a.r.IntN(len(specials))]
		}
	}
	return h
}

func widen(h []uint16, f func(uint16) float32) []float32 {
	x := make([]float32, len(h))
	for i, v := range h {
		x[i] = f(v)
	}
	return x
}

// score16Case is the case of a 16-bit score-rows kernel: n columns, as
// scoreRows's case, of 1 to 20 rows, so that every block of rows and
// every count of single rows after them is met.
func score16Case(gen func(*kernelArgs, int) []uint16, f func(uint16) float32, kernel func([]float32, []uint16, int, []float32)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		rows, stride := 1+n%20, n+3
		if n%8 == 3 {
			rows = aheadRows // past the rows the kernels ask for ahead
		}
		k, q, dst := gen(a, rowsLen(rows, stride, n)), a.floats(n, 2), a.floats(rows, 1)
		kernel(dst, k, stride, q)
		kf := widen(k, f)
		bound := make([]float64, rows)
		for i := range bound {
			bound[i] = reference.DotBound(n, absDot(kf[i*stride:i*stride+n], q))
		}
		return []result{{"dst", dst, bound}}
	}
}

// blend16Case is the case of a 16-bit blend-rows kernel: five rows of n
// columns, as blendRows's case.
func blend16Case(gen func(*kernelArgs, int) []uint16, f func(uint16) float32, kernel func([]float32, []float32, []uint16, int)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		rows, stride := 5, n+2
		if n%8 == 3 {
			rows = aheadRows
		}
		acc, w, v := a.floats(n, 2), a.floats(rows, 1), gen(a, rowsLen(rows, stride, n))
		vf := widen(v, f)
		bound := make([]float64, n)
		for j := range bound {
			abs := math.Abs(float64(acc[j]))
			for i := range rows {
				abs += math.Abs(float64(w[i]) * float64(vf[i*stride+j]))
			}
			bound[j] = reference.Gamma(rows+1)*abs + float64(rows+1)*0x1p-149
		}
		kernel(acc, w, v, stride)
		return []result{{"acc", acc, bound}}
	}
}

// widen16Case is the case of a widening kernel: n elements, which every
// implementation must widen to the same bits.
func widen16Case(gen func(*kernelArgs, int) []uint16, kernel func([]float32, []uint16)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		src, dst := gen(a, n), a.floats(n, 1)
		kernel(dst, src)
		return []result{{"dst", dst, nil}}
	}
}

func init() {
	kernelCases["widenF16"] = widen16Case((*kernelArgs).f16s, WidenF16)
	kernelCases["widenBF16"] = widen16Case((*kernelArgs).bf16s, WidenBF16)
	kernelCases["scoreRowsF16"] = score16Case((*kernelArgs).f16s, half.F16ToF32, ScoreRowsF16)
	kernelCases["scoreRowsBF16"] = score16Case((*kernelArgs).bf16s, half.BF16ToF32, ScoreRowsBF16)
	kernelCases["blendRowsF16"] = blend16Case((*kernelArgs).f16s, half.F16ToF32, BlendRowsF16)
	kernelCases["blendRowsBF16"] = blend16Case((*kernelArgs).bf16s, half.BF16ToF32, BlendRowsBF16)
}
