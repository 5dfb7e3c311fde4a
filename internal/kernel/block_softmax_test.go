package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// blockMax gives blockMaxGeneric's bits where only the order of the
// comparisons decides: a maximum of ±0 reached with both signs, ties at
// other values, and NaN scores (which the generic loop skips), at every
// length and any position of the keys within an unrolled pass.
func TestBlockMaxTies(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	pool := []float32{0, negZero, -1, 3, float32(math.Inf(-1)), nan}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for n := range 19 {
			for seed := range 40 {
				r := testutil.Rand(uint64(n*100 + seed))
				st := make([]float32, BlockRows*n)
				for i := range st {
					st[i] = pool[r.IntN(len(pool))]
					if seed%2 == 0 && st[i] == 3 {
						st[i] = -2 // a maximum of ±0 in most lanes
					}
				}
				ml := make([]float32, 4*BlockRows)
				for i := range BlockRows {
					ml[i] = pool[r.IntN(len(pool)-1)] // m: no NaN, the last
					if ml[i] == 3 {
						ml[i] = -2
					}
					ml[BlockRows+i] = 1
				}
				want := append([]float32(nil), ml...)
				blockMaxGeneric(st, want)
				BlockMax(st, ml)
				for i := range ml {
					if !sameBits(ml[i], want[i]) {
						t.Fatalf("%s: ml[%d] = %v (%#x), generic %v (%#x)", fmt.Sprintf("n=%d seed=%d", n, seed),
							i, ml[i], math.Float32bits(ml[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	})
}
