package attention

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkKVCacheAppend appends the rows of one decode step (tokens=1)
// or of a short prefill chunk (tokens=16) for 8 KV heads of d = 128 to a
// ring cache, in each of its types: f32 is a copy, the 16-bit types
// narrow every element.
func BenchmarkKVCacheAppend(b *testing.B) {
	const heads, d = 8, 128
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, typ := range kvTypes {
			for _, tokens := range []int{1, 16} {
				b.Run(fmt.Sprintf("type=%v/tokens=%d", typ, tokens), func(b *testing.B) {
					c, err := NewKVCache(1, heads, 1024, d, d, typ, WithRing())
					if err != nil {
						b.Fatal(err)
					}
					r := testutil.Rand(uint64(tokens))
					k, v := testutil.Floats(r, heads*tokens*d, 4), testutil.Floats(r, heads*tokens*d, 4)
					b.ReportAllocs()
					for b.Loop() {
						if err := c.Append(0, k, v, tokens); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	})
}
