package attention

import (
	"fmt"
	"strings"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// AttendMany never reads a masked key: the keys and values lie one row per
// page with the pages of masked rows inaccessible, for every scorer, on
// both paths (2, 9 and 17 queries) and every implementation, and the
// results still match the oracle. The pattern repeats keptPattern three
// times, 243 keys: runs of kept keys end just before a masked row, and
// across the edges of the 128-key tiles of the block path and, with rows
// of 512 and 1000 floats, of the multi-row kernels' tiles of 64 and 40.
// With -short, each scorer, count of queries and size takes one of the
// counts of valid keys, turning with them.
func TestAttendManyNeverReadsMasked(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	pattern := strings.Repeat(keptPattern, 3)
	T := len(pattern)
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(58)
		for ki, kind := range kinds {
			for ni, n := range []int{2, 9, 17} {
				for di, dims := range [][4]int{{6, 9, 13, 5}, {7, 512, 1000, 5}} {
					for vi, valid := range []int{T, T - 30, 0} {
						if testing.Short() && vi != (ki+ni+di)%3 {
							continue
						}
						dq, dk, dv, da := dims[0], dims[1], dims[2], dims[3]
						if isDot(kind) {
							dq = dk
						}
						p, err := sizedProblem(t, r, kind, T, dq, dk, dv, da, 0)
						if err != nil {
							t.Fatal(err)
						}
						keep := make([]bool, T)
						for i := range keep {
							keep[i] = pattern[i] == 'k'
						}
						p.withKeep(keep)
						p.withValid(valid)
						masked := func(i int) bool { return i >= valid || !keep[i] }
						p.keys, p.ref.Keys = guardedRows(t, p.ref.Keys, dk, masked)
						p.values, p.ref.Values = guardedRows(t, p.ref.Values, dv, masked)
						q, rows := strided(t, r, n, dq, 1, 3)
						c := manyCase{p: p, queries: q, rows: rows}
						name := fmt.Sprintf("%s n=%d dk=%d valid=%d", p.scorer, n, dk, valid)
						readsNoHiddenPage(t, name, p.keys, p.values, func() { c.check(t, name) })
					}
				}
			}
		}
	})
}
