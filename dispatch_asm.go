//go:build (amd64 || arm64) && !purego

package attention

import "math"

// The kernels of an architecture with assembly: each branches on useAsm
// (set at init from the CPU's features, see asm_GOARCH.go) and calls the
// assembly directly. Long inputs are split so that no single assembly call
// processes more than maxCall elements: Go cannot preempt a goroutine inside
// assembly, so a long call would hold up the garbage collector and the
// scheduler. 64Ki elements take some 10–30 µs.
const maxCall = 1 << 16

// rowsPerCall is how many rows of d columns fit in one call's budget.
func rowsPerCall(d int) int { return max(1, maxCall/max(d, 1)) }

// Each kernel has a small front that calls the assembly directly in the
// common case (assembly available, input within one call's budget) and an
// out-of-line rest for the generic path and the splitting, whose loop would
// otherwise give every call a larger frame. With the exported kernels
// inlined into their callers, Dot of 128 elements went from 12.1 to 11.1 ns
// (best of an interleaved run; the bare assembly call took 10.4).

func dot(x, y []float32) float32 {
	if useAsm && len(x) <= maxCall {
		return dotAsm(x, y)
	}
	return dotSplit(x, y)
}

func dotSplit(x, y []float32) float32 {
	if !useAsm {
		return dotGeneric(x, y)
	}
	var s float32
	for len(x) > maxCall {
		s += dotAsm(x[:maxCall], y)
		x, y = x[maxCall:], y[maxCall:]
	}
	return s + dotAsm(x, y)
}

func scoreRows(dst, k []float32, stride int, q []float32) {
	if !useAsm {
		scoreRowsGeneric(dst, k, stride, q)
		return
	}
	for r := rowsPerCall(len(q)); len(dst) > r; {
		scoreRowsAsm(dst[:r], k, stride, q)
		dst, k = dst[r:], k[r*stride:]
	}
	scoreRowsAsm(dst, k, stride, q)
}

func axpy(alpha float32, x, y []float32) {
	if useAsm && len(x) <= maxCall {
		axpyAsm(alpha, x, y)
		return
	}
	axpySplit(alpha, x, y)
}

func axpySplit(alpha float32, x, y []float32) {
	if !useAsm {
		axpyGeneric(alpha, x, y)
		return
	}
	for len(x) > maxCall {
		axpyAsm(alpha, x[:maxCall], y)
		x, y = x[maxCall:], y[maxCall:]
	}
	axpyAsm(alpha, x, y)
}

func blendRows(acc, w, v []float32, stride int) {
	if !useAsm {
		blendRowsGeneric(acc, w, v, stride)
		return
	}
	for r := rowsPerCall(len(acc)); len(w) > r; {
		blendRowsAsm(acc, w[:r], v, stride)
		w, v = w[r:], v[r*stride:]
	}
	blendRowsAsm(acc, w, v, stride)
}

func maxf(x []float32) float32 {
	if useAsm && len(x) <= maxCall {
		return maxAsm(x)
	}
	return maxSplit(x)
}

func maxSplit(x []float32) float32 {
	if !useAsm {
		return maxGeneric(x)
	}
	m := float32(math.Inf(-1))
	for len(x) > 0 {
		c := maxAsm(x[:min(len(x), maxCall)])
		if c != c {
			return c
		}
		m = max(m, c)
		x = x[min(len(x), maxCall):]
	}
	return m
}

func expv(dst, x []float32) {
	if !useAsm {
		expGeneric(dst, x)
		return
	}
	for len(x) > maxCall {
		expAsm(dst[:maxCall], x[:maxCall])
		dst, x = dst[maxCall:], x[maxCall:]
	}
	expAsm(dst, x)
}

// expSum sets dst[i] = e^(x[i]-m) and returns their sum. The caller must
// pass an m with x[i]-m <= 86.5 for every i and an x without NaN, as a
// softmax's maximum is: the AVX2 kernel checks only the lower end of its
// fast range, which keeps Softmax within its budget. (The generic and NEON
// kernels take any input.)
func expSum(dst, x []float32, m float32) float32 {
	if useAsm && len(x) <= maxCall {
		return expSumAsm(dst, x, m)
	}
	return expSumSplit(dst, x, m)
}

