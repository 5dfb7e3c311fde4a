package attention

import "github.com/glancelab/attention/internal/impl"

// Implementation returns the name of the kernel implementation in use:
// "generic" (pure Go) or an accelerated path, "avx512", "avx2" or "neon".
// By default it is the first of Implementations, the fastest this CPU runs.
//
// The environment variable ATTENTION_IMPL, read once at program start,
// chooses another: "generic", or any name Implementations lists. Its value
// is trimmed of spaces and matched in any case (" AVX2" is "avx2"). Any
// other value, a name no implementation has or one this CPU lacks the
// features for, is ignored: the default runs (generic only if nothing
// faster is available), and ImplementationRequest says why. Built with the
// tag purego, the package has only the generic implementation.
func Implementation() string { return impl.Active() }

// ImplementationRequest returns the value of ATTENTION_IMPL as read at
// program start ("" if unset) and, if the value was ignored, an
// *ImplementationError (matching ErrArgument) that names the value, why it
// was ignored and the implementation that runs instead. err is nil if the
// variable is unset or empty, or was honoured.
func ImplementationRequest() (requested string, err error) {
	requested, rej := impl.Request()
	if rej == nil {
		return requested, nil
	}
	var names []string
	for _, in := range impl.All() {
		names = append(names, in.Name)
	}
	return requested, &ImplementationError{Value: requested, Missing: rej.Missing, Names: names, Running: rej.Instead}
}

// Implementations lists every implementation this CPU can run, the default
// first and "generic" last.
func Implementations() []string { return impl.List() }

// No single assembly call processes more than maxCall elements: Go cannot
// preempt a goroutine inside assembly, so a long call would hold up the
// garbage collector and the scheduler. 64Ki elements take some 10–30 µs.
// The fronts of the element-wise and row kernels cut longer calls; the
// engine sizes its calls of the block kernels within the same budget.
const maxCall = 1 << 16

// blockSoftmax starts a tile of the online softmax: blockMax, then the
// exponentials and their sums.
func blockSoftmax(st, ml []float32) {
	blockMax(st, ml)
	blockExpSum(st, ml)
}

// blockKeep sets st[k*16+r] = -Inf where keep[r*stride+k] == 0, for r < rows
// and k < len(st)/16: a whole block's groups of sixteen keys through the
// kernel, the rest through the generic code.
func blockKeep(st []float32, keep []byte, stride, rows int) {
	if rows == blockRows {
		n := len(st) / blockRows &^ 15
		blockKeep16(st[:n*blockRows], keep, stride)
		st, keep = st[n*blockRows:], keep[n:]
	}
	blockKeepGeneric(st, keep, stride, rows)
}

// prefetchRows asks for rows [0, rows) of x, cols floats each, stride
// apart, to be brought into cache; it changes nothing else. Rows past the
// end of x are not asked for.
func prefetchRows(x []float32, stride, rows, cols int) {
	if cols <= 0 || cols > len(x) {
		return
	}
	if stride > 0 {
		rows = min(rows, (len(x)-cols)/stride+1)
	}
	if rows > 0 {
		prefetch(x, stride, rows, cols)
	}
}

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
