package attention

import (
	"math"
	"unsafe"

	"github.com/glancelab/attention/internal/kernel"
)

// blockPath is the block path of one task: the plan and the task's block
// scratch, which holds none of the row path's buffers (see rowPath). Its
// methods put the task's rows across the SIMD lanes (startLanes), score,
// mask and blend a tile of keys at a time (blockKeys, adjustTile,
// blockValues) and take the rows out of the lanes (endLanes); two tasks
// at once are a blockPair (batch_pair.go).
type blockPath struct {
	*batchPlan
	sc *blockScratch
}

// blockPathOf returns the block path over the block scratch of sc.
func (p *batchPlan) blockPathOf(sc *taskScratch) blockPath { return blockPath{p, &sc.blk} }

// runBlock runs keys [tk.lo, n) for the rows of task tk at once, with the rows
// across SIMD lanes (see internal/kernel/block_generic.go), and leaves each row's
// unnormalised output, running max and running sum as tileOnline would.
// Row r attends keys below tk.ends[r] that the keep-mask keeps; the others
// get a -Inf score. sc.qs holds the block's scaled queries, row by row; with
// direct the queries are read from the tensor instead and the outputs are
// left normalised (see run).
func (p blockPath) runBlock(tk *batchTask, n int, direct bool) {
	st, ot, ml := p.sc.st, p.sc.ot, p.sc.ml
	p.startLanes(tk, direct)
	for j0 := tk.lo; j0 < n; j0 += p.tile {
		if j0+p.tile >= n {
			p.prefetch(tk)
		}
		s := st[:kernel.BlockRows*min(p.tile, n-j0)]
		p.blockTileScores(s, tk, j0)
		if p.logits != nil {
			lanesOut(*p.logits, tk, s, j0)
		} else if p.w != nil {
			// The scores, which blockOutputs turns into the weights.
			lanesOut(*p.w, tk, s, j0)
		}
		kernel.BlockSoftmax(s, ml)
		p.blockValues(ot, s, tk, j0, laneFactors(ml))
	}
	p.endLanes(tk, direct)
}

// startLanes puts the queries of task tk into the lanes (from the tensor,
// scaled, with direct; else from sc.qs) and starts the lanes' output and
// online softmax.
func (p blockPath) startLanes(tk *batchTask, direct bool) {
	sc := p.sc
	if direct {
		if p.rotQ {
			rotatedLanes(sc.qt, p.q.rowsFrom(tk.b, tk.h, tk.i0), p.q.rs, tk.R, p.q.cols, p.scale, sc.qs)
		} else {
			kernel.BlockIn(sc.qt, p.q.rowsFrom(tk.b, tk.h, tk.i0), p.q.rs, tk.R)
			scale(p.scale, sc.qt)
		}
		if p.kv != nil {
			if ks := p.kv.channelKeys(tk.kh); ks != nil {
				mulChannels(sc.qt, ks, kernel.BlockRows)
			}
		}
	} else {
		kernel.BlockIn(sc.qt, sc.qs, p.q.cols, tk.R)
	}
	resetLanes(sc.ot, sc.ml)
}

// rotatedLanes sets the lanes qt to the R rows of q (stride apart, d
// floats each) scaled by f and rotated as an I8 cache's keys are, through
// tmp (R·d floats or more): rotated as rows (kernel.RotateRows, which has
// SIMD forms) before they go into the lanes, where the lanes' own rotation
// (kernel.Hadamard) is a loop in Go that took a tenth of a prefill over an
// I8 cache; the same bits.
func rotatedLanes(qt, q []float32, stride, R, d int, f float32, tmp []float32) {
	t := tmp[:R*d]
	for r := range R {
		copy(t[r*d:(r+1)*d], q[r*stride:r*stride+d])
	}
	scale(f, t)
	kernel.RotateRows(t, d)
	kernel.BlockIn(qt, t, d, R)
}

// endLanes leaves each row's running max and sum in sc.m and sc.l, and its
// output (normalised with direct) in tk.part if it is set, else in the
// output tensor.
func (p blockPath) endLanes(tk *batchTask, direct bool) {
	sc := p.sc
	for r := range tk.R {
		sc.m[r], sc.l[r] = sc.ml[r], sc.ml[kernel.BlockRows+r]
	}
	if direct {
		p.normalizeLanes(tk)
	}
	if tk.part != nil {
		kernel.BlockOut(tk.part, p.v.cols, tk.R, sc.ot)
		return
	}
	lanesOut(p.out, tk, sc.ot, 0)
}

