package kernel

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkMultiRowKernels times the row path's multi-row kernels, a decode
// step's inner loop, from L1 (24 keys) and L2 (256 keys) at d = 128: the
// score and the blend of a group of two to eight query rows against the
// same key and value rows, over float32, float16, bfloat16 and int8 rows.
// Rows above four are one call of the wide kernels where an implementation
// has them in assembly (see multiWide), a call of four and one of the rest
// elsewhere (int8 always). Each reports GFLOP/s and its fraction of the FMA peak measured
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
			k8, v8 := i8RowsOf(k, n, d), i8RowsOf(v, n, d)
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
				"i8": {
					"score": func(R int) { scoreI8Rows(dst[:R*n], k8, d+4, q[:R*d], R) },
					"blend": func(R int) { blendI8Rows(acc[:R*d], w[:R*n], v8, d+4, R) },
				},
			}
			for _, f := range append(rows16Formats, rows16Format{"i8", 1}) {
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

// i8RowsOf quantises n rows of d floats into int8 rows of stride d+4.
func i8RowsOf(f []float32, n, d int) []int8 {
	rows := make([]int8, n*(d+4))
	for i := range n {
		NarrowI8(rows[i*(d+4):], f[i*d:(i+1)*d])
	}
	return rows
}

// scoreI8Rows scores up to eight rows over int8 keys, four at a call.
func scoreI8Rows(dst []float32, k []int8, stride int, q []float32, rows int) {
	n, d := len(dst)/rows, len(q)/rows
	for r := 0; r < rows; r += 4 {
		R := min(4, rows-r)
		ScoreRowsMultiI8(dst[r*n:(r+R)*n], k, stride, q[r*d:(r+R)*d], R)
	}
}

// blendI8Rows blends up to eight rows over int8 values, four at a call.
func blendI8Rows(acc, w []float32, v []int8, stride int, rows int) {
	n, d := len(w)/rows, len(acc)/rows
	for r := 0; r < rows; r += 4 {
		R := min(4, rows-r)
		BlendRowsMultiI8(acc[r*d:(r+R)*d], w[r*n:(r+R)*n], v, stride, R, nil)
	}
}
