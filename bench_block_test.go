package attention

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkBatchedLayout runs a prefill with the heads packed ([H][T][d])
// and interleaved ([T][H][d], as a fused QKV projection leaves them): the
// interleaved rows lie H·d floats apart, a power of two, so the rows of
// one tile share few L1 sets, which the block kernels' runs must allow
// for.
func BenchmarkBatchedLayout(b *testing.B) {
	const heads, T = 8, 512
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, d := range []int{64, 128} {
			for _, layout := range []string{"packed", "interleaved"} {
				b.Run(fmt.Sprintf("%s/h=%d/T=%d/d=%d", layout, heads, T, d), func(b *testing.B) {
					r := testutil.Rand(9)
					mk := func() Tensor {
						data := testutil.Floats(r, heads*T*d, 1)
						hs, rs := T*d, d
						if layout == "interleaved" {
							hs, rs = d, heads*d
						}
						x, err := NewTensorStrided(1, heads, T, d, heads*T*d, hs, rs, data)
						if err != nil {
							b.Fatal(err)
						}
						return x
					}
					q, k, v, out := mk(), mk(), mk(), mk()
					e := NewBatched(1)
					defer e.Close()
					for b.Loop() {
						e.Attend(BatchOutputs{Out: out}, q, k, v, nil)
					}
					report(b, float64(4*heads*T*T*d), 0)
				})
			}
		}
	})
}
