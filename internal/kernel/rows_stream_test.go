package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// scoreRows takes other code paths for large blocks of rows (the
// prefetching walks, from 128 KiB of K a call), which the kernel table's
// cases, a few rows long, never reach. Here blocks of a whole call's budget
// and more, contiguous and strided, ending at a guard page, for the row
// kernels and the multi-row ones: scores and blends within their bounds of
// the exact values, and the multi-row kernels giving each row the one-row
// kernels' bits.
func TestRowKernelsLargeBlocks(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(67)
		for _, d := range []int{16, 37, 64, 75, 128, 131} {
			for _, extra := range []int{0, 3} {
				stride := d + extra
				n := MaxCall/d + 1 + r.IntN(40) // just over one call's budget
				kv := testutil.Guarded(t, (n-1)*stride+d, true)
				copy(kv, testutil.Floats(r, len(kv), 2))
				what := fmt.Sprintf("d=%d stride=%d n=%d", d, stride, n)

				q := testutil.Floats(r, d, 1)
				dst := make([]float32, n)
				ScoreRows(dst, kv, stride, q)
				for i := range n {
					want, abs := reference.Dot(kv[i*stride:i*stride+d], q)
					if !testutil.Close(dst[i], want, reference.DotBound(d, abs)) {
						t.Fatalf("%s: scoreRows row %d = %v, want %v", what, i, dst[i], want)
					}
				}

				w := testutil.Floats(r, n, 1)
				acc := testutil.Floats(r, d, 1)
				orig := append([]float32(nil), acc...)
				BlendRows(acc, w, kv, stride)
				for j := range d {
					want, abs := float64(orig[j]), math.Abs(float64(orig[j]))
					for i := range n {
						p := float64(w[i]) * float64(kv[i*stride+j])
						want += p
						abs += math.Abs(p)
					}
					if !testutil.Close(acc[j], want, reference.Gamma(n+1)*abs) {
						t.Fatalf("%s: blendRows acc[%d] = %v, want %v", what, j, acc[j], want)
					}
				}

				// The multi-row kernels within one call's budget (n·d).
				m := MaxCall / d
				for _, rows := range multiRowCounts {
					qs, ws := testutil.Floats(r, rows*d, 1), testutil.Floats(r, rows*m, 1)
					got, one := make([]float32, rows*m), make([]float32, rows*m)
					scoreMultiOf(got, kv, stride, qs, rows)
					accs := testutil.Floats(r, rows*d, 1)
					ones := append([]float32(nil), accs...)
					blendMultiOf(accs, ws, kv, stride, rows, kv[m*stride:])
					for i := range rows {
						ScoreRows(one[i*m:(i+1)*m], kv, stride, qs[i*d:(i+1)*d])
						BlendRows(ones[i*d:(i+1)*d], ws[i*m:(i+1)*m], kv, stride)
					}
					if m%8 == 0 {
						testutil.Identical(t, fmt.Sprintf("%s rows=%d: scoreRowsMulti", what, rows), got, one)
					}
					testutil.Identical(t, fmt.Sprintf("%s rows=%d: blendRowsMulti", what, rows), accs, ones)
				}
			}
		}
	})
}
