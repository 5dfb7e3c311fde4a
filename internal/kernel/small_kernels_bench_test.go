package kernel

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkSmallKernels times, from L1 and at the sizes the engine calls
// them with, the kernels around the block path's scores and the additive
// scores: the softcap steps on one tile of block scores (blockTile keys ×
// 16 rows), the additive arguments of one block of keys, the keep mask of
// one tile, the transposes of one block of queries and outputs, and the
// prefetch of a block's rows. ns/elem is per float touched (per flag for
// the keep mask).
func BenchmarkSmallKernels(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		r := testutil.Rand(11)
		n := blockTile * BlockRows
		x, z := testutil.Floats(r, n, 30), make([]float32, n)
		e := testutil.Floats(r, n, 1)
		for i := range e {
			e[i] = 1 + e[i]*e[i]
		}
		b.Run(fmt.Sprintf("softcapPrep/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				SoftcapPrep(x, z, 1)
			}
			testutil.Report(b, 0, float64(n))
		})
		b.Run(fmt.Sprintf("softcapFinish/n=%d", n), func(b *testing.B) {
			// Each call overwrites y with values within ±30, which the next
			// call takes through the same operations: the kernel has no
			// branch on the data.
			y := append([]float32(nil), x...)
			for b.Loop() {
				SoftcapFinish(y, e, 30)
			}
			testutil.Report(b, 0, float64(n))
		})
		for _, da := range []int{64, 100, 128} {
			rows := AdditiveRows(da)
			u, s := testutil.Floats(r, rows*da, 1), testutil.Floats(r, da, 1)
			xa, za := make([]float32, rows*da), make([]float32, rows*da)
			b.Run(fmt.Sprintf("additivePrep/d=%d/rows=%d", da, rows), func(b *testing.B) {
				for b.Loop() {
					AdditivePrep(xa, za, u, da, s)
				}
				testutil.Report(b, 0, float64(rows*da))
			})
		}
		keep := make([]byte, BlockRows*blockTile)
		for i := range keep {
			if r.IntN(10) > 0 {
				keep[i] = 1
			}
		}
		st := testutil.Floats(r, n, 1)
		b.Run(fmt.Sprintf("blockKeep16/keys=%d", blockTile), func(b *testing.B) {
			for b.Loop() {
				BlockKeep16(st, keep, blockTile)
			}
			testutil.Report(b, 0, float64(n))
		})
		// A padding mask keeps most tiles whole.
		kept := make([]byte, len(keep))
		for i := range kept {
			kept[i] = 1
		}
		b.Run(fmt.Sprintf("blockKeep16/keys=%d/all-kept", blockTile), func(b *testing.B) {
			for b.Loop() {
				BlockKeep16(st, kept, blockTile)
			}
			testutil.Report(b, 0, float64(n))
		})
		for _, d := range []int{64, 128} {
			for _, rows := range []int{16, 11} {
				q, qt := testutil.Floats(r, BlockRows*d, 1), make([]float32, BlockRows*d)
				b.Run(fmt.Sprintf("blockIn/d=%d/rows=%d", d, rows), func(b *testing.B) {
					for b.Loop() {
						BlockIn(qt, q, d, rows)
					}
					testutil.Report(b, 0, float64(BlockRows*d))
				})
				b.Run(fmt.Sprintf("blockOut/d=%d/rows=%d", d, rows), func(b *testing.B) {
					for b.Loop() {
						BlockOut(q, d, rows, qt)
					}
					testutil.Report(b, 0, float64(BlockRows*d))
				})
			}
		}
		b.Run("prefetch/rows=16/cols=64", func(b *testing.B) {
			for b.Loop() {
				PrefetchRows(x, 64, 16, 64)
			}
			testutil.Report(b, 0, 16*64)
		})
	})
}
