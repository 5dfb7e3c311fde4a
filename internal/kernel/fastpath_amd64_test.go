//go:build !purego

package kernel

import (
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// Ordinary inputs must stay on the fast exp kernels: a fallback to the
// special kernel would still be correct, only slower, so only this test
// notices it.
func TestExpFastPathCoversOrdinaryInputs(t *testing.T) {
	testutil.UseImpl(t, "avx2")
	r := testutil.Rand(8)
	for n := 0; n <= 67; n++ {
		x := testutil.Floats(r, n, 80)
		dst := make([]float32, n)
		if k := expFastAVX2(dst, x); k != n {
			t.Fatalf("n=%d: expFastAVX2 did %d elements of ordinary input", n, k)
		}
		for _, m := range []float32{0, 5, 1000, -1000} {
			y := make([]float32, n)
			for i := range y {
				y[i] = x[i] + m
			}
			if _, k := expSumFastAVX2(dst, y, m); k != n {
				t.Fatalf("n=%d m=%v: expSumFastAVX2 did %d elements of ordinary input", n, m, k)
			}
		}
	}
}
