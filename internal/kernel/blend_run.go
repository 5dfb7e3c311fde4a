package kernel

import "math"

// BlendRunKeys returns how many keys of value rows dv floats wide one
// blockBlend call should take: about bytes of value rows where the blend
// kernel fetches the next call's rows while it computes (avx2), or every
// key it is given where the kernel fetches a row's next line itself
// (avx512, see WholeTileBlend).
func BlendRunKeys(bytes, dv int) int {
	if WholeTileBlend() {
		return math.MaxInt
	}
	return max(8, bytes/(4*max(1, dv)))
}

// blend16RunKeys returns how many keys of 16-bit value rows dv elements
// wide one call of the one-row 16-bit blend should take: all of them where
// it walks a row in one pass, else 16 KiB of rows, so that its later
// passes over the same rows find them in L1 (measured with avx2, 64
// columns a pass:
// docs/performance/amd-epyc-zen5.md#the-one-row-16-bit-blend-in-runs-from-code-comments).
func blend16RunKeys(dv int) int {
	if c := blend16Cols(); c == 0 || dv <= c {
		return math.MaxInt
	}
	return max(8, (16<<10)/(2*dv))
}

// blendInRuns16 calls blend, a one-row 16-bit blend kernel, in runs of
// blend16RunKeys keys. Each column still adds its keys in order, so the
// bits are those of one call.
func blendInRuns16(blend func(acc, w []float32, v []uint16, stride int), acc, w []float32, v []uint16, stride int) {
	keys := blend16RunKeys(len(acc))
	for len(w) > keys {
		blend(acc, w[:keys], v, stride)
		w, v = w[keys:], v[keys*stride:]
	}
	blend(acc, w, v, stride)
}

// BlendRowsF16Runs and blendRowsBF16Runs are blendRowsF16 and
// blendRowsBF16 in runs. They are plain functions, not values made at
// init, so that a program that never blends 16-bit rows links none of
// their kernels.
func BlendRowsF16Runs(acc, w []float32, v []uint16, stride int) {
	blendInRuns16(BlendRowsF16, acc, w, v, stride)
}

func BlendRowsBF16Runs(acc, w []float32, v []uint16, stride int) {
	blendInRuns16(BlendRowsBF16, acc, w, v, stride)
}
