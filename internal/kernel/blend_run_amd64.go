//go:build !purego

package kernel

// WholeTileBlend reports whether the blend kernel in use fetches ahead
// within the rows of one call, so that a tile should go in one call
// rather than in runs. avx512's does: each group of columns fetches the
// line the next group reads; in runs, every run's first lines were a miss
// and every run reloaded and stored the output lanes once per group
// (measured: docs/performance/amd-epyc-zen5.md#block-path-tiles-from-code-comments).
func WholeTileBlend() bool { return active == ImplAVX512 }

// blend16Cols is how many columns of a 16-bit value row the one-row
// blend in use takes a pass (blendRowsF16, blendRowsBF16: eight vectors
// of accumulators), or 0 where that is not known to matter.
func blend16Cols() int {
	switch active {
	case ImplAVX512:
		return 128
	case ImplAVX2:
		return 64
	}
	return 0
}
