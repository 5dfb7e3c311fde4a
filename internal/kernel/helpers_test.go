package kernel

import (
	"flag"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/glancelab/attention/internal/calib"
	"github.com/glancelab/attention/internal/testutil"
)

// Test helpers of this package; those shared with package attention's tests
// are in internal/testutil.

var exhaustive = flag.Bool("exhaustive", os.Getenv("ATTENTION_EXHAUSTIVE") != "",
	"check the conversions on all 2^32 float32 inputs (minutes; also ATTENTION_EXHAUSTIVE=1)")

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

// reportPeak is report for flops FLOPs per op, and their fraction of the
// FMA peak measured now, with the timer stopped (see BenchmarkBlockKernels).
func reportPeak(b *testing.B, flops float64) {
	testutil.Report(b, flops, 0)
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

// unsafeInt8s views bytes as int8s.
func unsafeInt8s(b []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}
