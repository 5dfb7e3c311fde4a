package attention

import (
	"github.com/glancelab/attention/internal/kernel"
)

// On avx512 the block kernels are bound by their loads: a key or value
// element meets the sixteen lanes of one block through a broadcast load
// per FMA. blockScores2 and blockBlend2 broadcast it once for two blocks,
// so the block path takes two tasks of sixteen rows of the same keys and
// values at once where it can (runPair): the work items are then pairs of
// tasks, units. Each block's bits are the ones it gets alone (same tiles,
// same kernels' order), so pairing changes no result. A 16-bit cache's
// rows are widened once for both tasks.

// blockPair is the block path of two tasks at once: the plan and each
// task's block scratch.
type blockPair struct {
	*batchPlan
	sc [2]*blockScratch
}

// blockPairOf returns the block path of the tasks of sc0 and sc1.
func (p *batchPlan) blockPairOf(sc0, sc1 *taskScratch) blockPair {
	return blockPair{p, [2]*blockScratch{&sc0.blk, &sc1.blk}}
}

// path returns the block path of task i of the pair.
func (p blockPair) path(i int) blockPath { return blockPath{p.batchPlan, p.sc[i]} }

// pairable reports whether the block path of the call pairs its tasks:
// where the implementation has the paired kernels and the tasks take the
// plain block path (no weights or logits, no keep-mask). Batched.attend
// unpairs a call whose pairs would be fewer than its workers (which a call
// whose chunks are work items of their own always is).
func (p *batchPlan) pairable() bool {
	return kernel.PairedBlocks() && p.block && !p.wantRows && !p.multi && p.opt.Keep == nil && p.blocks >= 2
}

// units returns the number of work items of a call without chunks as work
// items: its tasks, or, where they pair, pairs of consecutive tasks of each
// (batch, key/value head) and the odd last task alone.
func (p *batchPlan) units() int {
	if !p.pair {
		return p.tasks()
	}
	return p.q.batch * p.k.heads * ((p.blocks + 1) / 2)
}

// runUnit runs work item u of units.
func (p *batchJob) runUnit(u int, ws *workerScratch) {
	if !p.pair {
		p.run(u, ws)
		return
	}
	per := (p.blocks + 1) / 2
	t := u/per*p.blocks + 2*(u%per)
	if 2*(u%per)+1 == p.blocks {
		p.run(t, ws)
		return
	}
	p.runPair(t, t+1, ws)
}

// runPair runs tasks t0 and t1, consecutive blocks of sixteen rows of the
// same keys and values, together where it can (see pairKeys): all their
// keys at once, or, for rows cut into chunks, chunk by chunk. Otherwise it
// runs them one after the other.
func (p *batchJob) runPair(t0, t1 int, ws *workerScratch) {
	var tk0, tk1 batchTask
	p.taskInto(&tk0, t0)
	p.taskInto(&tk1, t1)
	p.rowEnds(&tk0)
	p.rowEnds(&tk1)
	if tk0.R == kernel.BlockRows && tk1.R == kernel.BlockRows && tk0.single && tk1.single {
		var sc0, sc1 taskScratch
		p.scratchPair(ws, &sc0, &sc1)
		if p.chunks > 1 {
			p.runChunksPair(&tk0, &tk1, &sc0, &sc1)
			return
		}
		tks, bp := [2]*batchTask{&tk0, &tk1}, p.blockPairOf(&sc0, &sc1)
		if bp.pairKeys(tks) {
			bp.runBlockPair(tks, true)
			return
		}
	}
	p.run(t0, ws)
	p.run(t1, ws)
}

// pairKeys reports whether tasks tk0 and tk1 can run their keys together:
// both take every key through the block kernels (the cut of runKeys is
// the last key), from the same first key.
func (p blockPair) pairKeys(tks [2]*batchTask) bool {
	tk0, tk1 := tks[0], tks[1]
	if tk0.lo != tk1.lo {
		return false
	}
	c0, c1 := p.path(0).blockCut(tk0), p.path(1).blockCut(tk1)
	return c0 > tk0.lo && c0 == tk0.last && c1 > tk1.lo && c1 == tk1.last
}

