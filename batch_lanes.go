package attention

import "github.com/glancelab/attention/internal/kernel"

// Rows into and out of the block path's lanes for a task whose rows are
// not one strided run of a tensor (a packed group of several query heads):
// a row at a time. The block transposes (blockIn, blockOut) take a strided
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
