package attention

import "math"

// blendRunKeys returns how many keys of value rows dv floats wide one
// blockBlend call should take: about bytes of value rows where the blend
// kernel fetches the next call's rows while it computes (avx2), or every
// key it is given where the kernel fetches a row's next line itself
// (avx512, see wholeTileBlend).
func blendRunKeys(bytes, dv int) int {
	if wholeTileBlend() {
		return math.MaxInt
	}
	return max(8, bytes/(4*max(1, dv)))
}

// blend16RunKeys returns how many keys of 16-bit value rows dv elements
// wide one call of the one-row 16-bit blend should take: all of them where
// it walks a row in one pass, else 16 KiB of rows, so that its later
// passes over the same rows find them in L1. With avx2 (64 columns a pass)
// a grouped decode step (H 32, Hkv 8, d 128) over an f16 cache took 1.34
// ms against 1.58 with a call per tile of 512 keys at Tk 4096, 9.8 against
// 12.9 at Tk 32768 (Zen 5, medians of 5 alternating rounds).
func blend16RunKeys(dv int) int {
	if c := blend16Cols(); c == 0 || dv <= c {
		return math.MaxInt
	}
	return max(8, (16<<10)/(2*dv))
}

// inRuns16 returns blend, a one-row 16-bit blend kernel, called in runs of
// blend16RunKeys keys. Each column still adds its keys in order, so the
// bits are those of one call.
func inRuns16(blend func(acc, w []float32, v []uint16, stride int)) func(acc, w []float32, v []uint16, stride int) {
	return func(acc, w []float32, v []uint16, stride int) {
		keys := blend16RunKeys(len(acc))
		for len(w) > keys {
			blend(acc, w[:keys], v, stride)
			w, v = w[keys:], v[keys*stride:]
		}
		blend(acc, w, v, stride)
	}
}

var (
	blendRowsF16Runs  = inRuns16(blendRowsF16)
	blendRowsBF16Runs = inRuns16(blendRowsBF16)
)
