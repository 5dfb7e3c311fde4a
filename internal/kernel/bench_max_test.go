package kernel

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkMax times the row maximum that starts every softmax, from L1.
func BenchmarkMax(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, n := range []int{128, 4096} {
			b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
				x := testutil.Floats(testutil.Rand(5), n, 10)
				b.SetBytes(int64(4 * n))
				var m float32
				for b.Loop() {
					m = Maxf(x)
				}
				testutil.Report(b, 0, float64(n))
				sinkMax = m
			})
		}
	})
}

var sinkMax float32
