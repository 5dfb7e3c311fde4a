//go:build purego || !amd64

package kernel

// MultiScoreStreams: see multi_streams_amd64.go. No other implementation's
// scoreRowsMulti prefetches.
func MultiScoreStreams() bool { return false }

// MultiBlendStreams: see multi_streams_amd64.go.
func MultiBlendStreams() bool { return false }

// MultiAsksAhead: see multi_streams_amd64.go.
func MultiAsksAhead() bool { return false }

// MultiWide: see multi_streams_amd64.go.
func MultiWide() bool { return false }

// PairedBF16: see multi_streams_amd64.go.
func PairedBF16() bool { return false }

// MultiBlendSplits: see multi_streams_amd64.go.
func MultiBlendSplits(rows, dv int) bool { return false }

// MultiScoreRowMajor: see multi_streams_amd64.go.
func MultiScoreRowMajor(rows, d int) bool { return false }
