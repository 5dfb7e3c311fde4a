package kernel

import (
	"math"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// TestBlockKeep checks the keep kernel of every implementation against its
// definition, bit for bit: whole and partial blocks of rows, key counts
// around the 16-key groups and the 8-flag steps, row strides equal to and
// past the key count, masks from none to all, scores that are already
// special values (a masked lane becomes -Inf whatever it held, a kept lane
// keeps its bits), on slices that end at or start after an inaccessible
// page where guard pages exist.
func TestBlockKeep(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(31)
		after := []bool{true}
		if testutil.GuardSupported {
			after = []bool{true, false}
		}
		for _, rows := range []int{16, 15, 9, 1, 0} {
			for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 128, 131} {
				for _, pad := range []int{0, 5} {
					for _, density := range []int{0, 10, 50, 100} {
						for _, a := range after {
							stride := n + pad
							kb := max(0, (rows-1)*stride+n)
							keep := guardedBytes(t, kb, a)
							for i := range keep {
								if r.IntN(100) >= density {
									keep[i] = 1
								}
							}
							st := testutil.Guarded(t, BlockRows*n, a)
							for i := range st {
								st[i] = testutil.Specials[r.IntN(len(testutil.Specials))]
							}
							want := append([]float32(nil), st...)
							for k := range n {
								for rr := range rows {
									if keep[rr*stride+k] == 0 {
										want[k*BlockRows+rr] = float32(math.Inf(-1))
									}
								}
							}
							BlockKeep(st, keep, stride, rows)
							for i := range st {
								if math.Float32bits(st[i]) != math.Float32bits(want[i]) {
									t.Fatalf("rows=%d n=%d stride=%d density=%d%%: st[%d] (key %d, row %d) = %v, want %v",
										rows, n, stride, density, i, i/BlockRows, i%BlockRows, st[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	})
}
