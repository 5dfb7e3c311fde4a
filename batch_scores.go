package attention

import "math"

// The score-stage options of Batched.Attend (Softcap, Bias,
// CausalToValidLen) and its Logits output: the options' checks, their
// scratch memory, and the one step that transforms a block of scores
// between the score kernel and the softmax.

// checkScoreOptions validates Softcap and Bias against the shapes of the
// call.
func checkScoreOptions(op string, opt *BatchOptions, B, H, Tq, Tk int) error {
	if c := opt.Softcap; !(c >= 0) || math.IsInf(float64(c), 1) {
		return argErr(op, "Softcap %v is not a finite value >= 0", c)
	}
	if c := opt.Softcap; c > 0 && math.IsInf(float64(1/c), 1) {
		// The scores are multiplied by 1/c, which must be finite (0·Inf
		// would be NaN).
		return argErr(op, "Softcap %v is below 1/MaxFloat32, its reciprocal is not a float32", c)
	}
	if x := opt.Bias; x != nil {
		switch {
		case x.batch != B && x.batch != 1:
			return shapeErr(op, "Bias batch", x.batch, B, "the batch or 1 (broadcast)")
		case x.heads != H && x.heads != 1:
			return shapeErr(op, "Bias heads", x.heads, H, "the query heads or 1 (broadcast)")
		case x.rows != Tq && x.rows != 1:
			return shapeErr(op, "Bias rows", x.rows, Tq, "Tq or 1 (broadcast)")
		case x.cols != Tk:
			return shapeErr(op, "Bias cols", x.cols, Tk, "Tk")
		}
	}
	return nil
}

// tmpLen is the size of the score-stage scratch: a tile of exponentials
// for Softcap, and on the block path a tile of all sixteen lanes (Softcap
// runs on the whole lane tile, the bias is transposed into it).
func (p *batchJob) tmpLen() int {
	switch {
	case p.block && (p.opt.Softcap > 0 || p.opt.Bias != nil):
		return blockRows * p.tile
	case p.opt.Softcap > 0:
		return p.tile
	}
	return 0
}

// adjustScores applies the score-stage options to s, the scores of keys
// [j0, j0+len(s)) for query row i of head h in batch entry b: Softcap,
// then Bias. tmp holds at least one tile of floats when Softcap is on.
// Called right after the scores are computed, before any masking, on
// every path.
func (p *batchJob) adjustScores(s, tmp []float32, b, h, i, j0 int) {
	if c := p.opt.Softcap; c > 0 {
		softcapScores(s, tmp, c)
	}
	if x := p.opt.Bias; x != nil {
		bias := x.Row(broadcast(b, x.batch), broadcast(h, x.heads), broadcast(i, x.rows))
		axpy(1, bias[j0:j0+len(s)], s)
	}
}

// adjustBlock is adjustScores for the block path: s holds the scores of
// keys [j0, j0+len(s)/16) for the rows of task tk across the lanes,
// s[k*16+r] for row r of the task (see block_generic.go). Softcap works on
// every lane alike (the unused lanes hold zeros); the bias is added lane by
// lane.
func (p *batchJob) adjustBlock(s, tmp []float32, tk *batchTask, j0 int) {
	if c := p.opt.Softcap; c > 0 {
		softcapScores(s, tmp, c)
	}
	if x := p.opt.Bias; x != nil {
		// The bias rows go into the lanes through the query transpose,
		// then one vector add.
		t := tmp[:len(s)]
		b := broadcast(tk.b, x.batch)
		if tk.single {
			stride := x.rs
			if x.rows == 1 {
				stride = 0
			}
			blockIn(t, x.rowsFrom(b, broadcast(tk.h, x.heads), broadcast(tk.i0, x.rows))[j0:], stride, tk.R)
		} else {
			lanesIn(t, tk.R, func(r int) []float32 {
				return x.Row(b, broadcast(tk.hs[r], x.heads), broadcast(tk.is[r], x.rows))[j0:]
			})
		}
		axpy(1, t, s)
	}
}

// broadcast maps index i to a dimension of size n that is either full or 1.
func broadcast(i, n int) int {
	if n == 1 {
		return 0
	}
	return i
}

// softcapScores sets s[i] = c·tanh(s[i]/c), with tanh32's accuracy: the
// exponentials of len(tmp) scores at a time go through one call of the Exp
// kernel, as in additiveScores. ±Inf map to ±c, NaN stays NaN.
func softcapScores(s, tmp []float32, c float32) {
	inv := 1 / c
	for len(s) > 0 {
		n := min(len(s), len(tmp))
		x, z := s[:n], tmp[:n]
		softcapPrep(x, z, inv)
		expv(z, z)
		softcapFinish(x, z, c)
		s = s[n:]
	}
}
