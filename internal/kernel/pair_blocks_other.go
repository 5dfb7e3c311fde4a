//go:build purego || !amd64

package kernel

// PairedBlocks: see pair_blocks_amd64.go. Elsewhere the paired kernels
// are two calls of the one-block ones, and pairing would gain nothing.
func PairedBlocks() bool { return false }
