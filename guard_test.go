package attention

import (
	"math"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// TestKernelsStayInBounds runs the exported kernels, and the exported
// family's kernels beneath them, of every implementation on slices that end
// exactly at an inaccessible page, and on slices that start exactly after
// one: a single element read or written outside the slices crashes the test
// binary. internal/kernel's tests do the same for its kernels.
func TestKernelsStayInBounds(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, after := range []bool{true, false} {
			for n := 0; n <= 67; n++ {
				g := func() []float32 {
					x := testutil.Guarded(t, n, after)
					for i := range x {
						x[i] = float32(i%7) - 3
					}
					return x
				}
				x, y, dst := g(), g(), g()
				_ = Dot(x, y)
				Axpy(0.5, x, y)
				Exp(dst, x)
				Softmax(dst, x)
				_ = maxf(x)
				_ = expSum(dst, x, 1)
				scale(2, dst)
				// Masked lanes take the exp kernels' second try (every
				// third), and the special kernel where nothing else is.
				for _, every := range []int{3, 1} {
					for i := range x {
						if i%every == 0 {
							x[i] = float32(math.Inf(-1))
						}
					}
					Exp(dst, x)
					Softmax(dst, x)
					_ = expSum(dst, x, 1)
				}
			}
		}
	})
}
