package kernel

// No single assembly call processes more than MaxCall elements: Go cannot
// preempt a goroutine inside assembly, so a long call would hold up the
// garbage collector and the scheduler. 64Ki elements take some 10–30 µs.
// The fronts of the element-wise and row kernels cut longer calls; the
// engine sizes its calls of the block kernels within the same budget.
const MaxCall = 1 << 16

// maxCall is MaxCall under the name the kernel table's fronts use.
const maxCall = MaxCall

// BlockSoftmax starts a tile of the online softmax: blockMax, then the
// exponentials and their sums.
func BlockSoftmax(st, ml []float32) {
	BlockMax(st, ml)
	BlockExpSum(st, ml)
}

// BlockKeep sets st[k*16+r] = -Inf where keep[r*stride+k] == 0, for r < rows
// and k < len(st)/16: a whole block's groups of sixteen keys through the
// kernel, the rest through the generic code.
func BlockKeep(st []float32, keep []byte, stride, rows int) {
	if rows == BlockRows {
		n := len(st) / BlockRows &^ 15
		BlockKeep16(st[:n*BlockRows], keep, stride)
		st, keep = st[n*BlockRows:], keep[n:]
	}
	blockKeepGeneric(st, keep, stride, rows)
}

// PrefetchRows asks for rows [0, rows) of x, cols floats each, stride
// apart, to be brought into cache; it changes nothing else. Rows past the
// end of x are not asked for.
func PrefetchRows(x []float32, stride, rows, cols int) {
	if cols <= 0 || cols > len(x) {
		return
	}
	if stride > 0 {
		rows = min(rows, (len(x)-cols)/stride+1)
	}
	if rows > 0 {
		Prefetch(x, stride, rows, cols)
	}
}

// additiveElems is about how many tanh arguments additiveScores takes
// through its kernels at a time: a block of keys whose arguments and
// exponentials (16 KiB each) stay in L1 between the kernels.
const additiveElems = 4096

// AdditiveRows is how many keys of dimension da make one block.
func AdditiveRows(da int) int { return max(1, additiveElems/max(da, 1)) }

// AdditiveScores sets dst[i] = Σ_j v[j]*tanh(s[j] + u[i*stride+j]) for
// i < len(dst), j < len(v): additive (Bahdanau) scores of a block of keys
// whose projections U·h are the rows of u, against the projected query
// s = W·q. A block of keys goes through four kernel calls: the tanh
// arguments, their exponentials (the Exp kernel), the tanh itself and one
// score-rows pass against v. Each tanh is bit-identical to tanh32. tmp
// needs 2*additiveRows(len(v))*len(v) floats.
func AdditiveScores(dst, u []float32, stride int, s, v, tmp []float32) {
	da := len(v)
	n := AdditiveRows(da)
	x, z := tmp[:n*da], tmp[n*da:2*n*da]
	for i0 := 0; i0 < len(dst); i0 += n {
		k := min(n, len(dst)-i0)
		xb, zb := x[:k*da], z[:k*da]
		AdditivePrep(xb, zb, u[i0*stride:], stride, s)
		Expv(zb, zb)
		SoftcapFinish(xb, zb, 1)
		ScoreRows(dst[i0:i0+k], xb, da, v)
	}
}
