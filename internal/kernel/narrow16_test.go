package kernel

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/glancelab/attention/internal/half"
	"github.com/glancelab/attention/internal/testutil"
)

// The narrowing kernels must give the bits of the scalar conversions,
// f32ToF16 and f32ToBF16 (whose own tests, in kvcache_convert_test.go,
// pin them to the formats' definitions), on every input.

// narrowKernels are the kernels under test with the scalar conversion
// each must agree with.
var narrowKernels = []struct {
	name   string
	kernel func([]uint16, []float32)
	scalar func(float32) uint16
}{
	{"f16", NarrowF16, half.F32ToF16},
	{"bf16", NarrowBF16, half.F32ToBF16},
}

// narrowScan runs every float32 whose bits are lo, lo+step, … below hi
// through each narrowing kernel, in batches shared out among GOMAXPROCS
// goroutines, and fails on the first one whose bits differ from the
// scalar conversion's.
func narrowScan(t *testing.T, lo, hi, step uint64) {
	t.Helper()
	workers := runtime.GOMAXPROCS(0)
	const batch = 4096
	bad := make([]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			x := make([]float32, batch)
			h := make([]uint16, batch)
			for b := lo + uint64(w)*batch*step; b < hi; b += uint64(workers) * batch * step {
				n := 0
				for v := b; v < hi && n < batch; v += step {
					x[n] = math.Float32frombits(uint32(v))
					n++
				}
				for _, k := range narrowKernels {
					k.kernel(h[:n], x[:n])
					for i := range n {
						if want := k.scalar(x[i]); h[i] != want {
							bad[w] = fmt.Sprintf("%s: %#08x narrows to %#04x, scalar %#04x", k.name, math.Float32bits(x[i]), h[i], want)
							return
						}
					}
				}
			}
		}(w)
	}
	wg.Wait()
	for _, b := range bad {
		if b != "" {
			t.Fatal(b)
		}
	}
}

// TestNarrowExhaustive checks all 2^32 float32 inputs on every
// implementation (one alone with -run 'TestNarrowExhaustive/impl=NAME').
// On amd64 it also checks the scalar binary16 rounding against the
// hardware's, VCVTPS2PH being an independent implementation of it.
// Run with -exhaustive or ATTENTION_EXHAUSTIVE=1: 10 to 20 s per
// implementation on two Zen 5 cores, most of it the scalar reference.
func TestNarrowExhaustive(t *testing.T) {
	if !*exhaustive {
		t.Skip("needs -exhaustive or ATTENTION_EXHAUSTIVE=1")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		narrowScan(t, 0, 1<<32, 1)
	})
}

// TestNarrowSampled is the exhaustive test's sample for every run: one
// input in 4099 (every sign, exponent and high mantissa pattern) and
// every input whose low 16 bits are where the rounding turns, for every
// top 16 bits (tieInputs).
func TestNarrowSampled(t *testing.T) {
	step := uint64(4099)
	if testing.Short() {
		step = 65537
	}
	x := tieInputs()
	h := make([]uint16, len(x))
	testutil.ForEachImpl(t, func(t *testing.T) {
		narrowScan(t, 0, 1<<32, step)
		for _, k := range narrowKernels {
			k.kernel(h, x)
			for i, v := range x {
				if want := k.scalar(v); h[i] != want {
					t.Fatalf("%s: %#08x narrows to %#04x, scalar %#04x", k.name, math.Float32bits(v), h[i], want)
				}
			}
		}
	})
}

// tieInputs returns, for every value of the top 16 bits, the inputs whose
// low 16 bits are 2^j - 1, 2^j and 2^j + 1 for j < 16, and 0xffff: a
// value of either format, the points where it rounds up, ties and their
// neighbours, for every shift binary16 subnormals round by that falls in
// the low half (the others are covered by the top 16 bits taking every
// value).
func tieInputs() []float32 {
	var low []uint32
	for j := range 16 {
		low = append(low, 1<<j-1, 1<<j, 1<<j+1)
	}
	low = append(low, 0xffff)
	x := make([]float32, 0, 1<<16*len(low))
	for top := range uint32(1 << 16) {
		for _, l := range low {
			x = append(x, math.Float32frombits(top<<16|l))
		}
	}
	return x
}

