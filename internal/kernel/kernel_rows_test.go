package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

func TestScoreRows(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, d := range []int{0, 1, 3, 7, 8, 9, 16, 31, 64, 67, 128} {
			for _, rows := range []int{0, 1, 2, 3, 5, 8, 9, 17} {
				for _, pad := range []int{0, 1, 5} {
					stride := d + pad
					off := (d + rows) % 8
					k, whole := testutil.Fill(uint64(d*1000+rows), max(0, (rows-1)*stride+d), off, 2, false)
					q, _ := testutil.Fill(uint64(d+7), d, 3, 2, false)
					dst, dwhole := testutil.Offset(rows, 5)
					ScoreRows(dst, k, stride, q)
					testutil.CheckGuards(t, dwhole, 5, rows)
					testutil.CheckGuards(t, whole, off, len(k))
					for i := range rows {
						want, abs := reference.Dot(k[i*stride:i*stride+d], q)
						if !testutil.Close(dst[i], want, reference.DotBound(d, abs)) {
							t.Fatalf("d=%d rows=%d stride=%d: row %d = %v, want %v", d, rows, stride, i, dst[i], want)
						}
					}
				}
			}
		}
		// A large K takes the AVX2 kernel's prefetching loops (one for
		// contiguous rows, one for rows further apart); rows that are
		// not a multiple of eight end in the four- and one-row loops.
		for _, d := range []int{1, 8, 15, 16, 67, 128, 131} {
			for _, pad := range []int{0, 3, 2 * d} {
				rows, stride := scoreStreamBytes/(4*d)+13, d+pad
				k, whole := testutil.Fill(uint64(d+pad), (rows-1)*stride+d, 3, 2, false)
				q, _ := testutil.Fill(uint64(d+7), d, 1, 2, false)
				dst := make([]float32, rows)
				ScoreRows(dst, k, stride, q)
				testutil.CheckGuards(t, whole, 3, len(k))
				for i := range rows {
					want, abs := reference.Dot(k[i*stride:i*stride+d], q)
					if !testutil.Close(dst[i], want, reference.DotBound(d, abs)) {
						t.Fatalf("d=%d rows=%d stride=%d: row %d = %v, want %v", d, rows, stride, i, dst[i], want)
					}
				}
			}
		}
	})
}

func TestBlendRows(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, d := range []int{0, 1, 3, 7, 8, 9, 16, 31, 64, 67, 128} {
			for _, rows := range []int{0, 1, 2, 3, 5, 8, 9, 17} {
				stride := d + rows%3
				v, _ := testutil.Fill(uint64(d*31+rows), max(0, (rows-1)*stride+d), rows%8, 3, false)
				w, _ := testutil.Fill(uint64(d*37+rows), rows, 1, 1, false)
				acc, whole := testutil.Fill(uint64(d*41+rows), d, 6, 1, false)
				acc0 := append([]float32(nil), acc...)
				BlendRows(acc, w, v, stride)
				testutil.CheckGuards(t, whole, 6, d)
				for j := range d {
					want, abs := float64(acc0[j]), math.Abs(float64(acc0[j]))
					for i := range rows {
						p := float64(w[i]) * float64(v[i*stride+j])
						want += p
						abs += math.Abs(p)
					}
					if !testutil.Close(acc[j], want, reference.Gamma(rows+1)*abs) {
						t.Fatalf("d=%d rows=%d: acc[%d] = %v, want %v", d, rows, j, acc[j], want)
					}
				}
			}
		}
	})
}

