package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// FuzzRowKernels drives the row path's score and blend kernels, for one
// query row and for several, over values decoded from the data (special
// values among them) in key rows that may lie apart. Half the inputs
// have 64 or 128 columns, the widths at which the avx512 scores hold the
// query rows in registers and read each key row in address order; the
// rest 1 to 140. Each implementation is held to the exact values within
// the kernels' bounds, and the multi-row kernels to the one-row ones bit
// for bit where they promise it: blends always, scores over whole groups
// of eight keys (any NaN matching any NaN: no kernel names a payload).
func FuzzRowKernels(f *testing.F) {
	f.Add(uint8(0), uint8(16), uint8(1), uint8(0), []byte{141, 157, 125, 189, 7, 99})
	f.Add(uint8(1), uint8(24), uint8(2), uint8(1), []byte{1, 2, 250, 77, 3, 199, 255, 0, 44})
	f.Add(uint8(1), uint8(13), uint8(0), uint8(3), []byte{9, 200, 31, 140, 252, 130})
	f.Add(uint8(0), uint8(40), uint8(3), uint8(2), []byte{251, 130, 140, 120, 110})
	f.Add(uint8(1), uint8(33), uint8(7), uint8(0), []byte{77, 3, 199, 255, 0, 44, 124, 60})
	f.Add(uint8(200), uint8(9), uint8(5), uint8(1), []byte{141, 157, 125})
	f.Fuzz(func(t *testing.T, dB, nB, rowsB, strideB uint8, data []byte) {
		d := []int{64, 128}[dB%2]
		if dB >= 128 {
			d = 1 + int(dB)%140
		}
		n, rows, stride := int(nB), 1+int(rowsB)%8, d+int(strideB)%4
		vals := testutil.DecodeFloats(data)
		next := 0
		take := func(m int) []float32 {
			x := make([]float32, m)
			for i := range x {
				if len(vals) > 0 {
					x[i] = vals[next%len(vals)]
					next++
				}
			}
			return x
		}
		k, q := take(rowsLen(n, stride, d)), take(rows*d)
		w, acc := take(rows*n), take(rows*d)
		testutil.EachImpl(func(name string) {
			what := fmt.Sprintf("%s d=%d n=%d rows=%d stride=%d", name, d, n, rows, stride)
			dst, one := make([]float32, rows*n), make([]float32, rows*n)
			scoreMultiOf(dst, k, stride, q, rows)
			for r := range rows {
				qr := q[r*d : (r+1)*d]
				ScoreRows(one[r*n:(r+1)*n], k, stride, qr)
				for j := range n {
					want, abs := reference.Dot(k[j*stride:j*stride+d], qr)
					if !testutil.Close(dst[r*n+j], want, reference.DotBound(d, abs)) && !testutil.Overflowed(want, abs) {
						t.Fatalf("%s: score of row %d, key %d = %v, want %v", what, r, j, dst[r*n+j], want)
					}
				}
			}
			if n%8 == 0 {
				identicalBlend(t, what+": scoreRowsMulti against scoreRows", dst, one)
			}

			got, byRow := append([]float32(nil), acc...), append([]float32(nil), acc...)
			blendMultiOf(got, w, k, stride, rows, k[len(k)/2:])
			for r := range rows {
				BlendRows(byRow[r*d:(r+1)*d], w[r*n:(r+1)*n], k, stride)
				for c := range d {
					want, abs := float64(acc[r*d+c]), math.Abs(float64(acc[r*d+c]))
					for j := range n {
						p := float64(w[r*n+j]) * float64(k[j*stride+c])
						want += p
						abs += math.Abs(p)
					}
					bound := reference.Gamma(n+1)*abs + float64(n+1)*0x1p-149
					if !testutil.Close(got[r*d+c], want, bound) && !testutil.Overflowed(want, abs) {
						t.Fatalf("%s: blend of row %d, column %d = %v, want %v", what, r, c, got[r*d+c], want)
					}
				}
			}
			identicalBlend(t, what+": blendRowsMulti against blendRows", got, byRow)
		})
	})
}
