package attention

import "github.com/glancelab/attention/internal/impl"

// Implementation returns the name of the kernel implementation in use:
// "generic" (pure Go) or the name of an accelerated path such as "avx2".
// The environment variable ATTENTION_IMPL=generic, read at program start,
// or the build tag purego force the generic path.
func Implementation() string { return impl.Active() }

// Implementations lists every implementation this CPU can run, the default
// first and "generic" last.
func Implementations() []string { return impl.List() }

// additiveElems is about how many tanh arguments additiveScores takes
// through its kernels at a time: a block of keys whose arguments and
// exponentials (16 KiB each) stay in L1 between the kernels.
const additiveElems = 4096

// additiveRows is how many keys of dimension da make one block.
func additiveRows(da int) int { return max(1, additiveElems/max(da, 1)) }

// additiveScores sets dst[i] = Σ_j v[j]*tanh(s[j] + u[i*stride+j]) for
// i < len(dst), j < len(v): additive (Bahdanau) scores of a block of keys
// whose projections U·h are the rows of u, against the projected query
// s = W·q. A block of keys goes through four kernel calls: the tanh
// arguments, their exponentials (the Exp kernel), the tanh itself and one
// score-rows pass against v. Each tanh is bit-identical to tanh32. tmp
// needs 2*additiveRows(len(v))*len(v) floats.
func additiveScores(dst, u []float32, stride int, s, v, tmp []float32) {
	da := len(v)
	n := additiveRows(da)
	x, z := tmp[:n*da], tmp[n*da:2*n*da]
	for i0 := 0; i0 < len(dst); i0 += n {
		k := min(n, len(dst)-i0)
		xb, zb := x[:k*da], z[:k*da]
		additivePrep(xb, zb, u[i0*stride:], stride, s)
		expv(zb, zb)
		softcapFinish(xb, zb, 1)
		scoreRows(dst[i0:i0+k], xb, da, v)
	}
}
