package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// sameLanes fails the test at the first element of got whose bits differ
// from want's.
func sameLanes(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d][%d] = %v, the one-block kernel gives %v", what, i/BlockRows, i%BlockRows, got[i], want[i])
		}
	}
}

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
						k, kw := testutil.Fill(seed, max(0, (n-1)*stride+d), off, 2, sp)
						qt0, qw0 := testutil.Fill(seed+1, BlockRows*d, (off+3)%8, 2, sp)
						qt1, qw1 := testutil.Fill(seed+2, BlockRows*d, (off+1)%8, 2, sp)
						st0, sw0 := testutil.Offset(BlockRows*n, 5)
						st1, sw1 := testutil.Offset(BlockRows*n, 2)
						BlockScores2(st0, st1, qt0, qt1, k, stride)
						testutil.CheckGuards(t, sw0, 5, len(st0))
						testutil.CheckGuards(t, sw1, 2, len(st1))
						testutil.CheckGuards(t, kw, off, len(k))
						testutil.CheckGuards(t, qw0, (off+3)%8, len(qt0))
						testutil.CheckGuards(t, qw1, (off+1)%8, len(qt1))
						want0, want1 := make([]float32, len(st0)), make([]float32, len(st1))
						BlockScores(want0, qt0, k, stride)
						BlockScores(want1, qt1, k, stride)
						what := fmt.Sprintf("n=%d d=%d stride=%d special=%v: block %%d's scores", n, d, stride, sp)
						sameLanes(t, fmt.Sprintf(what, 0), st0, want0)
						sameLanes(t, fmt.Sprintf(what, 1), st1, want1)
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
							v, vw := testutil.Fill(seed, max(0, (n-1)*stride+d), off, 2, sp)
							st0, sw0 := testutil.Fill(seed+1, BlockRows*n, (off+3)%8, 1, sp)
							st1, sw1 := testutil.Fill(seed+2, BlockRows*n, (off+1)%8, 1, sp)
							ot0, ow0 := testutil.Fill(seed+3, BlockRows*d, 5, 1, sp)
							ot1, ow1 := testutil.Fill(seed+4, BlockRows*d, 2, 1, sp)
							var c0, c1 []float32
							if scaled {
								c0, _ = testutil.Fill(seed+5, BlockRows, 1, 1, sp)
								c1, _ = testutil.Fill(seed+6, BlockRows, 3, 1, sp)
							}
							want0, want1 := append([]float32(nil), ot0...), append([]float32(nil), ot1...)
							BlockBlend2(ot0, ot1, st0, st1, v, stride, c0, c1)
							testutil.CheckGuards(t, ow0, 5, len(ot0))
							testutil.CheckGuards(t, ow1, 2, len(ot1))
							testutil.CheckGuards(t, vw, off, len(v))
							testutil.CheckGuards(t, sw0, (off+3)%8, len(st0))
							testutil.CheckGuards(t, sw1, (off+1)%8, len(st1))
							BlockBlend(want0, st0, v, stride, c0)
							BlockBlend(want1, st1, v, stride, c1)
							what := fmt.Sprintf("n=%d d=%d stride=%d special=%v scaled=%v: block %%d's output", n, d, stride, sp, scaled)
							sameLanes(t, fmt.Sprintf(what, 0), ot0, want0)
							sameLanes(t, fmt.Sprintf(what, 1), ot1, want1)
						}
					}
				}
			}
		}
	})
}

// blockScores2 and blockBlend2 read and write nothing outside their
// slices: each against a page it may not touch, after its end or before
// its start.
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
						g := func(n int) []float32 { return testutil.Guarded(t, n, after) }
						k := g((n-1)*stride + d)
						qt0, qt1, st0, st1 := g(BlockRows*d), g(BlockRows*d), g(BlockRows*n), g(BlockRows*n)
						ot0, ot1, c0, c1 := g(BlockRows*d), g(BlockRows*d), g(BlockRows), g(BlockRows)
						BlockScores2(st0, st1, qt0, qt1, k, stride)
						BlockBlend2(ot0, ot1, st0, st1, k, stride, c0, c1)
						BlockBlend2(ot0, ot1, st0, st1, k, stride, nil, nil)
					})
				}
			}
		}
	})
}
