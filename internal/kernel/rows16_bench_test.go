package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// The 16-bit row kernels against the float32 ones over the same shape,
// from L2 (T = 4096, 1 MiB of f16 rows at d = 128) and from L3 or DRAM
// (T = 32768): GB/s counts the K or V bytes read, which is what a 16-bit
// cache halves.

// rows16Formats are the element formats the benchmarks compare, with the
// bytes of one element.
var rows16Formats = []rows16Format{{"f32", 4}, {"f16", 2}, {"bf16", 2}}

// rows16Format is an element format and its bytes.
type rows16Format struct {
	name  string
	bytes int
}

// rows16Data returns T rows of d elements in every format: floats within
// ±1, and their 16-bit counterparts in each 16-bit format.
func rows16Data(T, d int) (f []float32, h, bf []uint16) {
	r := testutil.Rand(16)
	f = testutil.Floats(r, T*d, 1)
	h, bf = make([]uint16, T*d), make([]uint16, T*d)
	for i, x := range f {
		bf[i] = uint16(math.Float32bits(x) >> 16)
		h[i] = uint16(r.IntN(2))<<15 | uint16(r.IntN(15))<<10 | uint16(r.IntN(1024))
	}
	return f, h, bf
}

func reportKV(b *testing.B, bytes int) {
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/sec/1e9, "GB/s")
	}
}

func BenchmarkScoreRows16(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		const d = 128
		for _, T := range []int{4096, 32768} {
			k, kh, kb := rows16Data(T, d)
			q := testutil.Floats(testutil.Rand(17), d, 1)
			dst := make([]float32, T)
			for _, f := range rows16Formats {
				b.Run(fmt.Sprintf("fmt=%s/d=%d/T=%d", f.name, d, T), func(b *testing.B) {
					for b.Loop() {
						switch f.name {
						case "f32":
							ScoreRows(dst, k, d, q)
						case "f16":
							ScoreRowsF16(dst, kh, d, q)
						case "bf16":
							ScoreRowsBF16(dst, kb, d, q)
						}
					}
					reportKV(b, f.bytes*T*d)
				})
			}
		}
	})
}

func BenchmarkBlendRows16(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		const d = 128
		for _, T := range []int{4096, 32768} {
			v, vh, vb := rows16Data(T, d)
			w := testutil.Floats(testutil.Rand(18), T, 1e-3)
			acc := make([]float32, d)
			for _, f := range rows16Formats {
				b.Run(fmt.Sprintf("fmt=%s/d=%d/T=%d", f.name, d, T), func(b *testing.B) {
					for b.Loop() {
						switch f.name {
						case "f32":
							BlendRows(acc, w, v, d)
						case "f16":
							BlendRowsF16(acc, w, vh, d)
						case "bf16":
							BlendRowsBF16(acc, w, vb, d)
						}
					}
					reportKV(b, f.bytes*T*d)
				})
			}
		}
	})
}

// BenchmarkMultiRows16 is a grouped decode step's inner loop over one
// key/value head: four query rows scored against 512 keys through the
// multi-row score, then the four rows' blends of the 512 value rows, at
// d = 128, over f32, f16 and bf16 rows. In L2 one block of K and V serves
// every iteration (512 KiB of f32 rows); from memory each iteration takes
// the next of 256 blocks (128 MiB of f32 K and V, 64 MiB of 16-bit), as a
// decode step walks the cache of every head and position. GB/s counts the
// K and V bytes read.
func BenchmarkMultiRows16(b *testing.B) {
	const d, n, rows, blocks = 128, 512, 4, 256
	k, kh, kb := rows16Data(blocks*n, d)
	v, vh, vb := rows16Data(blocks*n, d)
	r := testutil.Rand(19)
	q, w := testutil.Floats(r, rows*d, 1), testutil.Floats(r, rows*n, 1e-3)
	dst, acc := make([]float32, rows*n), make([]float32, rows*d)
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, set := range []struct {
			name   string
			blocks int
		}{{"L2", 1}, {"mem", blocks}} {
			for _, f := range rows16Formats {
				b.Run(fmt.Sprintf("fmt=%s/d=%d/n=%d/from=%s", f.name, d, n, set.name), func(b *testing.B) {
					i := 0
					for b.Loop() {
						o := (i % set.blocks) * n * d
						i++
						switch f.name {
						case "f32":
							ScoreRowsMulti(dst, k[o:o+n*d], d, q, rows)
							BlendRowsMulti(acc, w, v[o:o+n*d], d, rows, nil)
						case "f16":
							ScoreRowsMultiF16(dst, kh[o:o+n*d], d, q, rows)
							BlendRowsMultiF16(acc, w, vh[o:o+n*d], d, rows, nil)
						case "bf16":
							ScoreRowsMultiBF16(dst, kb[o:o+n*d], d, q, rows)
							BlendRowsMultiBF16(acc, w, vb[o:o+n*d], d, rows, nil)
						}
					}
					reportKV(b, 2*f.bytes*n*d)
				})
			}
		}
	})
}
