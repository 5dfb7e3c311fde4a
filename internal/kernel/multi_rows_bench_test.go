package kernel

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
// them in assembly (see multiWide), a call of four and one of the rest
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
			s32, b32 := scoreAnyRows(ScoreRowsMulti, ScoreRowsMulti8), blendAnyRows(BlendRowsMulti, BlendRowsMulti8)
			sh, bh := scoreAnyRows(ScoreRowsMultiF16, ScoreRowsMulti8F16), blendAnyRows(BlendRowsMultiF16, BlendRowsMulti8F16)
			sb, bb := scoreAnyRows(ScoreRowsMultiBF16, ScoreRowsMulti8BF16), blendAnyRows(BlendRowsMultiBF16, BlendRowsMulti8BF16)
			kernels := map[string]map[string]func(R int){
				"f32": {
					"score": func(R int) { s32(dst[:R*n], k, d, q[:R*d], R) },
					"blend": func(R int) { b32(acc[:R*d], w[:R*n], v, d, R) },
				},
				"f16": {
					"score": func(R int) { sh(dst[:R*n], kh, d, q[:R*d], R) },
					"blend": func(R int) { bh(acc[:R*d], w[:R*n], vh, d, R) },
				},
				"bf16": {
					"score": func(R int) { sb(dst[:R*n], kb, d, q[:R*d], R) },
					"blend": func(R int) { bb(acc[:R*d], w[:R*n], vb, d, R) },
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

// scoreAnyRows returns a score of one to eight rows: multi up to four,
// wide (asking for nothing ahead) above.
func scoreAnyRows[E float32 | uint16](multi func(dst []float32, k []E, stride int, q []float32, rows int),
	wide func(dst []float32, k []E, stride int, q []float32, rows int, also []E)) func(dst []float32, k []E, stride int, q []float32, rows int) {
	return func(dst []float32, k []E, stride int, q []float32, rows int) {
		if rows > 4 {
			wide(dst, k, stride, q, rows, nil)
			return
		}
		multi(dst, k, stride, q, rows)
	}
}

// blendAnyRows returns a blend of one to eight rows, asking for nothing
// ahead: multi up to four, wide above.
func blendAnyRows[E float32 | uint16](multi, wide func(acc, w []float32, v []E, stride int, rows int, next []E)) func(acc, w []float32, v []E, stride int, rows int) {
	return func(acc, w []float32, v []E, stride int, rows int) {
		if rows > 4 {
			wide(acc, w, v, stride, rows, nil)
			return
		}
		multi(acc, w, v, stride, rows, nil)
	}
}