// normalizeLanes scales the output lanes of the rows of task tk by their
// factors (1/l, or with a sink 1/(l + e^{sink−m}): see rowFinish) and sets
// the rows' LSE, for runBlock's direct path, which skips run's per-row
// finish.
func (p blockPath) normalizeLanes(tk *batchTask) {
	sc := p.sc
	m, ot := sc.m, sc.ot
	// A NaN factor marks a NaN row: a NaN sum comes from a NaN weight,
	// which the blend has already spread over the row's lanes (the values
	// are finite), a NaN or +Inf sink spreads now.
	f := (*[kernel.BlockRows]float32)(laneFactors(sc.ml))
	empty := false // a row with nothing attended and no NaN
	for r := range f {
		switch {
		case r >= tk.R:
			f[r] = 1
		case p.opt.Sinks != nil || p.lse != nil:
			var lse float32
			f[r], lse = p.rowFinish(tk.hs[r], m[r], sc.l[r])
			p.setLSE(tk.b, tk.hs[r], tk.is[r], lse)
		case sc.l[r] != sc.l[r]:
			// rowFinish without a sink or an LSE, inlined from here on.
			f[r] = float32(math.NaN())
		case m[r] < -math.MaxFloat32:
			f[r] = 0
		default:
			f[r] = 1 / sc.l[r]
		}
		empty = empty || r < tk.R && m[r] < -math.MaxFloat32 && f[r] == f[r]
	}
	kernel.BlockBlend(ot, nil, nil, 0, f[:])
	if !empty {
		return
	}
	for r := range tk.R {
		if m[r] < -math.MaxFloat32 && f[r] == f[r] {
			zeroLane(ot, r)
		}
	}
}

// prefetch asks for the rows task tk writes and the queries of the next
// task, a tile before the end of task tk: neither is usually cached, and a
// miss per cache line would otherwise stall the start of the next task and
// the end of this one. With several workers the next task may be another
// worker's; the hint then costs a few cache lines.
func (p *batchPlan) prefetch(tk *batchTask) {
	p.prefetchOut(tk)
	p.prefetchQueries(tk.t + 1)
}

// prefetchQueries asks for the query rows of task t, if there is one.
func (p *batchPlan) prefetchQueries(t int) {
	if t < p.tasks() {
		b, h, i0, lead := p.taskHead(t)
		kernel.PrefetchRows(p.q.rowsFrom(b, h, i0), p.q.rs, lead, p.q.cols)
	}
}

// prefetchOut is the half of prefetch that asks for the rows task tk
// writes.
func (p *batchPlan) prefetchOut(tk *batchTask) {
	kernel.PrefetchRows(p.out.rowsFrom(tk.b, tk.h, tk.i0), p.out.rs, tk.lead(), p.out.cols)
}

// blockTileScores sets s to the scores of keys [j0, j0+len(s)/16) for the
// rows of task tk, in the lanes: scaled (sc.qt holds the scaled queries),
// then softcapped and biased, then -Inf where a row does not attend the key
// (past its end, or not kept).
func (p blockPath) blockTileScores(s []float32, tk *batchTask, j0 int) {
	p.blockKeys(s, tk, j0)
	p.adjustTile(s, tk, j0)
}

// adjustTile takes the block scores s of keys [j0, j0+len(s)/16) on from
// the kernels' dot products, as blockTileScores does: softcapped and
// biased, then -Inf where a row does not attend the key.
func (p blockPath) adjustTile(s []float32, tk *batchTask, j0 int) {
	if p.adjust {
		p.adjustBlock(s, tk, j0)
	}
	maskStarts(s, tk, j0)
	maskEnds(s, tk, j0)
	if p.opt.Keep != nil {
		p.keepTile(s, tk, j0)
	}
}

// maskStarts sets the scores s of keys [j0, j0+len(s)/16) before each
// row's start (a sliding window's) to -Inf.
func maskStarts(s []float32, tk *batchTask, j0 int) {
	if tk.late <= j0 {
		// No row starts past j0: no key of the tile is before a start.
		return
	}
	ninf, nk := float32(math.Inf(-1)), len(s)/kernel.BlockRows
	for r := range tk.R {
		for o := r; o < min(max(tk.starts[r]-j0, 0), nk)*kernel.BlockRows; o += kernel.BlockRows {
			s[o] = ninf
		}
	}
}

