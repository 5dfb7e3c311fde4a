package kernel

import (
	"math"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// TestKernelsStayInBounds runs the element-wise and row kernels of every
// implementation on slices that end exactly at an inaccessible page, and on
// slices that start exactly after one: a single element read or written
// outside the slices crashes the test binary. (The block, 16-bit,
// multi-row and other kernels meet guard pages in their own tests and in
// TestKernelTable.)
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
				Expv(dst, x)
				_ = Maxf(x)
				_ = ExpSum(dst, x, 1)
				Scale(2, dst)
				// Masked lanes take the exp kernels' second try (every
				// third), and the special kernel where nothing else is.
				for _, every := range []int{3, 1} {
					for i := range x {
						if i%every == 0 {
							x[i] = float32(math.Inf(-1))
						}
					}
					Expv(dst, x)
					_ = ExpSum(dst, x, 1)
				}

				// Row kernels: rows of d = n columns packed (stride d) and
				// padded (stride d+3), the last row ending at the guard.
				for _, pad := range []int{0, 3} {
					for _, rows := range []int{1, 3, 8, 9, 13} {
						stride := n + pad
						k := testutil.Guarded(t, (rows-1)*stride+n, after)
						out := testutil.Guarded(t, rows, after)
						ScoreRows(out, k, stride, x)
						w := testutil.Guarded(t, rows, after)
						BlendRows(dst, w, k, stride)
					}
				}
			}
			// A K of 128 KiB or more takes the AVX2 score kernel's
			// prefetching loops, which prefetch past the end of k; with a
			// multiple of eight rows the last row read by those loops
			// ends at the guard.
			for _, d := range []int{67, 128} {
				for _, shape := range [][2]int{{0, 0}, {0, 5}, {3, 0}, {3, 5}} {
					pad, extra := shape[0], shape[1]
					rows, stride := (scoreStreamBytes/(4*d)+7)/8*8+extra, d+pad
					k := testutil.Guarded(t, (rows-1)*stride+d, after)
					q := testutil.Guarded(t, d, after)
					out := testutil.Guarded(t, rows, after)
					ScoreRows(out, k, stride, q)
					acc := testutil.Guarded(t, d, after)
					BlendRows(acc, out, k, stride)
				}
			}
		}
	})
}