func expSumSplit(dst, x []float32, m float32) float32 {
	if !useAsm {
		return expSumGeneric(dst, x, m)
	}
	var s float32
	for len(x) > maxCall {
		s += expSumAsm(dst[:maxCall], x[:maxCall], m)
		dst, x = dst[maxCall:], x[maxCall:]
	}
	return s + expSumAsm(dst, x, m)
}

func scale(s float32, x []float32) {
	if useAsm && len(x) <= maxCall {
		scaleAsm(s, x)
		return
	}
	scaleSplit(s, x)
}

func scaleSplit(s float32, x []float32) {
	if !useAsm {
		scaleGeneric(s, x)
		return
	}
	for len(x) > maxCall {
		scaleAsm(s, x[:maxCall])
		x = x[maxCall:]
	}
	scaleAsm(s, x)
}

// The block kernels are not split: the engine sizes each call (keys per
// tile times the row length) within the same budget.

func blockScores(st, qt, k []float32, stride int) {
	if !useAsm {
		blockScoresGeneric(st, qt, k, stride)
		return
	}
	blockScoresAsm(st, qt, k, stride)
}

func blockSoftmax(st, ml []float32) {
	if !useAsm {
		blockMaxGeneric(st, ml)
		blockExpSumGeneric(st, ml)
		return
	}
	blockSoftmaxAsm(st, ml)
}

// blockExp sets st[j*16+r] = e^(st[j*16+r] - mu[r]), adding them to l as
// the exp pass of blockSoftmax does.
func blockExp(st, ml []float32) {
	if !useAsm {
		blockExpSumGeneric(st, ml)
		return
	}
	blockExpAsm(st, ml)
}

func blockBlend(ot, st, v []float32, stride int, c []float32) {
	if !useAsm {
		blockBlendGeneric(ot, st, v, stride, c)
		return
	}
	blockBlendAsm(ot, st, v, stride, c)
}

func blockIn(qt, q []float32, stride, rows int) {
	if !useAsm {
		blockInGeneric(qt, q, stride, rows)
		return
	}
	blockInAsm(qt, q, stride, rows)
}

func blockOut(o []float32, stride, rows int, ot []float32) {
	if !useAsm {
		blockOutGeneric(o, stride, rows, ot)
		return
	}
	blockOutAsm(o, stride, rows, ot)
}

// prefetchRows asks for rows [0, rows) of x, cols floats each, stride
// apart, to be brought into cache; it changes nothing else. Rows past the
// end of x are not asked for.
func prefetchRows(x []float32, stride, rows, cols int) {
	if cols <= 0 || !useAsm {
		return
	}
	if stride > 0 {
		rows = min(rows, (len(x)-cols)/stride+1)
	}
	if rows > 0 && cols <= len(x) {
		prefetchRowsAsm(x, stride, rows, cols)
	}
}

func blockKeep(st []float32, keep []byte, stride, rows int) {
	if !useAsm {
		blockKeepGeneric(st, keep, stride, rows)
		return
	}
	blockKeepAsm(st, keep, stride, rows)
}

// The softcap kernels and additivePrep work on one tile of scratch at a
// time.

func additivePrep(x, z, u []float32, stride int, s []float32) {
	if !useAsm {
		additivePrepGeneric(x, z, u, stride, s)
		return
	}
	additivePrepAsm(x, z, u, stride, s)
}

func softcapPrep(x, z []float32, inv float32) {
	if !useAsm {
		softcapPrepGeneric(x, z, inv)
		return
	}
	softcapPrepAsm(x, z, inv)
}

func softcapFinish(x, e []float32, c float32) {
	if !useAsm {
		softcapFinishGeneric(x, e, c)
		return
	}
	softcapFinishAsm(x, e, c)
}
