package kernel

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkScoreRows times the score kernel alone: T keys of dimension d
// against one query, the keys streamed from L1 (T=128, d=64), L2 or L3.
// With a 512 KiB L2, T=512 at d=128 (256 KiB) is the largest K here that
// stays in L2 between calls; T=1024 at d=128 fills L2 entirely and is
// read partly from L3.
func BenchmarkScoreRows(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, d := range []int{64, 128} {
			for _, T := range []int{128, 512, 1024, 8192} {
				b.Run(fmt.Sprintf("d=%d/T=%d", d, T), func(b *testing.B) {
					r := testutil.Rand(6)
					k, q := testutil.Floats(r, T*d, 1), testutil.Floats(r, d, 1)
					out := make([]float32, T)
					b.SetBytes(int64(4 * T * d))
					for b.Loop() {
						ScoreRows(out, k, d, q)
					}
					testutil.Report(b, float64(2*T*d), float64(T))
				})
			}
		}
	})
}

// BenchmarkBlendRows times the blend kernel alone: acc += Σ w[i]·V[i].
func BenchmarkBlendRows(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, d := range []int{64, 128} {
			for _, T := range []int{128, 1024, 8192} {
				b.Run(fmt.Sprintf("d=%d/T=%d", d, T), func(b *testing.B) {
					r := testutil.Rand(7)
					v, w := testutil.Floats(r, T*d, 1), testutil.Floats(r, T, 1e-3)
					acc := make([]float32, d)
					b.SetBytes(int64(4 * T * d))
					for b.Loop() {
						BlendRows(acc, w, v, d)
					}
					testutil.Report(b, float64(2*T*d), float64(T))
				})
			}
		}
	})
}

// BenchmarkBlockKernels times the batched engine's block kernels on one
// tile from L1: sixteen query rows against n keys of d dimensions
// (scores2 and blend2: two blocks of sixteen, blockScores2 and
// blockBlend2). The score and blend kernels also report peak-fraction:
// their GFLOP/s over this machine's FMA peak (the calibration kernel of
// the widest registers, one thread) measured right after them.
func BenchmarkBlockKernels(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, d := range []int{64, 128} {
			const n = 128
			r := testutil.Rand(10)
			qt, k := testutil.Floats(r, BlockRows*d, 1), testutil.Floats(r, n*d, 1)
			st, ot := make([]float32, BlockRows*n), make([]float32, BlockRows*d)
			ml := make([]float32, 4*BlockRows)
			b.Run(fmt.Sprintf("scores/d=%d/n=%d", d, n), func(b *testing.B) {
				for b.Loop() {
					BlockScores(st, qt, k, d)
				}
				reportPeak(b, float64(2*BlockRows*n*d))
			})
			qt2, st2 := testutil.Floats(r, 2*BlockRows*d, 1), make([]float32, 2*BlockRows*n)
			b.Run(fmt.Sprintf("scores2/d=%d/n=%d", d, n), func(b *testing.B) {
				for b.Loop() {
					BlockScores2(st2[:BlockRows*n], st2[BlockRows*n:], qt2[:BlockRows*d], qt2[BlockRows*d:], k, d)
				}
				reportPeak(b, float64(2*2*BlockRows*n*d))
			})
			b.Run(fmt.Sprintf("softmax/n=%d", n), func(b *testing.B) {
				for b.Loop() {
					for i := range ml {
						ml[i] = 0
					}
					BlockSoftmax(st, ml)
				}
				testutil.Report(b, 0, float64(BlockRows*n))
			})
			b.Run(fmt.Sprintf("blend/d=%d/n=%d", d, n), func(b *testing.B) {
				for b.Loop() {
					BlockBlend(ot, st, k, d, ml[2*BlockRows:3*BlockRows])
				}
				reportPeak(b, float64(2*BlockRows*n*d))
			})
			ot2, c2 := make([]float32, 2*BlockRows*d), testutil.Floats(r, 2*BlockRows, 1)
			b.Run(fmt.Sprintf("blend2/d=%d/n=%d", d, n), func(b *testing.B) {
				for b.Loop() {
					BlockBlend2(ot2[:BlockRows*d], ot2[BlockRows*d:], st2[:BlockRows*n], st2[BlockRows*n:], k, d, c2[:BlockRows], c2[BlockRows:])
				}
				reportPeak(b, float64(2*2*BlockRows*n*d))
			})
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
			qt, kv := testutil.Floats(r, BlockRows*d, 1), testutil.Floats(r, tiles*n*d, 1)
			st, ot := testutil.Floats(r, BlockRows*n, 1), make([]float32, BlockRows*d)
			c := testutil.Floats(r, BlockRows, 1)
			tile := func(i int) []float32 { return kv[i%tiles*n*d:][:n*d] }
			b.Run(fmt.Sprintf("scores/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					BlockScores(st, qt, tile(i), d)
					i++
				}
				testutil.Report(b, float64(2*BlockRows*n*d), 0)
			})
			qt2, st2 := testutil.Floats(r, 2*BlockRows*d, 1), make([]float32, 2*BlockRows*n)
			b.Run(fmt.Sprintf("scores2/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					BlockScores2(st2[:BlockRows*n], st2[BlockRows*n:], qt2[:BlockRows*d], qt2[BlockRows*d:], tile(i), d)
					i++
				}
				testutil.Report(b, float64(2*2*BlockRows*n*d), 0)
			})
			b.Run(fmt.Sprintf("blend/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					BlockBlend(ot, st, tile(i), d, c)
					i++
				}
				testutil.Report(b, float64(2*BlockRows*n*d), 0)
			})
			ot2, c2 := make([]float32, 2*BlockRows*d), testutil.Floats(r, 2*BlockRows, 1)
			b.Run(fmt.Sprintf("blend2/d=%d/n=%d", d, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					BlockBlend2(ot2[:BlockRows*d], ot2[BlockRows*d:], st2[:BlockRows*n], st2[BlockRows*n:], tile(i), d, c2[:BlockRows], c2[BlockRows:])
					i++
				}
				testutil.Report(b, float64(2*2*BlockRows*n*d), 0)
			})
		}
	})
}