func TestNarrowSpecials(t *testing.T) {
	x := []float32{
		0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7f800001), math.Float32frombits(0xff800001), // signalling, payload in the low half
		math.Float32frombits(0x7fc00000), math.Float32frombits(0xffffffff), math.Float32frombits(0x7fbfffff),
		math.Float32frombits(0xff812345), math.Float32frombits(0xffc02000),
		65504, 65519.998, 65520, -65520, math.MaxFloat32, -math.MaxFloat32,
		0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1.8p-24, 0x1p-14, 0x1.ff8p-15, 0x1.ffcp-15,
		math.SmallestNonzeroFloat32, -0x1p-140, 0x1p-133, 0x1p-126, 0x1.fffffcp-127,
		1, 1 + 0x1p-11, 1 + 0x3p-11, 1 + 0x1p-8, 1 + 0x3p-8, 2049, 0x1.fffffep127,
	}
	h := make([]uint16, len(x))
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, k := range narrowKernels {
			// Each value at every lane of a full vector and of a tail.
			for lead := range 17 {
				for _, v := range x {
					src := make([]float32, lead+1)
					for i := range src {
						src[i] = 1
					}
					src[lead] = v
					dst := h[:len(src):len(src)]
					k.kernel(dst, src)
					if want := k.scalar(v); dst[lead] != want {
						t.Fatalf("%s: %#08x at %d of %d narrows to %#04x, scalar %#04x", k.name, math.Float32bits(v), lead, len(src), dst[lead], want)
					}
				}
			}
		}
	})
}

// outHalves returns n 16-bit elements for a kernel to write, placed as
// halves places them, with sentinels around the offset placements that a
// check after the call verifies.
func (a *kernelArgs) outHalves(n int) []uint16 {
	if a.pl.guard != 0 {
		return a.halves(n)
	}
	a.slices++
	const sentinel = 0xa5c3
	off := (a.pl.off + 3*a.slices) % 16
	whole := make([]uint16, off+n+16)
	for i := range whole {
		whole[i] = sentinel
	}
	a.checks = append(a.checks, func() {
		for i, v := range whole {
			if (i < off || i >= off+n) && v != sentinel {
				a.t.Fatalf("element %d outside the slice [%d,%d) was overwritten: %#04x", i, off, off+n, v)
			}
		}
	})
	return whole[off : off+n : off+n]
}

// narrowInputs returns n floats for the narrowing kernels: values in the
// range of binary16 and around its overflow and subnormal thresholds,
// arbitrary bit patterns (NaNs with any payload, float32 subnormals) and
// the usual specials.
func (a *kernelArgs) narrowInputs(n int) []float32 {
	x := a.place(n)
	for i := range x {
		switch a.r.IntN(4) {
		case 0:
			x[i] = math.Float32frombits(a.r.Uint32())
		case 1:
			x[i] = float32(math.Ldexp(2*a.r.Float64()-1, a.r.IntN(45)-27))
		case 2:
			x[i] = testutil.Specials[a.r.IntN(len(testutil.Specials))]
		default:
			x[i] = (2*a.r.Float32() - 1) * 4
		}
	}
	return x
}

func narrowCase(kernel func([]uint16, []float32)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		src, dst := a.narrowInputs(n), a.outHalves(n)
		kernel(dst, src)
		bits := make([]float32, n)
		for i, h := range dst {
			bits[i] = math.Float32frombits(uint32(h)) // compared bit for bit
		}
		return []result{{"dst", bits, nil}}
	}
}

func init() {
	kernelCases["narrowF16"] = narrowCase(NarrowF16)
	kernelCases["narrowBF16"] = narrowCase(NarrowBF16)
}
