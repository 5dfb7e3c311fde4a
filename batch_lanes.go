package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// The block paths' lanes: the sizes and lane helpers that Batched's block
// path and AttendMany's share (below), and rows into and out of the lanes
// for a task whose rows are not one strided run of a tensor (a packed
// group of several query heads): a row at a time. The block transposes (blockIn, blockOut) take a strided
// run; these run once per task or per tile, beside kernels that do work in
// proportion to the keys.

// lanesOut writes the first tk.R lanes of ls, len(ls)/16 columns, into
// columns [j0, j0+len(ls)/16) of the rows of t that the task's rows are.
func lanesOut(t Tensor, tk *batchTask, ls []float32, j0 int) {
	if tk.single {
		kernel.BlockOut(t.rowsFrom(tk.b, tk.h, tk.i0)[j0:], t.rs, tk.R, ls)
		return
	}
	n := len(ls) / kernel.BlockRows
	for r := range tk.R {
		row := t.Row(tk.b, tk.hs[r], tk.is[r])[j0 : j0+n]
		for c := range row {
			row[c] = ls[c*kernel.BlockRows+r]
		}
	}
}

// lanesIn sets ls[c*16+r] = row(r)[c] for r < R and c < len(ls)/16, and
// the other lanes to 0, as blockIn does for a strided run.
func lanesIn(ls []float32, R int, row func(r int) []float32) {
	clear(ls)
	n := len(ls) / kernel.BlockRows
	for r := range R {
		for c, x := range row(r)[:n] {
			ls[c*kernel.BlockRows+r] = x
		}
	}
}

// The block kernels' sizes, which both engines' block paths (Batched's and
// AttendMany's) share: one call works on blockTile keys (blockTileWhole
// where Batched's blend takes a whole tile per call, see blockTileKeys),
// fewer for long rows so that no call runs longer than the per-row
// kernels' budget, blockBudget (kernel.MaxCall: Go cannot preempt
// assembly); the blend walks a tile's value rows in runs of about
// blendRunBytes (see blendRun); a block's softmax state is laneStates rows
// of lanes (see internal/kernel/block_generic.go: the running max, the
// running sum, the rescale factor and the max the weights are taken
// against).
const (
	blockTile      = 128
	blockTileWhole = 256
	blockBudget    = kernel.MaxCall
	blendRunBytes  = 8 << 10
	laneStates     = 4
)

// blockFits reports whether the block kernels take rows of d and dv
// columns within one call's budget.
func blockFits(d, dv int) bool { return max(d, dv) <= blockBudget }

// blockTileFor returns the keys per tile of a block path whose tiles hold
// up to tile keys, over keys of d and values of dv columns: fewer for long
// rows, so that no kernel call passes the budget.
func blockTileFor(tile, d, dv int) int { return min(tile, max(1, blockBudget/max(1, d, dv))) }

// blendRun returns how many keys of a tile of tile keys one call of the
// block blend takes, over value rows of dv columns: in runs of about
// blendRunBytes of keys the rows stay in L1 (a whole tile of rows a
// power-of-two apart would fight over cache sets), unless the kernel
// fetches ahead within a call (see kernel.BlendRunKeys).
func blendRun(tile, dv int) int { return min(tile, kernel.BlendRunKeys(blendRunBytes, dv)) }

// resetLanes starts a block's output lanes ot and softmax state ml: every
// output 0, every running max -Inf and every running sum 0.
func resetLanes(ot, ml []float32) {
	clear(ot)
	for r := range kernel.BlockRows {
		ml[r], ml[kernel.BlockRows+r] = float32(math.Inf(-1)), 0
	}
}

// laneFactors returns the row of a block's softmax state ml that holds
// each lane's factor: the blend's rescale factor, or the output's final
// one.
func laneFactors(ml []float32) []float32 { return ml[2*kernel.BlockRows : 3*kernel.BlockRows] }

// zeroLane sets lane r of the output lanes ot to 0: a row with nothing
// attended (and no NaN) is zero even where its lanes met a value row that
// is not finite (0·Inf is NaN). Rare, so a lane at a time.
func zeroLane(ot []float32, r int) {
	for c := r; c < len(ot); c += kernel.BlockRows {
		ot[c] = 0
	}
}
