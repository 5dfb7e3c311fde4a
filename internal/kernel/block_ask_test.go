package kernel

import (
	"slices"

	"github.com/glancelab/attention/internal/testutil"
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
		qt, k, st := a.floats(BlockRows*d, 2), a.floats(rowsLen(n, stride, d), 2), a.floats(BlockRows*n, 1)
		ask := a.halves(n * d)
		want := slices.Clone(st)
		BlockScores(want, qt, k, stride)
		BlockScoresAsk(st, qt, k, stride, ask)
		if i := testutil.FirstDiff(st, want); i >= 0 {
			a.t.Fatalf("n=%d d=%d stride=%d: st[%d] = %v, blockScores %v", n, d, stride, i, st[i], want[i])
		}
		return []result{{"st", st, blockScoresBound(qt, k, n, d, stride)}}
	}
	kernelCases["blockBlendAsk"] = func(a *kernelArgs, n int) []result {
		dv, stride := askShape(n)
		ot, st, v := a.floats(BlockRows*dv, 2), a.floats(BlockRows*n, 1), a.floats(rowsLen(n, stride, dv), 3)
		c := a.floats(BlockRows*(n%2), 1) // odd n rescale, even n do not
		ask := a.halves(n * dv)
		bound := blockBlendBound(ot, st, v, c, n, stride)
		want := slices.Clone(ot)
		BlockBlend(want, st, v, stride, c)
		BlockBlendAsk(ot, st, v, stride, c, ask)
		if i := testutil.FirstDiff(ot, want); i >= 0 {
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
