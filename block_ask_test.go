package attention

import (
	"math"
	"slices"

	"github.com/glancelab/attention/internal/reference"
)

// The Ask block kernels give the bits of the kernels without, on every
// implementation, against the generic twin within its bound, with their
// inputs and ask placed at offsets and against guard pages. The shapes
// take turns by n: strided rows with a tail of dimensions or columns, and
// packed rows of 64 and 128 floats (the scores' constant-offset loops),
// so that full groups of keys and columns, which ask, and the tails,
// which do not, all run. A prefetch never faults, so the guard pages
// cannot see a kernel asking past ask; askStep's doc gives the count by
// construction.
func init() {
	kernelCases["blockScoresAsk"] = func(a *kernelArgs, n int) []result {
		d, stride := askShape(n)
		qt, k, st := a.floats(blockRows*d, 2), a.floats(rowsLen(n, stride, d), 2), a.floats(blockRows*n, 1)
		ask := a.halves(n * d)
		want := slices.Clone(st)
		blockScores(want, qt, k, stride)
		blockScoresAsk(st, qt, k, stride, ask)
		if i := firstDiff(st, want); i >= 0 {
			a.t.Fatalf("n=%d d=%d stride=%d: st[%d] = %v, blockScores %v", n, d, stride, i, st[i], want[i])
		}
		bound := make([]float64, len(st))
		q := make([]float32, d)
		for j := range n {
			for r := range blockRows {
				for c := range q {
					q[c] = qt[c*blockRows+r]
				}
				bound[j*blockRows+r] = reference.DotBound(d, absDot(q, k[j*stride:j*stride+d]))
			}
		}
		return []result{{"st", st, bound}}
	}
	kernelCases["blockBlendAsk"] = func(a *kernelArgs, n int) []result {
		dv, stride := askShape(n)
		ot, st, v := a.floats(blockRows*dv, 2), a.floats(blockRows*n, 1), a.floats(rowsLen(n, stride, dv), 3)
		c := a.floats(blockRows*(n%2), 1) // odd n rescale, even n do not
		ask := a.halves(n * dv)
		bound := make([]float64, len(ot))
		for i := range dv {
			for r := range blockRows {
				o := ot[i*blockRows+r]
				if len(c) > 0 {
					o *= c[r]
				}
				abs := math.Abs(float64(o))
				for j := range n {
					abs += math.Abs(float64(st[j*blockRows+r]) * float64(v[j*stride+i]))
				}
				bound[i*blockRows+r] = reference.Gamma(n+1)*abs + float64(n+1)*0x1p-149
			}
		}
		want := slices.Clone(ot)
		blockBlend(want, st, v, stride, c)
		blockBlendAsk(ot, st, v, stride, c, ask)
		if i := firstDiff(ot, want); i >= 0 {
			a.t.Fatalf("n=%d dv=%d stride=%d: ot[%d] = %v, blockBlend %v", n, dv, stride, i, ot[i], want[i])
		}
		return []result{{"ot", ot, bound}}
	}
}

// askShape returns the row length and stride of the Ask kernels' case of
// n keys.
func askShape(n int) (d, stride int) {
	switch n % 3 {
	case 1:
		return 64, 64
	case 2:
		return 128, 128
	}
	return 37, 41 // two full blocks of sixteen and a tail
}
