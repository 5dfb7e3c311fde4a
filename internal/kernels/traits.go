package kernels

// Traits is what the engine plans by for an implementation, beyond which
// kernels it has: how its kernels read memory and which of its kernels
// pay. asm/dispatch generates each implementation's value into
// internal/kernel, whose predicates of the same names read it
// (internal/kernel/traits.go); the generic code's traits are all zero.
// asm/dispatch refuses a trait whose kernels the implementation has no
// code of its own for (checkTraits).
type Traits struct {
	// WholeTileBlend: blockBlend fetches ahead within the rows of one
	// call, so a tile goes in one call rather than in runs.
	WholeTileBlend bool
	// Blend16Cols is how many columns of a 16-bit value row the one-row
	// blend (blendRowsF16, blendRowsBF16) takes a pass; wider rows go in
	// runs of keys that stay in L1. 0: one call, not known to matter.
	Blend16Cols int
	// MultiScoreStreams: scoreRowsMulti streams K from memory about as
	// fast as the one-row scoreRows, so the row path scores every row
	// through it.
	MultiScoreStreams bool
	// MultiBlendStreams: the 16-bit multi-row blend streams V from memory
	// as fast as the one-row blend, so row 0's blend goes through it with
	// the rest of its group.
	MultiBlendStreams bool
	// MultiAsksAhead: the multi-row blends ask for the rows of next as
	// they go, so a tile whose V the tile before asked for goes through
	// them whole.
	MultiAsksAhead bool
	// MultiWide: the row path takes five to eight rows at a time through
	// the wide kernels (scoreRowsMulti8, blendRowsMulti8 and their 16-bit
	// forms), which read each key and value row once for all of them.
	MultiWide bool
	// PairedBF16: the row path scores bfloat16 keys through
	// scoreRowsMultiPairedBF16, its query rows put in pair order once a
	// task.
	PairedBF16 bool
	// MultiBlendSplits lists the groups for which the float32 multi-row
	// blend takes its first columns a key stream at a time, streaming V
	// from memory itself: the row path then asks for no tile's V ahead
	// and blends row 0 with its group.
	MultiBlendSplits BlendSplits
	// MultiScoreRowMajor lists, by row width, the groups for which
	// scoreRowsMulti reads K in address order, streaming it as fast as
	// scoreRows: AttendMany's tiled passes then score the first query
	// with its group.
	MultiScoreRowMajor []RowMajor
	// PairedBlocks: the block path pairs its tasks, blockScores2 and
	// blockBlend2 being kernels of their own rather than two calls.
	PairedBlocks bool
}

// BlendSplits is a set of groups: MinRows to MaxRows rows of one of
// Widths columns. The zero value holds none.
type BlendSplits struct {
	MinRows, MaxRows int
	Widths           []int
}

// RowMajor says that groups of up to MaxRows rows of Cols columns are in
// a set.
type RowMajor struct {
	Cols, MaxRows int
}

// The traits of each implementation, with the measurements behind them.
// A trait left false (or out) where it might be expected says why too.
var (
	avx512Traits = Traits{
		// Each group of columns fetches the line the next group reads; in
		// runs, every run's first lines were a miss and every run reloaded
		// and stored the output lanes once per group (measured:
		// docs/performance/amd-epyc-zen5.md#block-path-tiles-from-code-comments).
		WholeTileBlend: true,
		// Eight vectors of accumulators, 16 lanes each.
		Blend16Cols: 128,
		// Its scoreRowsMulti prefetches ahead (measured:
		// docs/performance/amd-epyc-zen5.md#multi-row-scores-stream-k-from-code-comments).
		MultiScoreStreams: true,
		// Its 16-bit multi-row blend holds a whole row's columns in
		// registers and reads each value row once.
		MultiBlendStreams: true,
		// blendRowsMulti asks for next as it goes (its 16-bit blends
		// stream V themselves and go whole in any case).
		MultiAsksAhead: true,
		// Groups of five to seven query heads (Qwen's 28 on 4 or 40 on 8,
		// say) go through them rather than as four rows and the rest,
		// which read each tile a second time from L2 (measured:
		// docs/performance/amd-epyc-zen4.md#wide-row-kernels-for-five-to-seven-heads-from-code-comments).
		MultiWide: true,
		// blendSplitZ in the generator. Decode steps with two to four heads
		// a group take less time this way than with the blend of both
		// streams at once asking ahead, from L3 and from DRAM, and not
		// asking is part of the gain with two and three heads (measured:
		// docs/performance/amd-epyc-zen4.md#the-float32-blend-a-key-stream-at-a-time-from-code-comments).
		MultiBlendSplits: BlendSplits{MinRows: 2, MaxRows: 4, Widths: []int{64, 128}},
		// scoreRowMajorMultiZ in the generator; scoring the first query
		// through scoreRows first only made the group read K a second time
		// (measured:
		// docs/performance/amd-epyc-zen4.md#scores-in-address-order-from-code-comments).
		MultiScoreRowMajor: []RowMajor{{Cols: 128, MaxRows: 3}, {Cols: 64, MaxRows: 4}},
		// blockScores2 and blockBlend2 are kernels of its own: two FMAs
		// per broadcast element.
		PairedBlocks: true,
	}
	avx2Traits = Traits{
		// Its blockBlend fetches the next call's rows while it computes, so
		// tiles go in runs (see avx512's).
		WholeTileBlend: false,
		// Eight vectors of accumulators, 8 lanes each: in runs of 16 KiB
		// of rows, its later passes over the same rows find them in L1
		// (measured:
		// docs/performance/amd-epyc-zen5.md#the-one-row-16-bit-blend-in-runs-from-code-comments).
		Blend16Cols: 64,
		// Its scoreRowsMulti prefetches ahead; before it did, scoring row
		// 0 through scoreRows first was the faster (measured:
		// docs/performance/amd-epyc-zen5.md#multi-row-scores-stream-k-from-code-comments).
		MultiScoreStreams: true,
		// Its 16-bit multi-row blend walks the rows in blocks of columns,
		// a pass each, and from memory all but the first pass miss: through
		// it, an f16 decode step (H 32, Hkv 8, Tk 4096) spent 60% of its
		// time in that blend. A tile whose V an earlier tile asked for
		// goes through it whole all the same (MultiAsksAhead).
		MultiBlendStreams: false,
		// Its float32 and 16-bit multi-row blends ask for next. Asking
		// pays even where a grouped decode step is bound by its FMAs as
		// much as by DRAM (128-bit FMA pipes), and more over a 16-bit
		// cache, where each value element is then widened once for the
		// group rather than twice (measured:
		// docs/performance/amd-epyc-zen1.md#the-avx2-multi-row-blends-ask-ahead-from-code-comments).
		MultiAsksAhead: true,
		// In sixteen registers an eight-row kernel's chains of 16 FMAs a
		// key leave no room for a second key beside them, and it lost to
		// two calls of four rows (measured:
		// docs/performance/amd-epyc-zen3.md#avx2-eight-row-kernels-tried-from-code-comments).
		MultiWide: false,
		// Its scoreRowsMultiBF16 splits each row's block of sixteen columns
		// into even and odd lanes at every step of keys; the paired kernel
		// does without (measured:
		// docs/performance/amd-epyc-zen3.md#bfloat16-in-pair-order-from-code-comments).
		PairedBF16: true,
		// Its blockScores2 and blockBlend2 are two calls of the one-block
		// kernels: pairing would gain nothing.
		PairedBlocks: false,
	}
	// NEON has no multi-row, wide or paired kernels of its own, and
	// without arm64 hardware to measure on, its blends take the defaults.
	neonTraits = Traits{}
)
