//go:build !purego

package attention

// pairedBlocks reports whether the block path pairs its tasks (see
// batch_pair.go): where blockScores2 and blockBlend2 are kernels of their
// own, avx512's.
func pairedBlocks() bool { return active == implAVX512 }
