package kernel

// traits is internal/kernels.Traits, field for field (the table holds each
// implementation's values and the measurements behind them): what the
// engine plans by for the implementation in use. zdispatch_GOARCH.go holds
// each implementation's, generated from the table, and activeTraits; the
// generic code's are all zero.
type traits struct {
	wholeTileBlend     bool
	blend16Cols        int
	multiScoreStreams  bool
	multiBlendStreams  bool
	multiAsksAhead     bool
	multiWide          bool
	pairedBF16         bool
	multiBlendSplits   blendSplits
	multiScoreRowMajor []rowMajor
	pairedBlocks       bool
}

// blendSplits is internal/kernels.BlendSplits: minRows to maxRows rows of
// one of widths columns.
type blendSplits struct {
	minRows, maxRows int
	widths           []int
}

// rowMajor is internal/kernels.RowMajor: up to maxRows rows of cols
// columns.
type rowMajor struct {
	cols, maxRows int
}

// WholeTileBlend reports whether the blend kernel in use fetches ahead
// within the rows of one call, so that a tile should go in one call
// rather than in runs (see BlendRunKeys).
func WholeTileBlend() bool { return activeTraits().wholeTileBlend }

// blend16Cols is how many columns of a 16-bit value row the one-row blend
// in use takes a pass, or 0 where that is not known to matter: wider rows
// go in runs whose later passes find the rows in L1 (see blend16RunKeys).
func blend16Cols() int { return activeTraits().blend16Cols }

// MultiScoreStreams reports whether scoreRowsMulti streams K from memory
// about as fast as the one-row scoreRows, so that the row path scores
// every row through it (see tileRows).
func MultiScoreStreams() bool { return activeTraits().multiScoreStreams }

// MultiBlendStreams reports whether the 16-bit multi-row blend streams V
// from memory as fast as the one-row blend, so that row 0's blend goes
// through it with the rest of its group (see rowKernels.multiFirst).
func MultiBlendStreams() bool { return activeTraits().multiBlendStreams }

// MultiAsksAhead reports whether the multi-row blends ask for the rows of
// next as they go, so that a tile whose V was asked for by the tile
// before goes through them whole (see tileRowsOf).
func MultiAsksAhead() bool { return activeTraits().multiAsksAhead }

// MultiWide reports whether the row path takes five to eight rows at a
// time through the wide kernels (scoreRowsMulti8, blendRowsMulti8 and
// their 16-bit forms), which read each key and value row once for all of
// them, rather than as four rows and the rest.
func MultiWide() bool { return activeTraits().multiWide }

// PairedBF16 reports whether the row path scores bfloat16 keys through
// scoreRowsMultiPairedBF16, its query rows put in pair order once a task,
// which spares the kernel splitting them at every step of keys.
func PairedBF16() bool { return activeTraits().pairedBF16 }

// MultiBlendSplits reports whether the float32 multi-row blend of rows
// rows of dv columns takes its first columns a key stream at a time,
// streaming V from memory itself: the row path then asks for no tile's V
// ahead (see batch_ahead.go) and blends row 0 with its group, warm or
// cold.
func MultiBlendSplits(rows, dv int) bool {
	s := &activeTraits().multiBlendSplits
	if rows < s.minRows || rows > s.maxRows {
		return false
	}
	for _, w := range s.widths {
		if w == dv {
			return true
		}
	}
	return false
}

// MultiScoreRowMajor reports whether scoreRowsMulti reads K in address
// order for a group of rows rows of d columns, streaming it from memory
// as fast as scoreRows: AttendMany's tiled passes then score the first
// query with its group rather than through scoreRows first, which only
// made the group read K a second time.
func MultiScoreRowMajor(rows, d int) bool {
	for _, g := range activeTraits().multiScoreRowMajor {
		if g.cols == d {
			return rows <= g.maxRows
		}
	}
	return false
}

// PairedBlocks reports whether the block path pairs its tasks (see
// batch_pair.go): where blockScores2 and blockBlend2 are kernels of their
// own, not two calls of the one-block ones.
func PairedBlocks() bool { return activeTraits().pairedBlocks }
