package attention

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkMultiRowKernels times the row path's multi-row kernels, a decode
// step's inner loop, from L1 (24 keys) and L2 (256 keys) at d = 128: the
// score and the blend of a group of two to eight query rows against the
// same key and value rows, over float32, float16 and bfloat16 rows. Rows
// above four are one call of the wide kernels where an implementation has
// them in assembly (see multiEight), a call of four and one of the rest
// elsewhere. Each reports GFLOP/s and its fraction of the FMA peak measured
// right after it; set against BenchmarkBlockKernels, it shows what the
// kernels leave of the peak before any memory cost.
func BenchmarkMultiRowKernels(b *testing.B) {
	const d = 128
	testutil.ForEachImplB(b, func(b *testing.B) {
		r := testutil.Rand(23)
		for _, n := range []int{24, 256} {
			k, kh, kb := rows16Data(n, d)
			v, vh, vb := rows16Data(n, d)
			q, w := testutil.Floats(r, 8*d, 1), testutil.Floats(r, 8*n, 1e-3)
			dst, acc := make([]float32, 8*n), make([]float32, 8*d)
			// The kernels of each format, by name, for a row count.
			kernels := map[string]map[string]func(rows int){
				"f32": {
					"score": func(R int) {
						if R > 4 {
							scoreRowsMulti8(dst[:R*n], k, d, q[:R*d], R, nil)
						} else {
							scoreRowsMulti(dst[:R*n], k, d, q[:R*d], R)
						}
					},
					"blend": func(R int) {
						if R > 4 {
							blendRowsMulti8(acc[:R*d], w[:R*n], v, d, R, nil)
						} else {
							blendRowsMulti(acc[:R*d], w[:R*n], v, d, R, nil)
						}
					},
				},
				"f16": {
					"score": func(R int) {
						if R > 4 {
							scoreRowsMulti8F16(dst[:R*n], kh, d, q[:R*d], R, nil)
						} else {
							scoreRowsMultiF16(dst[:R*n], kh, d, q[:R*d], R)
						}
					},
					"blend": func(R int) {
						if R > 4 {
							blendRowsMulti8F16(acc[:R*d], w[:R*n], vh, d, R, nil)
						} else {
							blendRowsMultiF16(acc[:R*d], w[:R*n], vh, d, R, nil)
						}
					},
				},
				"bf16": {
					"score": func(R int) {
						if R > 4 {
							scoreRowsMulti8BF16(dst[:R*n], kb, d, q[:R*d], R, nil)
						} else {
							scoreRowsMultiBF16(dst[:R*n], kb, d, q[:R*d], R)
						}
					},
					"blend": func(R int) {
						if R > 4 {
							blendRowsMulti8BF16(acc[:R*d], w[:R*n], vb, d, R, nil)
						} else {
							blendRowsMultiBF16(acc[:R*d], w[:R*n], vb, d, R, nil)
						}
					},
				},
			}
			for _, f := range rows16Formats {
				for _, rows := range []int{2, 3, 4, 6, 8} {
					for _, name := range []string{"score", "blend"} {
						run := kernels[f.name][name]
						b.Run(fmt.Sprintf("%s/fmt=%s/rows=%d/n=%d", name, f.name, rows, n), func(b *testing.B) {
							for b.Loop() {
								run(rows)
							}
							reportPeak(b, float64(2*rows*n*d))
						})
					}
				}
			}
		}
	})
}