// runChunksPair is runChunks for two tasks at once: the chunks both have
// through partialPair, the rest of the longer one's alone, each task's
// partials folded in chunk order as runChunks folds them.
func (p *batchJob) runChunksPair(tk0, tk1 *batchTask, sc0, sc1 *taskScratch) {
	f0, f1 := tk0.firstChunk(), tk1.firstChunk()
	n0, n1 := tk0.chunksOf(), tk1.chunksOf()
	for c := min(f0, f1); c < max(n0, n1); c++ {
		in0, in1 := f0 <= c && c < n0, f1 <= c && c < n1
		switch {
		case in0 && in1:
			p.partialPair(tk0, tk1, sc0, sc1, c)
		case in0:
			p.partial(tk0, sc0, c, sc0.part)
		case in1:
			p.partial(tk1, sc1, c, sc1.part)
		}
		if in0 {
			p.fold(tk0, sc0, c, sc0.part)
		}
		if in1 {
			p.fold(tk1, sc1, c, sc1.part)
		}
	}
	p.finish(tk0, sc0, n0)
	p.finish(tk1, sc1, n1)
}

// partialPair is partial for chunk c of both tasks: together through the
// block kernels where pairKeys allows, else each through runKeys.
func (p *batchJob) partialPair(tk0, tk1 *batchTask, sc0, sc1 *taskScratch, c int) {
	tks, scs := [2]*batchTask{tk0, tk1}, [2]*taskScratch{sc0, sc1}
	for i, tk := range tks {
		tk.keys(c*splitKeys, min(p.k.rows, (c+1)*splitKeys))
		tk.part = scs[i].part[2*kernel.BlockRows:]
	}
	if bp := p.blockPairOf(sc0, sc1); bp.pairKeys(tks) {
		p.rowPathOf(sc0).scaledQueries(tk0)
		p.rowPathOf(sc1).scaledQueries(tk1)
		bp.runBlockPair(tks, false)
	} else {
		p.runKeys(tk0, sc0)
		p.runKeys(tk1, sc1)
	}
	for i, tk := range tks {
		sc := scs[i]
		tk.part = nil
		copy(sc.part[:tk.R], sc.row.m[:tk.R])
		copy(sc.part[kernel.BlockRows:kernel.BlockRows+tk.R], sc.row.l[:tk.R])
	}
}

// runBlockPair is runBlock for two tasks at once: the tiles of keys from
// their common first key, each task's up to its last key, the keys both
// take through blockScores2 and blockBlend2 and the rest of the longer
// one's through blockScores and blockBlend. With direct, as runBlock's,
// the queries come from the tensor and the outputs go back normalised;
// otherwise the queries come scaled from each task's sc.qs and the
// unnormalised outputs go to its tk.part.
func (p blockPair) runBlockPair(tks [2]*batchTask, direct bool) {
	tk0, tk1 := tks[0], tks[1]
	for i, tk := range tks {
		p.path(i).startLanes(tk, direct)
	}
	for j0 := tk0.lo; j0 < max(tk0.last, tk1.last); j0 += p.tile {
		n := p.pairTile(tks, j0)
		both := min(n[0], n[1])
		p.blockKeysPair(tk0, j0, both)
		for i, tk := range tks {
			if n[i] == 0 {
				continue
			}
			bp := p.path(i)
			s := bp.sc.st[:kernel.BlockRows*n[i]]
			if n[i] > both {
				bp.blockKeys(s[kernel.BlockRows*both:], tk, j0+both)
			}
			bp.adjustTile(s, tk, j0)
			kernel.BlockSoftmax(s, bp.sc.ml)
		}
		p.blockValuesPair(tks, n, both, j0)
	}
	for i, tk := range tks {
		p.path(i).endLanes(tk, direct)
	}
}

// pairTile returns how many keys of the tile from j0 each task of a pair
// takes, and at either task's last tile asks for what comes after it.
func (p *batchPlan) pairTile(tks [2]*batchTask, j0 int) (n [2]int) {
	for i, tk := range tks {
		n[i] = max(0, min(p.tile, tk.last-j0))
		if n[i] > 0 && j0+p.tile >= tk.last {
			// The task after tk0 is tk1, whose queries are in; the
			// next pair is the two tasks after tk1.
			p.prefetchOut(tk)
			if i == 1 {
				p.prefetchQueries(tk.t + 1)
				p.prefetchQueries(tk.t + 2)
			}
		}
	}
	return n
}

