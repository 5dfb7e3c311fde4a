//go:build purego || !(amd64 || arm64)

package attention

// Without assembly for this architecture (or with the purego tag) every
// kernel runs the generic code.

func dot(x, y []float32) float32 { return dotGeneric(x, y) }

func scoreRows(dst, k []float32, stride int, q []float32) {
	scoreRowsGeneric(dst, k, stride, q)
}

func axpy(alpha float32, x, y []float32) { axpyGeneric(alpha, x, y) }

func blendRows(acc, w, v []float32, stride int) { blendRowsGeneric(acc, w, v, stride) }

func maxf(x []float32) float32 { return maxGeneric(x) }

func expv(dst, x []float32) { expGeneric(dst, x) }

// expSum sets dst[i] = e^(x[i]-m) and returns their sum; see the asm
// version for what callers guarantee.
func expSum(dst, x []float32, m float32) float32 { return expSumGeneric(dst, x, m) }

func scale(s float32, x []float32) { scaleGeneric(s, x) }

func blockScores(st, qt, k []float32, stride int) { blockScoresGeneric(st, qt, k, stride) }

func blockSoftmax(st, ml []float32) {
	blockMaxGeneric(st, ml)
	blockExpSumGeneric(st, ml)
}

func blockExp(st, ml []float32) { blockExpSumGeneric(st, ml) }

func blockBlend(ot, st, v []float32, stride int, c []float32) {
	blockBlendGeneric(ot, st, v, stride, c)
}

func blockIn(qt, q []float32, stride, rows int) { blockInGeneric(qt, q, stride, rows) }

func blockOut(o []float32, stride, rows int, ot []float32) { blockOutGeneric(o, stride, rows, ot) }

func prefetchRows(x []float32, stride, rows, cols int) {}

func blockKeep(st []float32, keep []byte, stride, rows int) {
	blockKeepGeneric(st, keep, stride, rows)
}

func softcapPrep(x, z []float32, inv float32) { softcapPrepGeneric(x, z, inv) }

func additivePrep(x, z, u []float32, stride int, s []float32) {
	additivePrepGeneric(x, z, u, stride, s)
}

func softcapFinish(x, e []float32, c float32) { softcapFinishGeneric(x, e, c) }
