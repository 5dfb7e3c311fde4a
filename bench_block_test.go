package attention

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/kernel"
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

// BenchmarkBlockKernelsL2 runs the score and blend kernels as the engine
// does, on tiles of 128 keys that come from L2: each call takes the next
// of eight tiles (256 KiB of keys at d=64), so none stays in L1 between
// its calls. scores2 and blend2 are blockScores2 and blockBlend2: two blocks of rows
// per call.
func BenchmarkBlockKernelsL2(b *testing.B) {
	const n, tiles = 128, 8
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, d := range []int{64, 128} {
			r := testutil.Rand(10)
			qt, kv := testutil.Floats(r, kernel.BlockRows*d, 1), testutil.Floats(r, tiles*n*d, 1)
			st, ot := testutil.Floats(r, kernel.BlockRows*n, 1), make([]float32, kernel.BlockRows*d)
			c := testutil.Floats(r, kernel.BlockRows, 1)
			tile := func(i int) []float32 { return kv[i%tiles*n*d:][:n*d] }
			b.Run(fmt.Sprintf("scores/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					kernel.BlockScores(st, qt, tile(i), d)
					i++
				}
				report(b, float64(2*kernel.BlockRows*n*d), 0)
			})
			qt2, st2 := testutil.Floats(r, 2*kernel.BlockRows*d, 1), make([]float32, 2*kernel.BlockRows*n)
			b.Run(fmt.Sprintf("scores2/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					kernel.BlockScores2(st2[:kernel.BlockRows*n], st2[kernel.BlockRows*n:], qt2[:kernel.BlockRows*d], qt2[kernel.BlockRows*d:], tile(i), d)
					i++
				}
				report(b, float64(2*2*kernel.BlockRows*n*d), 0)
			})
			b.Run(fmt.Sprintf("blend/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					kernel.BlockBlend(ot, st, tile(i), d, c)
					i++
				}
				report(b, float64(2*kernel.BlockRows*n*d), 0)
			})
			ot2, c2 := make([]float32, 2*kernel.BlockRows*d), testutil.Floats(r, 2*kernel.BlockRows, 1)
			b.Run(fmt.Sprintf("blend2/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					kernel.BlockBlend2(ot2[:kernel.BlockRows*d], ot2[kernel.BlockRows*d:], st2[:kernel.BlockRows*n], st2[kernel.BlockRows*n:], tile(i), d, c2[:kernel.BlockRows], c2[kernel.BlockRows:])
					i++
				}
				report(b, float64(2*2*kernel.BlockRows*n*d), 0)
			})
		}
	})
}
