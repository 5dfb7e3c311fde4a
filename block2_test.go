package attention

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// blockScores2 gives each of its two blocks the bits blockScores gives it
// alone, on every implementation, for key counts around its groups of 12
// keys and 8, 4, 2, 1, dimensions around its unroll of 4, padded rows,
// unaligned slices and special values.
func TestBlockScores2(t *testing.T) {
	ns := append([]int{23, 24, 25, 35, 36}, blockNs...)
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range ns {
			for _, d := range blockDs {
				for _, pad := range []int{0, 3} {
					for _, sp := range []bool{false, true} {
						stride, off := d+pad, (n+d)%8
						seed := uint64(n*1000 + d*10 + pad)
						k, kw := fill(seed, max(0, (n-1)*stride+d), off, 2, sp)
						qt, qw := fill(seed+1, 2*blockRows*d, (off+3)%8, 2, sp)
						st, sw := testutil.Offset(2*blockRows*n, 5)
						blockScores2(st, qt, k, stride)
						testutil.CheckGuards(t, sw, 5, len(st))
						testutil.CheckGuards(t, kw, off, len(k))
						testutil.CheckGuards(t, qw, (off+3)%8, len(qt))
						want := make([]float32, len(st))
						h, hq := blockRows*n, blockRows*d
						blockScores(want[:h], qt[:hq], k, stride)
						blockScores(want[h:], qt[hq:], k, stride)
						for i := range st {
							if math.Float32bits(st[i]) != math.Float32bits(want[i]) {
								t.Fatalf("n=%d d=%d stride=%d special=%v: block %d score[%d][%d] = %v, blockScores gives %v",
									n, d, stride, sp, i/h, i%h/blockRows, i%blockRows, st[i], want[i])
							}
						}
					}
				}
			}
		}
	})
}

// blockBlend2 gives each of its two blocks the bits blockBlend gives it
// alone, with and without the factors, on every implementation, for
// column counts around its groups of 12 columns and 8, 4, 2, 1, key
// counts around its unroll of 4, padded rows, unaligned slices and
// special values.
func TestBlockBlend2(t *testing.T) {
	ds := append([]int{23, 24, 25, 35, 36}, blockDs...)
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range blockNs {
			for _, d := range ds {
				for _, pad := range []int{0, 3} {
					for _, sp := range []bool{false, true} {
						for _, scaled := range []bool{false, true} {
							stride, off := d+pad, (n+d)%8
							seed := uint64(n*1000 + d*10 + pad)
							v, vw := fill(seed, max(0, (n-1)*stride+d), off, 2, sp)
							st, sw := fill(seed+1, 2*blockRows*n, (off+3)%8, 1, sp)
							ot, ow := fill(seed+2, 2*blockRows*d, 5, 1, sp)
							var c []float32
							if scaled {
								c, _ = fill(seed+3, 2*blockRows, 1, 1, sp)
							}
							want := append([]float32(nil), ot...)
							blockBlend2(ot, st, v, stride, c)
							testutil.CheckGuards(t, ow, 5, len(ot))
							testutil.CheckGuards(t, vw, off, len(v))
							testutil.CheckGuards(t, sw, (off+3)%8, len(st))
							h, hs := blockRows*d, blockRows*n
							var c0, c1 []float32
							if scaled {
								c0, c1 = c[:blockRows], c[blockRows:]
							}
							blockBlend(want[:h], st[:hs], v, stride, c0)
							blockBlend(want[h:], st[hs:], v, stride, c1)
							for i := range ot {
								if math.Float32bits(ot[i]) != math.Float32bits(want[i]) {
									t.Fatalf("n=%d d=%d stride=%d special=%v scaled=%v: block %d out[%d][%d] = %v, blockBlend gives %v",
										n, d, stride, sp, scaled, i/h, i%h/blockRows, i%blockRows, ot[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	})
}

// blockScores2 and blockBlend2 read and write nothing outside their slices: each against a
// page it may not touch, after its end or before its start.
func TestBlock2StaysInBounds(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, after := range []bool{true, false} {
			for _, d := range []int{0, 1, 3, 4, 5, 16, 17, 64, 67} {
				for _, n := range []int{1, 3, 11, 12, 13, 25} {
					t.Run(fmt.Sprintf("after=%v/d=%d/n=%d", after, d, n), func(t *testing.T) {
						stride := d + 3
						k := testutil.Guarded(t, (n-1)*stride+d, after)
						qt := testutil.Guarded(t, 2*blockRows*d, after)
						st := testutil.Guarded(t, 2*blockRows*n, after)
						ot := testutil.Guarded(t, 2*blockRows*d, after)
						c := testutil.Guarded(t, 2*blockRows, after)
						blockScores2(st, qt, k, stride)
						blockBlend2(ot, st, k, stride, c)
						blockBlend2(ot, st, k, stride, nil)
					})
				}
			}
		}
	})
}
