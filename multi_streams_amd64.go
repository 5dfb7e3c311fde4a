//go:build !purego

package attention

// multiScoreStreams reports whether scoreRowsMulti streams K from memory
// about as fast as the one-row scoreRows, so that the row path scores
// every row through it (see tileRows). The avx512 and avx2 kernels
// prefetch ahead and do. With avx512 a grouped decode step (H = 32, Hkv =
// 8, Tk = 4096, d = 128) took 0.67 ms scoring all four rows through it
// against 0.85 with row 0 through scoreRows. With avx2, before its kernel
// prefetched, the same step took 1.72 ms against 1.19 with row 0 first
// through scoreRows; prefetching, 1.37 ms against 2.42 (Zen 5, a host
// with much steal).
func multiScoreStreams() bool { return active == implAVX512 || active == implAVX2 }

// multiBlendStreams reports whether the 16-bit multi-row blend streams V
// from memory as fast as the one-row blend, so that row 0's blend goes
// through it with the rest of its group (see rowKernels.multiFirst).
// avx512's holds a whole row's columns in registers and reads each value
// row once; avx2's walks the rows in blocks of columns, a pass each, and
// from memory all but the first pass miss: through it, an f16 decode step
// (H 32, Hkv 8, Tk 4096) spent 60% of its time in that blend. A tile
// whose V an earlier tile asked for goes through it whole all the same
// (see multiAsksAhead).
func multiBlendStreams() bool { return active == implAVX512 }

// multiAsksAhead reports whether the multi-row blends ask for the rows of
// next as they go (blendRowsMulti, and blendRowsMultiF16 and its bfloat16
// twin), so that a tile whose V was asked for by the tile before goes
// through them whole (see tileRowsOf): the avx512 and avx2 float32
// kernels do, and the avx2 16-bit ones (avx512's 16-bit blend streams V
// itself and goes whole in any case, see multiBlendStreams).
//
// On an AMD EPYC of the first Zen generation (128-bit FMA pipes, where a
// grouped decode step is bound by its FMAs as much as by DRAM), the avx2
// four-row score and blend of 512 keys from memory (d = 128) took 50.8 µs
// asking against 58.5, and the steps' fraction of a read of their K and V
// rose 4-10% (gqa-4k 0.55 to 0.57 on one worker, mqa-32k 0.31 to 0.34;
// medians of 8 alternating runs on a noisy host). Over a 16-bit cache,
// where each value element is then widened once for the group rather
// than twice, a decode step (H 32, Hkv 8, Tk 4096, d 128) went from 3.89
// to 3.50 ms over f16 and 3.34 to 2.83 over bf16 on one worker, and H 8,
// Hkv 1, Tk 32768 from 6.91 to 6.32 and 5.95 to 5.41 (medians of 6
// alternating runs).
func multiAsksAhead() bool { return active == implAVX512 || active == implAVX2 }

// multiWide reports whether the row path takes five to eight rows at a
// time through the wide kernels (scoreRowsMulti8, blendRowsMulti8 and
// their 16-bit forms), which read each key and value row once for all of
// them: only avx512 has them in assembly. Groups of five to seven query
// heads (Qwen's 28 on 4 or 40 on 8, say) went through them rather than
// as four rows and the rest, which read each tile a second time from
// L2: a decode step over 32 MiB of float32 K and V (d = 128) took 0.69-0.72
// of the time with five, six and seven heads a group (Zen 4, medians of
// 5 alternating runs).
//
// avx2 eight-row kernels over float32, tried with sixteen registers (a
// key at a time: eight accumulators, a key chunk, a query chunk; the blend
// a vector of columns a pass), lost to two calls of four rows: from L2 the
// score of 512 keys (d = 128) took 30 µs against 17-21, whose chains of 16
// FMAs a key have no room for a second key beside them, and the blend
// 16-22 µs against 13-19; an eight-head decode step (H 8, Hkv 1, Tk
// 32768) moved within the noise on one worker (Zen 3, 8 alternating
// rounds).
func multiWide() bool { return active == implAVX512 }

// pairedBF16 reports whether the row path scores bfloat16 keys through
// scoreRowsMultiPairedBF16, its query rows put in pair order once a task:
// avx2's kernel splits each row's block of sixteen columns into even and
// odd lanes, at every step of keys without it. A grouped decode step over
// a bf16 cache (H 32, Hkv 8, Tk 4096, d 128) took 2.63 ms against 3.05,
// over 32768 keys 22.0 against 24.5 (Zen 3, medians of six alternating
// runs).
func pairedBF16() bool { return active == implAVX2 }

// multiBlendSplits reports whether the float32 multi-row blend of rows
// rows of dv columns takes its first columns a key stream at a time
// (blendSplitZ in the generator), reading most of each value row in
// address order, so that it streams V from memory itself: the row path
// then asks for no tile's V ahead (see batch_ahead.go) and blends row 0
// with its group, warm or cold. Only avx512 has it, for two to four rows
// of 64 or 128 columns.
//
// Decode steps (H 32, Hkv 8, Tk 4096, d 128), alternating step by step in
// one process with the blend of both streams at once asking ahead (Zen 4,
// medians of 300 pairs): four heads a group took 0.91 of the time on one
// worker and 0.93 on two, two heads 0.86 and 0.84, three 0.87 and 0.88;
// one head a group, which does not change, 1.00; 1024 keys 0.99 and a
// window of 1024 over 32768 keys 0.99 and 0.93. Of that, not asking:
// the split blend asking none took 1.00-1.02 of the time it took asking
// with four heads, 0.87-0.88 with two and 0.96 with three. From DRAM
// (8192 keys, 64 MiB of K and V, where 32 MiB leave part of each pass in
// L3), 120 pairs: four heads 0.83 on one worker and 0.94 on two, two heads
// 0.93 and 0.90, three 0.88 and 0.79, one 1.00 and 1.00.
func multiBlendSplits(rows, dv int) bool {
	return active == implAVX512 && rows >= 2 && rows <= 4 && (dv == 64 || dv == 128)
}

// multiScoreRowMajor reports whether scoreRowsMulti reads K in address
// order for a group of rows rows of d columns (avx512: one to three rows
// of 128, one to four of 64; see scoreRowMajorMultiZ in the generator),
// streaming it from memory as fast as scoreRows: AttendMany's tiled
// passes then score the first query with its group rather than through
// scoreRows first, which only made the group read K a second time. Two to
// six beams over 128 columns took 0.70-0.90 of the time with K and V in
// L3 (T = 8192) and 0.85-0.89 from DRAM (T = 65536) (scaled dot,
// alternating call by call in one process, Zen 4).
func multiScoreRowMajor(rows, d int) bool {
	return active == implAVX512 && (d == 128 && rows <= 3 || d == 64 && rows <= 4)
}
