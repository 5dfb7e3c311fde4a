package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// The score-stage options of Batched.Attend (Softcap, Bias, ALiBi,
// CausalToValidLen) and its Logits output: the options' checks, their
// scratch memory, and the one step that transforms a block of scores
// between the score kernel and the softmax.

// checkScoreOptions validates Softcap, Bias, ALiBi and Sinks against the
// shapes of the call.
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
	return checkPerHead(op, opt, H)
}

// checkPerHead validates the options that hold one value per query head:
// ALiBi (finite slopes) and Sinks (any logit).
func checkPerHead(op string, opt *BatchOptions, H int) error {
	if opt.ALiBi != nil && len(opt.ALiBi) != H {
		return shapeErr(op, "len(ALiBi)", len(opt.ALiBi), H, "query heads")
	}
	if opt.Sinks != nil && len(opt.Sinks) != H {
		return shapeErr(op, "len(Sinks)", len(opt.Sinks), H, "query heads")
	}
	for h, x := range opt.ALiBi {
		if x-x != 0 {
			return argErr(op, "ALiBi[%d] = %v is not finite", h, x)
		}
	}
	return nil
}

// tmpLen is the size of the score-stage scratch: a tile of exponentials
// for Softcap, and on the block path a tile of all sixteen lanes (Softcap
// runs on the whole lane tile, the bias is transposed into it, the ALiBi
// terms are formed in it), with ALiBi's lanes after it.
func (p *batchPlan) tmpLen() int {
	switch {
	case p.block && p.opt.ALiBi != nil:
		// The lane tile, then the ALiBi lanes (see carveTmp).
		return kernel.BlockRows*p.tile + 3*kernel.BlockRows + 2*p.tile
	case p.block && (p.opt.Softcap > 0 || p.opt.Bias != nil):
		return kernel.BlockRows * p.tile
	case p.opt.Softcap > 0:
		return p.tile
	}
	return 0
}

// adjustScores applies the score-stage options to s, the scores of keys
// [j0, j0+len(s)) for query row i of head h in batch entry b: Softcap,
// then Bias, then ALiBi. tmp holds at least one tile of floats when
// Softcap is on. Called right after the scores are computed, before any
// masking, on every path.
func (p *batchPlan) adjustScores(s, tmp []float32, b, h, i, j0 int) {
	if c := p.opt.Softcap; c > 0 {
		softcapScores(s, tmp, c)
	}
	if x := p.opt.Bias; x != nil {
		bias := x.Row(broadcast(b, x.batch), broadcast(h, x.heads), broadcast(i, x.rows))
		axpy(1, bias[j0:j0+len(s)], s)
	}
	if a := p.opt.ALiBi; a != nil {
		alibiScores(s, 1, len(s), a[h], p.pos(b, i), j0)
	}
}

// adjustBlock is adjustScores for the block path: s holds the scores of
// keys [j0, j0+len(s)/16) for the rows of task tk across the lanes,
// s[k*16+r] for row r of the task (see internal/kernel/block_generic.go). Softcap works on
// every lane alike (the unused lanes hold zeros); the bias and the ALiBi
// terms, each row's own head and position, are added lane by lane.
func (p blockPath) adjustBlock(s []float32, tk *batchTask, j0 int) {
	tmp := p.sc.tmp
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
			kernel.BlockIn(t, x.rowsFrom(b, broadcast(tk.h, x.heads), broadcast(tk.i0, x.rows))[j0:], stride, tk.R)
		} else {
			lanesIn(t, tk.R, func(r int) []float32 {
				return x.Row(b, broadcast(tk.hs[r], x.heads), broadcast(tk.is[r], x.rows))[j0:]
			})
		}
		axpy(1, t, s)
	}
	if p.opt.ALiBi != nil {
		p.alibiBlock(s, tk, j0)
	}
}

