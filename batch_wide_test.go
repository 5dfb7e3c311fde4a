package attention

import (
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// TestBatchedWidenedHeadsFollowTheCache checks that a worker's widened
// head (see wideHead) never outlives what it was widened from: an engine
// that attends a 16-bit cache, then the same cache after its rows changed,
// then another cache of the same shape, gives each time the bits of a
// fresh engine.
func TestBatchedWidenedHeadsFollowTheCache(t *testing.T) {
	const Tq, capacity, d = 32, 64, 32
	testutil.ForEachImpl(t, func(t *testing.T) {
		// One entry of one head: each call's first task is the last one's
		// head. Two entries of one: consecutive tasks of the same head
		// index in different entries.
		for _, c := range []struct {
			typ       KVType
			B, H, Hkv int
		}{{F16, 2, 4, 2}, {BF16, 2, 4, 2}, {F16, 2, 2, 1}, {BF16, 1, 1, 1}, {F16, 1, 2, 1}} {
			typ, B, H, Hkv := c.typ, c.B, c.H, c.Hkv
			r := testutil.Rand(31)
			q := tensor(t, r, B, H, Tq, d, false, 1)
			out := tensor(t, r, B, H, Tq, d, false, 1)
			fill := func(c *KVCache, b, rows int) {
				k := testutil.Floats(r, Hkv*rows*d, 2)
				v := testutil.Floats(r, Hkv*rows*d, 3)
				if err := c.Append(b, k, v, rows); err != nil {
					t.Fatal(err)
				}
			}
			newCache := func() *KVCache {
				c, err := NewKVCache(B, Hkv, capacity, d, d, typ)
				if err != nil {
					t.Fatal(err)
				}
				for b := range B {
					fill(c, b, 40+b)
				}
				return c
			}
			for _, workers := range []int{1, 2} {
				e := NewBatched(workers)
				defer e.Close()
				opt := &BatchOptions{Causal: true}
				check := func(what string, c *KVCache) {
					t.Helper()
					if err := e.AttendCache(BatchOutputs{Out: out}, q, c, opt); err != nil {
						t.Fatal(err)
					}
					got := append([]float32(nil), out.data...)
					fresh := NewBatched(1)
					defer fresh.Close()
					if err := fresh.AttendCache(BatchOutputs{Out: out}, q, c, opt); err != nil {
						t.Fatal(err)
					}
					if i := firstDiff(got, out.data); i >= 0 {
						t.Fatalf("%v, B %d, H %d/%d, %d workers, %s: output %d is %v, a fresh engine gives %v", typ, B, H, Hkv, workers, what, i, got[i], out.data[i])
					}
				}
				c := newCache()
				check("first call", c)
				if err := c.Truncate(0, 10); err != nil {
					t.Fatal(err)
				}
				fill(c, 0, 30)
				fill(c, B-1, 5)
				check("rows changed", c)
				check("another cache", newCache())
			}
		}
	})
}
