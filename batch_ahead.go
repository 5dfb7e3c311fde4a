package attention

import "sync/atomic"

// The row path's multi-row blends ask for the value rows of the tile a
// worker takes next while they blend this one (see blendRowsMulti's next),
// so that its V is in cache when it comes. The tile after a task's last
// is the next task's first: a worker takes tasks in order when it is the
// only one, and with several the rows asked for are ones another worker
// reads. A worker's aheadMark says which tile's rows were asked for, so
// that the tile knows whether its V is on its way (warm) or must be
// streamed (cold, see tileRowsOf).

// aheadMark names the tile whose value rows a worker last asked for:
// the first key j of task t of call call; none if set is false.
type aheadMark struct {
	set  bool
	call uint64
	t, j int
}

// is reports whether the mark names key j of task t of call.
func (a *aheadMark) is(call uint64, t, j int) bool {
	return a != nil && a.set && a.call == call && a.t == t && a.j == j
}

// mark sets the mark to key j of task t of call, or clears it if t < 0.
func (a *aheadMark) mark(call uint64, t, j int) {
	if a != nil {
		*a = aheadMark{set: t >= 0, call: call, t: t, j: j}
	}
}

// aheadMinKeys is the fewest keys a task's last tile has for its blend to
// ask for the next task's first: forming that task costs a tenth of a
// decode step over one key, while longer tiles gain from the asking
// (measured: docs/performance/intel-xeon.md#the-multi-row-blends-ask-ahead-from-code-comments).
const aheadMinKeys = 64

// nextTile returns the task and first key of the tile a worker takes after
// keys [j0, j0+n) of task tk, for the tile's blend to ask for its value
// rows: the task's next tile, or after its last the first tile (from its
// lo) of the task the worker takes next (the next task when it is the only
// worker; with several, the one it takes ahead, see itemClaim), or after a
// chunk that is a work item of its own the first tile of the item the
// worker takes next, or t = -1 for none: the call's last task or item, or
// a last tile of fewer than aheadMinKeys keys. Past a task's keys lie
// another head's, or keys a window leaves out: asked for, the rows after
// the last tile took a sliding window's step (Tk 32768, window 1024) 13%
// longer.
func (p *batchPlan) nextTile(tk *batchTask, j0, n int, claim *itemClaim) (nt batchTask, t, j int) {
	e := j0 + n
	switch {
	case p.chunkWork && e >= tk.last:
		if n < aheadMinKeys {
			return nt, -1, 0
		}
		return p.itemTile(claim.take())
	case e < tk.fullEnd():
		return nt, tk.t, e
	case n < aheadMinKeys:
		return nt, -1, 0
	case claim != nil && claim.next != nil:
		// Several workers: the task this worker takes next, taken now.
		return p.taskTile(claim.take())
	}
	return p.taskTile(int64(tk.t) + 1)
}

// taskTile returns task t and the first key of its first tile, or t = -1
// if there is no such task or it has no keys.
func (p *batchPlan) taskTile(t int64) (nt batchTask, _, j int) {
	if t < 0 || t >= int64(p.tasks()) {
		return nt, -1, 0
	}
	p.taskInto(&nt, int(t))
	p.rowEnds(&nt)
	if nt.lo >= nt.last {
		return nt, -1, 0
	}
	return nt, nt.t, nt.lo
}

// itemClaim is the work item a worker has taken before it finished the
// one it runs. A chunk that is a work item of its own is followed by
// whichever item the counter gives its worker next, so the worker takes
// that item at its chunk's last tile, whose blend can then ask for the
// item's first tile, which was otherwise read cold (measured:
// docs/performance/intel-xeon.md#the-next-chunk-taken-ahead-from-code-comments).
// Tasks that are work items take ahead the same way where their tiles
// go through the multi-row kernels: the next task is otherwise another
// worker's, and each task's first tile was read cold, row 0's blend
// through the one-row kernel (measured:
// docs/performance/amd-epyc-zen4.md#the-next-task-taken-ahead-and-blends-in-place-from-code-comments).
// Which worker computes an item still never changes its result; a worker
// holds at most one item ahead, so the last items of a call wait at most
// one item longer for a worker.
type itemClaim struct {
	next *atomic.Int64 // the call's counter; nil: take nothing ahead
	item int64         // the item taken ahead, or -1
}

// take returns the item taken ahead, taking it from the counter first if
// none is: so a chunk's last tile asked for twice takes one item.
func (c *itemClaim) take() int64 {
	if c == nil || c.next == nil {
		return -1
	}
	if c.item < 0 {
		c.item = c.next.Add(1) - 1
	}
	return c.item
}

// itemTile returns the task and first key of work item i's first tile, or
// t = -1 if there is no such item or it has no keys.
func (p *batchPlan) itemTile(i int64) (nt batchTask, t, j int) {
	if i < 0 || i >= int64(p.tasks()*p.chunks) {
		return nt, -1, 0
	}
	c := int(i) % p.chunks
	if nt, t, _ = p.taskTile(i / int64(p.chunks)); t < 0 || c >= nt.chunksOf() {
		return nt, -1, 0
	}
	nt.keys(c*splitKeys, min(p.k.rows, (c+1)*splitKeys))
	if nt.lo >= nt.last {
		return nt, -1, 0
	}
	return nt, t, nt.lo
}

// claims reports whether the call's workers take items ahead (see
// itemClaim): where its row-path tiles ask for the next item's, whether
// chunks or whole tasks of the multi-row kernels.
func (p *batchPlan) claims() bool { return p.chunkWork || p.multi && !p.pair }
