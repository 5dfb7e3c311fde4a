//go:build !purego

package attention

// multiScoreStreams reports whether scoreRowsMulti streams K from memory
// about as fast as the one-row scoreRows, so that the row path scores
// every row through it (see tileRows). The avx512 kernel prefetches ahead
// and does: a grouped decode step (H = 32, Hkv = 8, Tk = 4096, d = 128)
// took 0.67 ms scoring all four rows through it against 0.85 with row 0
// through scoreRows. The avx2 kernel does not prefetch, and the same step
// took 1.72 ms against 1.19 with row 0 first through scoreRows.
func multiScoreStreams() bool { return active == implAVX512 }
