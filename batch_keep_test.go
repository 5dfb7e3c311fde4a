package attention

import (
	"testing"

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
