//go:build purego || !amd64

package attention

// multiScoreStreams: see multi_streams_amd64.go. No other implementation's
// scoreRowsMulti prefetches.
func multiScoreStreams() bool { return false }

// multiBlendStreams: see multi_streams_amd64.go.
func multiBlendStreams() bool { return false }

// multiAsksAhead: see multi_streams_amd64.go.
func multiAsksAhead() bool { return false }

// multiWide: see multi_streams_amd64.go.
func multiWide() bool { return false }

// pairedBF16: see multi_streams_amd64.go.
func pairedBF16() bool { return false }

// multiBlendSplits: see multi_streams_amd64.go.
func multiBlendSplits(rows, dv int) bool { return false }

// multiScoreRowMajor: see multi_streams_amd64.go.
func multiScoreRowMajor(rows, d int) bool { return false }
