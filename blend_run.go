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