// blockKeysPair is blockKeys for both tasks of a pair (one batch entry and
// key/value head): the scores of the same both keys from j0, into sc0.st
// and sc1.st. 16-bit rows are widened once for both, into sc0.kw.
func (p blockPair) blockKeysPair(tk *batchTask, j0, both int) {
	sc0, sc1 := p.sc[0], p.sc[1]
	s0, s1 := sc0.st[:kernel.BlockRows*both], sc1.st[:kernel.BlockRows*both]
	scores := func(s0, s1 []float32, k []float32, stride int) {
		kernel.BlockScores2(s0, s1, sc0.qt, sc1.qt, k, stride)
	}
	if kw, _, ok := p.path(0).wideRows(tk.b, tk.kh); ok {
		dk := p.k.cols
		scores(s0, s1, kw[j0*dk:], dk)
		return
	}
	if p.kt != F32 {
		dk, nk := p.k.cols, len(s0)/kernel.BlockRows
		step := widenKeys(max(dk, p.v.cols))
		for k0 := 0; k0 < nk; k0 += step {
			n := min(step, nk-k0)
			kw := sc0.kw[:n*dk]
			p.widenRows(kw, keySpan{tk.b, j0 + k0, n}, tk.kh, dk, true, false)
			scores(s0[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], s1[k0*kernel.BlockRows:(k0+n)*kernel.BlockRows], kw, dk)
		}
		return
	}
	for nk := len(s0) / kernel.BlockRows; nk > 0; {
		r, run := p.keyRun(tk.b, j0)
		n := min(nk, run)
		scores(s0[:n*kernel.BlockRows], s1[:n*kernel.BlockRows], p.keys32(tk.b, tk.kh, r), p.k.rs)
		s0, s1, j0, nk = s0[n*kernel.BlockRows:], s1[n*kernel.BlockRows:], j0+n, nk-n
	}
}

// blockValuesPair is blockValues for the tile of both tasks of a pair from
// j0: the first both keys (n[i] for task i) through blockBlend2, in the
// runs blockValues takes (16-bit rows widened once for both, into
// scs[0].vw), then the rest of the longer task's.
func (p blockPair) blockValuesPair(tks [2]*batchTask, n [2]int, both, j0 int) {
	dv, scs := p.v.cols, p.sc
	c0, c1 := laneFactors(scs[0].ml), laneFactors(scs[1].ml)
	b, kh := tks[0].b, tks[0].kh
	st0, st1 := scs[0].st, scs[1].st
	if _, vw, ok := p.path(0).wideRows(b, kh); ok {
		keys := blendRun(p.tile, dv)
		for k0 := 0; k0 < both; {
			m := min(both-k0, keys)
			kernel.BlockBlend2(scs[0].ot, scs[1].ot, st0[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], st1[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], vw[(j0+k0)*dv:], dv, c0, c1)
			c0, c1, k0 = nil, nil, k0+m
		}
	} else if p.kt != F32 {
		step := widenKeys(max(p.k.cols, dv))
		for k0 := 0; k0 < both; k0 += step {
			m := min(step, both-k0)
			vw := scs[0].vw[:m*dv]
			p.widenRows(vw, keySpan{b, j0 + k0, m}, kh, dv, true, true)
			kernel.BlockBlend2(scs[0].ot, scs[1].ot, st0[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], st1[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], vw, dv, c0, c1)
			c0, c1 = nil, nil
		}
	} else {
		keys := blendRun(p.tile, dv)
		for k0 := 0; k0 < both; {
			r, run := p.keyRun(b, j0+k0)
			m := min(both-k0, keys, run)
			kernel.BlockBlend2(scs[0].ot, scs[1].ot, st0[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], st1[k0*kernel.BlockRows:(k0+m)*kernel.BlockRows], p.values32(b, kh, r), p.v.rs, c0, c1)
			c0, c1, k0 = nil, nil, k0+m
		}
	}
	cs := [2][]float32{c0, c1}
	for i, tk := range tks {
		if n[i] > both {
			bp := p.path(i)
			bp.blockValues(bp.sc.ot, bp.sc.st[both*kernel.BlockRows:n[i]*kernel.BlockRows], tk, j0+both, cs[i])
		}
	}
}