// The multi-row kernels give each row the bits the one-row kernels give
// it, whatever the row count and the row's place among the rows: the
// blend for any number of keys, the scores for keys in whole groups of
// eight (the last keys of other counts are summed in another order). So
// one computation may take some rows through each, as AttendMany's tiled
// path and Batched's decode step do.
func TestMultiKernelsMatchOneRow(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(61)
		for _, d := range []int{1, 5, 8, 13, 16, 24, 31, 64, 65, 100, 128, 131} {
			for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 16, 31, 64, 65, 200} {
				for _, rows := range multiRowCounts {
					stride := d + r.IntN(3)
					kv := testutil.Floats(r, max(0, (n-1)*stride+d), 2)
					q, w := testutil.Floats(r, rows*d, 2), testutil.Floats(r, rows*n, 1)
					acc := testutil.Floats(r, rows*d, 1)
					one := append([]float32(nil), acc...)
					blendMultiOf(acc, w, kv, stride, rows, kv[len(kv)/3:])
					for i := range rows {
						BlendRows(one[i*d:(i+1)*d], w[i*n:(i+1)*n], kv, stride)
					}
					what := fmt.Sprintf("d=%d n=%d rows=%d", d, n, rows)
					identicalBlend(t, what+": blendRowsMulti", acc, one)
					// And with special values among the weights, the value
					// rows and the accumulators.
					ws, vs := withSpecials(r, w), withSpecials(r, kv)
					acc = withSpecials(r, acc)
					one = append(one[:0], acc...)
					blendMultiOf(acc, ws, vs, stride, rows, nil)
					for i := range rows {
						BlendRows(one[i*d:(i+1)*d], ws[i*n:(i+1)*n], vs, stride)
					}
					identicalBlend(t, what+" specials: blendRowsMulti", acc, one)
					if n%8 != 0 {
						continue
					}
					dst, want := make([]float32, rows*n), make([]float32, rows*n)
					scoreMultiOf(dst, kv, stride, q, rows)
					for i := range rows {
						ScoreRows(want[i*n:(i+1)*n], kv, stride, q[i*d:(i+1)*d])
					}
					testutil.Identical(t, what+": scoreRowsMulti", dst, want)
				}
			}
		}
	})
}

// identicalBlend is identical for the sums of a multi-row blend against
// the one-row kernel's, but for a NaN's payload: where a weight and a
// value are both NaN, x86 keeps the payload of the FMA's first NaN
// operand, and the avx512 eight-row and 16-bit multi-row blends take the
// weight as the last (their broadcast operand) where the one-row kernels
// take it first. No
// kernel's contract names a payload; a NaN must still be a NaN.
func identicalBlend(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			t.Fatalf("%s[%d] = %v (%#x), want %v (%#x)", what, i, g, math.Float32bits(g), w, math.Float32bits(w))
		}
	}
}

// withSpecials returns a copy of x with about one element in 16 replaced
// by one of testutil.Specials.
func withSpecials(r *rand.Rand, x []float32) []float32 {
	y := append([]float32(nil), x...)
	for i := range y {
		if r.IntN(16) == 0 {
			y[i] = testutil.Specials[r.IntN(len(testutil.Specials))]
		}
	}
	return y
}

// The row kernels cross the row budget of one assembly call: their fronts
// split long calls so that a goroutine is never stuck in one for long.
func TestRowKernelsOverBudget(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(99)
		// 2500 rows of 64 cross the row budget twice.
		const rows, d, stride = 2500, 64, 67
		k := testutil.Floats(r, rows*stride, 1)
		q := testutil.Floats(r, d, 1)
		out := make([]float32, rows)
		ScoreRows(out, k, stride, q)
		for i := range rows {
			want, abs := reference.Dot(k[i*stride:i*stride+d], q)
			if !testutil.Close(out[i], want, reference.DotBound(d, abs)) {
				t.Fatalf("scoreRows row %d = %v, want %v", i, out[i], want)
			}
		}
		w := testutil.Floats(r, rows, 1)
		acc := make([]float32, d)
		BlendRows(acc, w, k, stride)
		for j := range d {
			var want, abs float64
			for i := range rows {
				p := float64(w[i]) * float64(k[i*stride+j])
				want += p
				abs += math.Abs(p)
			}
			if !testutil.Close(acc[j], want, reference.Gamma(rows+1)*abs) {
				t.Fatalf("blendRows acc[%d] = %v, want %v", j, acc[j], want)
			}
		}
	})
}
