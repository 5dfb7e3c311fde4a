package kernel

import (
	"flag"
	"math"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/glancelab/attention/internal/calib"
	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/testutil"
)

// Test helpers, the same as those of package attention's tests.

// decodeFloats turns each byte into a value: mostly small multiples of
// 1/16 in [-7.8, 8], with the top byte values reserved for the special
// values every kernel must survive.
func decodeFloats(b []byte) []float32 {
	specials := []float32{
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.Copysign(0, -1)), 0x1p-140, 3e38,
	}
	x := make([]float32, len(b))
	for i, v := range b {
		if k := int(v) - (256 - len(specials)); k >= 0 {
			x[i] = specials[k]
		} else {
			x[i] = float32(int(v)-125) / 16
		}
	}
	return x
}

// eachImpl runs f under every available implementation.
func eachImpl(f func(name string)) {
	defer impl.Reset()
	for _, name := range impl.List() {
		impl.Select(name)
		f(name)
	}
}

var exhaustive = flag.Bool("exhaustive", os.Getenv("ATTENTION_EXHAUSTIVE") != "",
	"check the conversions on all 2^32 float32 inputs (minutes; also ATTENTION_EXHAUSTIVE=1)")

// fill returns a slice of length n at offset off holding data drawn from
// kind: random values, or random values salted with special values.
func fill(seed uint64, n, off int, scale float32, specials bool) (x, whole []float32) {
	x, whole = testutil.Offset(n, off)
	r := testutil.Rand(seed)
	copy(x, testutil.Floats(r, n, scale))
	if specials && n > 0 {
		for k := 0; k < 1+n/16; k++ {
			x[r.IntN(n)] = testutil.Specials[r.IntN(len(testutil.Specials))]
		}
	}
	return x, whole
}

// lengths covers empty, every tail up to well past one unrolled SIMD block,
// and sizes where blocking and accumulator order matter.
var lengths = func() []int {
	var n []int
	for i := 0; i <= 67; i++ {
		n = append(n, i)
	}
	return append(n, 1000, 4099)
}()

// offsets start slices off 32-byte alignment (Go guarantees only 4).
var offsets = []int{0, 1, 2, 3, 4, 5, 6, 7}

// firstDiff returns the first index where a and b differ in bits, or −1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// guardedBytes is testutil.Guarded for n bytes, zeroed.
func guardedBytes(t *testing.T, n int, after bool) []byte {
	f := testutil.Guarded(t, (n+3)/4, after)
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
	if after {
		b = b[len(b)-n:]
	} else {
		b = b[:n]
	}
	clear(b)
	return b
}

// identical fails unless got and want hold the same bits.
func identical(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), want %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// overflowed reports whether a float32 computation of a sum with these
// exact and absolute values may legitimately give Inf or NaN instead: an
// intermediate beyond MaxFloat32, or Inf/NaN operands (∞−∞).
func overflowed(want, abs float64) bool {
	return math.IsNaN(want) || math.IsInf(abs, 0) || math.IsNaN(abs) || abs > math.MaxFloat32/2
}

// report adds GFLOP/s for flops floating-point operations per iteration
// and ns per element for elems elements per iteration.
func report(b *testing.B, flops, elems float64) {
	sec := b.Elapsed().Seconds()
	if sec == 0 {
		return
	}
	if flops > 0 {
		b.ReportMetric(flops*float64(b.N)/sec/1e9, "GFLOP/s")
	}
	if elems > 0 {
		b.ReportMetric(sec*1e9/(elems*float64(b.N)), "ns/elem")
	}
}

// reportPeak is report for flops FLOPs per op, and their fraction of the
// FMA peak measured now, with the timer stopped (see BenchmarkBlockKernels).
func reportPeak(b *testing.B, flops float64) {
	report(b, flops, 0)
	sec := b.Elapsed().Seconds()
	b.StopTimer()
	peak := peakProbe().Best(3, 5*time.Millisecond)
	if sec > 0 && peak > 0 {
		b.ReportMetric(flops*float64(b.N)/sec/1e9/peak, "peak-fraction")
	}
}

// scoreStreamBytes is the size of K's rows from which the AVX2 score
// kernel takes its prefetching loops (the generator's constant of the same
// name); tests use it to reach those loops.
const scoreStreamBytes = 128 << 10

// peakProbe measures the FMA peak for reportPeak; one probe, so that it is
// sized once.
var peakProbe = sync.OnceValue(func() *calib.Probe { return calib.FMAProbe(1) })

// blockTile is the keys of one tile of package attention's block path
// (its blockTile), the size the small kernels' benchmarks take.
const blockTile = 128
