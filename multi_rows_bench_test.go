package attention

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkMultiRowKernels times the row path's multi-row kernels, a decode
// step's inner loop, from L1 (24 keys) and L2 (256 keys) at d = 128: the
// score and the blend of a group of four and of eight query rows against
// the same key and value rows, over float32, float16 and bfloat16 rows.
// rows=8 is one call of the eight-row kernels where an implementation has
// them in assembly (see multiEight), two calls of four elsewhere. Each
// reports GFLOP/s and its fraction of the FMA peak measured right after
// it; set against BenchmarkBlockKernels, it shows what the kernels leave
// of the peak before any memory cost.
func BenchmarkMultiRowKernels(b *testing.B) {
	const d = 128
	testutil.ForEachImplB(b, func(b *testing.B) {
		r := testutil.Rand(23)
		for _, n := range []int{24, 256} {
			k, kh, kb := rows16Data(n, d)
			v, vh, vb := rows16Data(n, d)
			q, w := testutil.Floats(r, 8*d, 1), testutil.Floats(r, 8*n, 1e-3)
			dst, acc := make([]float32, 8*n), make([]float32, 8*d)
			for _, f := range rows16Formats {
				for _, rows := range []int{4, 8} {
					score := func() {
						switch f.name {
						case "f32":
							if rows == 8 {
								scoreRowsMulti8(dst, k, d, q, nil)
							} else {
								scoreRowsMulti(dst[:4*n], k, d, q[:4*d], 4)
							}
						case "f16":
							if rows == 8 {
								scoreRowsMulti8F16(dst, kh, d, q, nil)
							} else {
								scoreRowsMultiF16(dst[:4*n], kh, d, q[:4*d], 4)
							}
						case "bf16":
							if rows == 8 {
								scoreRowsMulti8BF16(dst, kb, d, q, nil)
							} else {
								scoreRowsMultiBF16(dst[:4*n], kb, d, q[:4*d], 4)
							}
						}
					}
					blend := func() {
						switch f.name {
						case "f32":
							if rows == 8 {
								blendRowsMulti8(acc, w, v, d, nil)
							} else {
								blendRowsMulti(acc[:4*d], w[:4*n], v, d, 4, nil)
							}
						case "f16":
							if rows == 8 {
								blendRowsMulti8F16(acc, w, vh, d, nil)
							} else {
								blendRowsMultiF16(acc[:4*d], w[:4*n], vh, d, 4, nil)
							}
						case "bf16":
							if rows == 8 {
								blendRowsMulti8BF16(acc, w, vb, d, nil)
							} else {
								blendRowsMultiBF16(acc[:4*d], w[:4*n], vb, d, 4, nil)
							}
						}
					}
					flops := float64(2 * rows * n * d)
					for _, kn := range []struct {
						name string
						run  func()
					}{{"score", score}, {"blend", blend}} {
						b.Run(fmt.Sprintf("%s/fmt=%s/rows=%d/n=%d", kn.name, f.name, rows, n), func(b *testing.B) {
							for b.Loop() {
								kn.run()
							}
							reportPeak(b, flops)
						})
					}
				}
			}
		}
	})
}
