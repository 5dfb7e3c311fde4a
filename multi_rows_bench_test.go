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
			// The kernels of each format, by name and row count.
			kernels := map[string]map[string][2]func(){
				"f32": {
					"score": {func() { scoreRowsMulti(dst[:4*n], k, d, q[:4*d], 4) }, func() { scoreRowsMulti8(dst, k, d, q, 8, nil) }},
					"blend": {func() { blendRowsMulti(acc[:4*d], w[:4*n], v, d, 4, nil) }, func() { blendRowsMulti8(acc, w, v, d, 8, nil) }},
				},
				"f16": {
					"score": {func() { scoreRowsMultiF16(dst[:4*n], kh, d, q[:4*d], 4) }, func() { scoreRowsMulti8F16(dst, kh, d, q, 8, nil) }},
					"blend": {func() { blendRowsMultiF16(acc[:4*d], w[:4*n], vh, d, 4, nil) }, func() { blendRowsMulti8F16(acc, w, vh, d, 8, nil) }},
				},
				"bf16": {
					"score": {func() { scoreRowsMultiBF16(dst[:4*n], kb, d, q[:4*d], 4) }, func() { scoreRowsMulti8BF16(dst, kb, d, q, 8, nil) }},
					"blend": {func() { blendRowsMultiBF16(acc[:4*d], w[:4*n], vb, d, 4, nil) }, func() { blendRowsMulti8BF16(acc, w, vb, d, 8, nil) }},
				},
			}
			for _, f := range rows16Formats {
				for i, rows := range []int{4, 8} {
					for _, name := range []string{"score", "blend"} {
						run := kernels[f.name][name][i]
						b.Run(fmt.Sprintf("%s/fmt=%s/rows=%d/n=%d", name, f.name, rows, n), func(b *testing.B) {
							for b.Loop() {
								run()
							}
							reportPeak(b, float64(2*rows*n*d))
						})
					}
				}
			}
		}
	})
}
