package attention

import (
	"math"
	"testing"
	"unsafe"

	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/testutil"
)

// nextMasked against a plain scan, from every start, over lengths that
// cover the 32-flag and 8-flag steps and their tails, with masks from
// none to all.
func TestNextMasked(t *testing.T) {
	r := testutil.Rand(30)
	for n := range 100 {
		for _, density := range []int{0, 1, 8, 50, 100} {
			keep := make([]bool, n)
			for i := range keep {
				keep[i] = r.IntN(100) >= density
			}
			kb := keepBytes(keep)
			for k := 0; k <= n; k++ {
				want := k
				for want < n && keep[want] {
					want++
				}
				if got := nextMasked(kb, k); got != want {
					t.Fatalf("n=%d density=%d%%: nextMasked(%v, %d) = %d, want %d", n, density, keep, k, got, want)
				}
			}
		}
	}
}

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
							st := testutil.Guarded(t, kernel.BlockRows*n, a)
							for i := range st {
								st[i] = testutil.Specials[r.IntN(len(testutil.Specials))]
							}
							want := append([]float32(nil), st...)
							for k := range n {
								for rr := range rows {
									if keep[rr*stride+k] == 0 {
										want[k*kernel.BlockRows+rr] = float32(math.Inf(-1))
									}
								}
							}
							kernel.BlockKeep(st, keep, stride, rows)
							for i := range st {
								if math.Float32bits(st[i]) != math.Float32bits(want[i]) {
									t.Fatalf("rows=%d n=%d stride=%d density=%d%%: st[%d] (key %d, row %d) = %v, want %v",
										rows, n, stride, density, i, i/kernel.BlockRows, i%kernel.BlockRows, st[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	})
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
