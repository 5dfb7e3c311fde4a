//go:build !purego

package kernel

// PairedBlocks reports whether the block path pairs its tasks (see
// batch_pair.go): where blockScores2 and blockBlend2 are kernels of their
// own, avx512's.
func PairedBlocks() bool { return active == ImplAVX512 }