// maskEnds sets the scores s of keys [j0, j0+len(s)/16) from each row's
// end on to -Inf. Where the sixteen rows end one key apart (a causal
// block of one head) and the tile ends with the last row, its last
// sixteen keys (from the first row's last key) are a staircase, one
// blockKeep16 of stairKeep; otherwise a lane at a time (a stride walk the compiler can see stays in s). On a causal
// prefill (8 × 512 × 512 × 64) the lane walk took 2% of the time.
func maskEnds(s []float32, tk *batchTask, j0 int) {
	nk := len(s) / kernel.BlockRows
	if g := tk.ends[0] - 1 - j0; tk.R == kernel.BlockRows && g >= 0 && g+kernel.BlockRows == nk && tk.stair() {
		kernel.BlockKeep16(s[g*kernel.BlockRows:], stairKeep[:], kernel.BlockRows)
		return
	}
	ninf := float32(math.Inf(-1))
	for r, e := range tk.endsOf() {
		for o := min(max(e-j0, 0), nk)*kernel.BlockRows + r; o < len(s); o += kernel.BlockRows {
			s[o] = ninf
		}
	}
}

// stair reports whether the task's sixteen rows end one key apart.
func (tk *batchTask) stair() bool {
	for r := 1; r < kernel.BlockRows; r++ {
		if tk.ends[r] != tk.ends[0]+r {
			return false
		}
	}
	return true
}

// stairKeep is the keep-mask (blockKeep16's layout, row r at r·16) of
// sixteen rows that end one key apart, over the sixteen keys from the
// first row's last key: row r keeps the first r+1 of them.
// It is a literal, not computed at init, so that only programs that run
// the block path link it.
var stairKeep = [kernel.BlockRows * kernel.BlockRows]byte{
	1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
}

// blockKeys sets s to the block scores of keys [j0, j0+len(s)/16) of task
// tk against the lanes' queries: over the float32 rows in place, a call
// per run of contiguous rows; 16-bit rows are widened first into sc.kw
// (the block kernels broadcast each key element to the lanes, which a
// 16-bit element would need a conversion per use for), a few keys at a
// time (see widenKeys).
func (p blockPath) blockKeys(s []float32, tk *batchTask, j0 int) {
	sc := p.sc
	nk := len(s) / kernel.BlockRows
	if p.kt != F32 {
		dk := p.k.cols
		if kw, _, ok := p.wideRows(tk.b, tk.kh); ok {
			kernel.BlockScores(s, sc.qt, kw[j0*dk:], dk)
			return
		}
		step := widenKeys(max(dk, p.v.cols))
		for k0 := 0; k0 < nk; k0 += step {
			n := min(step, nk-k0)
			kw := sc.kw[:n*dk]
			// Every chunk but a task's first was asked for by the kernels
			// before it.
			ahead := j0+k0 == tk.lo
			p.widenRows(kw, keySpan{tk.b, j0 + k0, n}, tk.kh, dk, ahead, false)
			// The keys' scores ask for the rows widened next: the next
			// keys', or the tile's first values'.
			ask := p.asks16(tk, j0+k0+n, false, n*dk)
			if k0+n >= nk {
				ask = p.asks16(tk, j0, true, n*dk)
			}
			if ask != nil {
				kernel.BlockScoresAsk(s[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], sc.qt, kw, dk, ask)
			} else {
				kernel.BlockScores(s[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], sc.qt, kw, dk)
			}
		}
		return
	}
	for nk > 0 {
		r, run := p.keyRun(tk.b, j0)
		n := min(nk, run)
		kernel.BlockScores(s[:n*kernel.BlockRows], sc.qt, p.keys32(tk.b, tk.kh, r), p.k.rs)
		s, j0, nk = s[n*kernel.BlockRows:], j0+n, nk-n
	}
}

// widenKeys is how many 16-bit key or value rows of d elements the block
// path widens at a time: 16 KiB of float32s, which stay in L1 for the
// kernel call that reads them. Widening a whole tile (128 KiB at d = 128)
// first ran at the speed of its stores to L2 (measured:
// docs/performance/amd-epyc-zen5.md#widening-16-bit-rows-for-the-block-path-from-code-comments).
func widenKeys(d int) int { return max(8, 4096/max(1, d)) }

