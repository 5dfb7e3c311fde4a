package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/scalar"
	"github.com/glancelab/attention/internal/testutil"
)

// additiveInputs fills n floats around every branch of the tanh that
// follows: the small |x| polynomial, ordinary and saturating values, and
// the special values.
func additiveInputs(n int, seed uint64) []float32 {
	x := softcapInputs(n, seed)
	for i := range x {
		x[i] /= 16
	}
	return x
}

// additivePrep gives the generic code's bits on every implementation, for
// row lengths around the vector width, several rows, strided key rows and
// misaligned starts.
func TestAdditivePrepKernel(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, d := range []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 67, 128} {
			for _, rows := range []int{0, 1, 2, 5} {
				for _, stride := range []int{d, d + 3} {
					for _, off := range []int{0, 3} {
						n := rows * d
						ulen := max(0, (rows-1)*stride+d)
						if rows == 0 {
							ulen = 0
						}
						x, xw := testutil.Offset(n, off)
						z, zw := testutil.Offset(n, (off+5)%8)
						u, _ := testutil.Offset(ulen, (off+1)%8)
						s, _ := testutil.Offset(d, (off+2)%8)
						copy(u, additiveInputs(ulen, uint64(d*100+rows*10+off)))
						copy(s, additiveInputs(d, uint64(d*7+stride)))
						wx, wz := make([]float32, n), make([]float32, n)
						AdditivePrep(x, z, u, stride, s)
						additivePrepGeneric(wx, wz, u, stride, s)
						testutil.CheckGuards(t, xw, off, n)
						testutil.CheckGuards(t, zw, (off+5)%8, n)
						what := fmt.Sprintf("d=%d rows=%d stride=%d off=%d", d, rows, stride, off)
						same(t, what+" x", x, wx)
						same(t, what+" z", z, wz)
						for r := range rows {
							for j := range d {
								v := s[j] + u[r*stride+j]
								if !sameBits(x[r*d+j], v) || !sameBits(z[r*d+j], 2*float32(math.Abs(float64(v)))) {
									t.Fatalf("%s: row %d col %d: x %v z %v for s+u = %v", what, r, j, x[r*d+j], z[r*d+j], v)
								}
							}
						}
					}
				}
			}
		}
	})
}

func TestAdditivePrepStaysInBounds(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, after := range []bool{true, false} {
			for _, d := range []int{1, 7, 8, 9, 67} {
				for _, rows := range []int{1, 3} {
					n := rows * d
					x, z := testutil.Guarded(t, n, after), testutil.Guarded(t, n, after)
					u, s := testutil.Guarded(t, n, after), testutil.Guarded(t, d, after)
					AdditivePrep(x, z, u, d, s)
					// Key rows further apart: the last row ends at the guard.
					u = testutil.Guarded(t, (rows-1)*(d+2)+d, after)
					AdditivePrep(x, z, u, d+2, s)
				}
			}
		}
	})
}

// additiveScores runs many keys in blocks of additiveRows(da): each score
// is v·tanh32(s + u_i) up to the rounding of a dot product of length da.
func TestAdditiveScoresBlocks(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(21)
		for _, da := range []int{1, 5, 64, 130} {
			n := AdditiveRows(da)
			for _, T := range []int{1, n - 1, n, n + 1, 3*n + 5} {
				if T < 1 || T*da > 1<<20 {
					continue
				}
				for _, stride := range []int{da, da + 2} {
					u := testutil.Floats(r, (T-1)*stride+da, 2)
					s := testutil.Floats(r, da, 2)
					v := testutil.Floats(r, da, 1)
					dst := make([]float32, T)
					tmp := make([]float32, 2*n*da)
					AdditiveScores(dst, u, stride, s, v, tmp)
					for i := range T {
						var want, abs float64
						for j := range da {
							p := float64(v[j]) * float64(scalar.Tanh32(s[j]+u[i*stride+j]))
							want += p
							abs += math.Abs(p)
						}
						if !testutil.Close(dst[i], want, reference.Gamma(da)*abs+reference.Tiny) {
							t.Fatalf("da=%d T=%d stride=%d: score %d = %v, want %v", da, T, stride, i, dst[i], want)
						}
					}
				}
			}
		}
	})
}
