//go:build !purego

package attention

// wholeTileBlend reports whether the blend kernel in use fetches ahead
// within the rows of one call, so that a tile should go in one call
// rather than in runs. avx512's does: each group of columns fetches the
// line the next group reads. Measured here (Zen 5) against runs of 8 KiB,
// prefill (d = 64) took 1–5% less time and a chunked long row (d = 128)
// about 10% less: every run's first lines were a miss and every run
// reloaded and stored the output lanes once per group.
func wholeTileBlend() bool { return active == implAVX512 }