// blockValues blends the tile's weights s (keys from j0) into the output
// lanes ot, the lanes scaled first by c. The blend walks the tile's value
// rows once per group of columns, in runs (see blendRun). A run ends where
// a ring's rows wrap; 16-bit rows are widened into sc.vw first, a few at a
// time (see widenKeys).
func (p blockPath) blockValues(ot, s []float32, tk *batchTask, j0 int, c []float32) {
	sc := p.sc
	dv := p.v.cols
	nk := len(s) / kernel.BlockRows
	keys := blendRun(p.tile, dv)
	if _, vw, ok := p.wideRows(tk.b, tk.kh); ok {
		for k0 := 0; k0 < nk; {
			n := min(nk-k0, keys)
			kernel.BlockBlend(ot, s[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], vw[(j0+k0)*dv:], dv, c)
			c, k0 = nil, k0+n
		}
		return
	}
	if p.kt != F32 {
		step := widenKeys(max(p.k.cols, dv))
		for k0 := 0; k0 < nk; k0 += step {
			n := min(step, nk-k0)
			vw := sc.vw[:n*dv]
			p.widenRows(vw, keySpan{tk.b, j0 + k0, n}, tk.kh, dv, false, true)
			// The blend asks for the next values' rows, or the next
			// tile's first keys'.
			ask := p.asks16(tk, j0+k0+n, true, n*dv)
			if k0+n >= nk {
				ask = p.asks16(tk, j0+nk, false, n*dv)
			}
			if ask != nil {
				kernel.BlockBlendAsk(ot, s[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], vw, dv, c, ask)
			} else {
				kernel.BlockBlend(ot, s[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], vw, dv, c)
			}
			c = nil
		}
		return
	}
	for k0 := 0; k0 < nk; {
		r, run := p.keyRun(tk.b, j0+k0)
		n := min(nk-k0, keys, run)
		kernel.BlockBlend(ot, s[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], p.values32(tk.b, tk.kh, r), p.v.rs, c)
		c, k0 = nil, k0+n
	}
}

// asks16 returns the stored 16-bit rows of task tk's head from key j on,
// its keys' or with values its values', for an Ask kernel that asks for
// their first need elements (see askStep); nil where the task attends no
// key j or fewer elements are stored from there. An I8 cache's rows are
// viewed as 16-bit elements, half as many as their bytes (the kernels only
// ask for their lines): the ask then reaches about twice as many rows on,
// which the next widening reads first. Rows of an odd length, which would
// start at odd addresses, are asked for by nothing.
func (p *keyRows) asks16(tk *batchTask, j int, values bool, need int) []uint16 {
	if j >= tk.last {
		return nil
	}
	r, _ := p.keyRun(tk.b, j)
	var x []uint16
	switch {
	case p.kt == I8 && (p.k.rs|p.v.rs)&1 != 0:
		return nil
	case p.kt == I8 && values:
		x = asUint16(p.values8(tk.b, tk.kh, r))
	case p.kt == I8:
		x = asUint16(p.keys8(tk.b, tk.kh, r))
	case values:
		x = p.values16(tk.b, tk.kh, r)
	default:
		x = p.keys16(tk.b, tk.kh, r)
	}
	if len(x) < need {
		return nil
	}
	return x
}

// keySpan is keys [j0, j0+n) of batch entry b.
type keySpan struct{ b, j0, n int }

// widenRows widens the 16-bit or int8 rows (d elements each) of the keys
// kr of key/value head kh, its key rows or with values its value rows,
// into dst, packed. With ahead the widening also fetches the rows after
// them, as it goes; without, the rows were asked for before (see askStep),
// and fetching more in the widening's burst would only add to it.
func (p *keyRows) widenRows(dst []float32, kr keySpan, kh, d int, ahead, values bool) {
	b, j0, n := kr.b, kr.j0, kr.n
	for n > 0 {
		r, run := p.keyRun(b, j0)
		m := min(n, run)
		switch {
		case p.kt == I8 && values:
			kernel.WidenRowsI8(dst[:m*d], p.values8(b, kh, r), p.v.rs, d)
		case p.kt == I8:
			kernel.WidenRowsI8(dst[:m*d], p.keys8(b, kh, r), p.k.rs, d)
		default:
			src := p.keys16(b, kh, r)
			if values {
				src = p.values16(b, kh, r)
			}
			if !ahead {
				src = src[:m*d]
			}
			widen16(dst[:m*d], src, p.kt)
		}
		dst, j0, n = dst[m*d:], j0+m, n-m
	}
}

// widen16 sets dst to the float32 values of the first len(dst) 16-bit
// elements of src, of type t, exactly. The kernels prefetch ahead within
// src, so callers pass the rows after too where there are any.
func widen16(dst []float32, src []uint16, t KVType) {
	if t == F16 {
		kernel.WidenF16(dst, src)
	} else {
		kernel.WidenBF16(dst, src)
	}
}

// asUint16 views x, which starts at an even address, as len(x)/2 16-bit
// elements.
func asUint16(x []int8) []uint16 {
	if len(x) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(x))), len(x)/2)
}