// carveTmp carves the score stage's scratch (see tmpLen) from x into sc
// and returns the rest of x: the tile, and on the block path with ALiBi
// two keys' weights (a lane each), their values (a row of tile columns
// each) and a lane of slopes (see alibiLanes).
func (p *batchPlan) carveTmp(sc *taskScratch, x []float32) []float32 {
	n := p.tmpLen()
	t, x := x[:n], x[n:]
	if bs := &sc.blk; p.block && p.opt.ALiBi != nil {
		a := t[kernel.BlockRows*p.tile:]
		t, bs.alibiW, bs.alibiV, bs.slopes = t[:kernel.BlockRows*p.tile], a[:2*kernel.BlockRows], a[2*kernel.BlockRows:2*kernel.BlockRows+2*p.tile], a[2*kernel.BlockRows+2*p.tile:]
	}
	sc.row.tmp, sc.blk.tmp = t, t
	return x
}

// alibiLanes prepares the block path's ALiBi terms for task tk, as two
// keys of the blend kernel whose sum is each lane's distance to a key,
// j − pos_r: key 0 weighs 1 in every lane, its value at column k the key
// j0+k (set per tile, see alibiBlock); key 1 weighs −pos_r, its values 1.
// Each lane's slope goes beside them (0 in the unused lanes). It reports
// whether every distance is an exact float32 and so every product and sum
// of the blend (|j|, |pos_r| <= 2^23), which the vector form needs; else
// nothing is set.
func (p blockPath) alibiLanes(tk *batchTask) bool {
	sc := p.sc
	const exact = 1 << 23
	if p.k.rows > exact {
		return false
	}
	for r := range tk.R {
		if x := p.pos(tk.b, tk.is[r]); x > exact || x < -exact {
			return false
		}
	}
	w, pos := sc.alibiW[:kernel.BlockRows], sc.alibiW[kernel.BlockRows:]
	clear(sc.slopes)
	clear(pos)
	fillWith(w, 1)
	for r := range tk.R {
		pos[r] = -float32(p.pos(tk.b, tk.is[r]))
		sc.slopes[r] = p.opt.ALiBi[tk.hs[r]]
	}
	fillWith(sc.alibiV[len(sc.alibiV)/2:], 1)
	return true
}

// alibiBlock adds the ALiBi terms of keys [j0, j0+len(s)/16) to the lane
// tile s of task tk. With exact lanes (see alibiLanes) the blend kernel
// forms every lane's distances j − pos_r exactly, then each lane is scaled
// by its slope (one rounding) and added to the scores (one more): the
// same bits as alibiScores, which otherwise forms each lane's terms in
// turn.
func (p blockPath) alibiBlock(s []float32, tk *batchTask, j0 int) {
	sc := p.sc
	n := len(s) / kernel.BlockRows
	if j0 == tk.lo {
		// The first tile of a pass over the task's keys (or over a chunk
		// of them): runBlock's, or blockOutputs' second.
		sc.lanesALiBi = p.alibiLanes(tk)
	}
	if !sc.lanesALiBi {
		for r := range tk.R {
			alibiScores(s[r:], kernel.BlockRows, n, p.opt.ALiBi[tk.hs[r]], p.pos(tk.b, tk.is[r]), j0)
		}
		return
	}
	keys := sc.alibiV[:n]
	for k := range keys {
		keys[k] = float32(j0 + k)
	}
	t := sc.tmp[:len(s)]
	clear(t)
	kernel.BlockBlend(t, sc.alibiW, sc.alibiV, len(sc.alibiV)/2, nil)
	kernel.BlockBlend(t, nil, nil, 0, sc.slopes)
	axpy(1, t, s)
}

// alibiScores adds the ALiBi term of keys j0+k, k < n, to s[k*stride], the
// scores of the row at position pos: s += fl(slope·float32(j − pos)), the
// distance saturated to the range of int. The products are rounded before
// the sum (the conversion forbids a fused multiply-add), as documented.
func alibiScores(s []float32, stride, n int, slope float32, pos, j0 int) {
	// j0 >= 0 and pos <= MaxInt: d only saturates upwards.
	d := subSat(j0, pos)
	if d > math.MaxInt-n {
		// The distance saturates within these keys.
		for k := range n {
			s[k*stride] += float32(slope * float32(subSat(j0+k, pos)))
		}
		return
	}
	for k := range n {
		s[k*stride] += float32(slope * float32(d+k))
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
		kernel.SoftcapPrep(x, z, inv)
		expv(z, z)
		kernel.SoftcapFinish(x, z, c)
		s = s[n:]
	}
}
