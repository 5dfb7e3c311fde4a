//go:build !purego

package kernel

// MultiScoreStreams reports whether scoreRowsMulti streams K from memory
// about as fast as the one-row scoreRows, so that the row path scores
// every row through it (see tileRows). The avx512 and avx2 kernels
// prefetch ahead and do; before avx2's prefetched, scoring row 0 through
// scoreRows first was the faster (measured:
// docs/performance/amd-epyc-zen5.md#multi-row-scores-stream-k-from-code-comments).
func MultiScoreStreams() bool { return active == ImplAVX512 || active == ImplAVX2 }

// MultiBlendStreams reports whether the 16-bit multi-row blend streams V
// from memory as fast as the one-row blend, so that row 0's blend goes
// through it with the rest of its group (see rowKernels.multiFirst).
// avx512's holds a whole row's columns in registers and reads each value
// row once; avx2's walks the rows in blocks of columns, a pass each, and
// from memory all but the first pass miss: through it, an f16 decode step
// (H 32, Hkv 8, Tk 4096) spent 60% of its time in that blend. A tile
// whose V an earlier tile asked for goes through it whole all the same
// (see multiAsksAhead).
func MultiBlendStreams() bool { return active == ImplAVX512 }

// MultiAsksAhead reports whether the multi-row blends ask for the rows of
// next as they go (blendRowsMulti, and blendRowsMultiF16 and its bfloat16
// twin), so that a tile whose V was asked for by the tile before goes
// through them whole (see tileRowsOf): the avx512 and avx2 float32
// kernels do, and the avx2 16-bit ones (avx512's 16-bit blend streams V
// itself and goes whole in any case, see multiBlendStreams).
//
// Asking pays even where a grouped decode step is bound by its FMAs as much as
// by DRAM (128-bit FMA pipes), and more over a 16-bit cache, where each
// value element is then widened once for the group rather than twice
// (measured: docs/performance/amd-epyc-zen1.md#the-avx2-multi-row-blends-ask-ahead-from-code-comments).
func MultiAsksAhead() bool { return active == ImplAVX512 || active == ImplAVX2 }

// MultiWide reports whether the row path takes five to eight rows at a
// time through the wide kernels (scoreRowsMulti8, blendRowsMulti8 and
// their 16-bit forms), which read each key and value row once for all of
// them: only avx512 has them in assembly. Groups of five to seven query
// heads (Qwen's 28 on 4 or 40 on 8, say) go through them rather than as
// four rows and the rest, which read each tile a second time from L2
// (measured: docs/performance/amd-epyc-zen4.md#wide-row-kernels-for-five-to-seven-heads-from-code-comments).
//
// avx2 has none: in sixteen registers an eight-row kernel's chains of 16
// FMAs a key leave no room for a second key beside them, and it lost to
// two calls of four rows (measured:
// docs/performance/amd-epyc-zen3.md#avx2-eight-row-kernels-tried-from-code-comments).
func MultiWide() bool { return active == ImplAVX512 }

// PairedBF16 reports whether the row path scores bfloat16 keys through
// scoreRowsMultiPairedBF16, its query rows put in pair order once a task:
// avx2's kernel splits each row's block of sixteen columns into even and
// odd lanes, at every step of keys without it (measured:
// docs/performance/amd-epyc-zen3.md#bfloat16-in-pair-order-from-code-comments).
func PairedBF16() bool { return active == ImplAVX2 }

// MultiBlendSplits reports whether the float32 multi-row blend of rows
// rows of dv columns takes its first columns a key stream at a time
// (blendSplitZ in the generator), reading most of each value row in
// address order, so that it streams V from memory itself: the row path
// then asks for no tile's V ahead (see batch_ahead.go) and blends row 0
// with its group, warm or cold. Only avx512 has it, for two to four rows
// of 64 or 128 columns.
//
// Decode steps with two to four heads a group take less time this way
// than with the blend of both streams at once asking ahead, from L3 and
// from DRAM, and not asking is part of the gain with two and three heads
// (measured:
// docs/performance/amd-epyc-zen4.md#the-float32-blend-a-key-stream-at-a-time-from-code-comments).
func MultiBlendSplits(rows, dv int) bool {
	return active == ImplAVX512 && rows >= 2 && rows <= 4 && (dv == 64 || dv == 128)
}

// MultiScoreRowMajor reports whether scoreRowsMulti reads K in address
// order for a group of rows rows of d columns (avx512: one to three rows
// of 128, one to four of 64; see scoreRowMajorMultiZ in the generator),
// streaming it from memory as fast as scoreRows: AttendMany's tiled
// passes then score the first query with its group rather than through
// scoreRows first, which only made the group read K a second time
// (measured: docs/performance/amd-epyc-zen4.md#scores-in-address-order-from-code-comments).
func MultiScoreRowMajor(rows, d int) bool {
	return active == ImplAVX512 && (d == 128 && rows <= 3 || d == 64 && rows <= 4)
}
