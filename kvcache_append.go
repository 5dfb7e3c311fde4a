package attention

import (
	"fmt"
	"math"
)

// Append adds rows rows to every KV head of entry b: k holds them as
// [kvHeads][rows][dk] (len kvHeads·rows·dk), v as [kvHeads][rows][dv].
// They are converted to the cache's type and take positions Pos(b) to
// Pos(b)+rows−1. Without WithRing, rows past the capacity are ErrCapacity;
// with it, they overwrite the oldest rows, and of more than capacity rows
// only the last capacity are kept. Wrong lengths are a *ShapeError, b out
// of range or a negative rows ErrArgument. A failed Append changes
// nothing. Append does not allocate and does O(rows·kvHeads·(dk+dv))
// work.
func (c *KVCache) Append(b int, k, v []float32, rows int) error {
	const op = "KVCache.Append"
	if rows < 0 {
		return argErr(op, "rows = %d", rows)
	}
	hr := elems(c.heads, rows)
	if want := elems(hr, c.dk); len(k) != want {
		return shapeErr(op, "len(k)", len(k), want, "kvHeads·rows·dk")
	}
	if want := elems(hr, c.dv); len(v) != want {
		return shapeErr(op, "len(v)", len(v), want, "kvHeads·rows·dv")
	}
	// The lengths match, so the packed views fit their data.
	kt, _ := NewTensor(1, c.heads, rows, c.dk, k)
	vt, _ := NewTensor(1, c.heads, rows, c.dv, v)
	return c.appendViews(op, b, kt, vt, rows)
}

// AppendTensor is Append with the rows as views of shape
// [1][kvHeads][rows][dk] and [1][kvHeads][rows][dv], of any strides: for
// example the rows of a step's projection laid out [rows][kvHeads][d],
// without a copy. Shapes that do not fit are a *ShapeError.
func (c *KVCache) AppendTensor(b int, k, v Tensor) error {
	const op = "KVCache.AppendTensor"
	for _, d := range []struct {
		t    Tensor
		name string
		cols int
	}{{k, "k", c.dk}, {v, "v", c.dv}} {
		batch, heads, _, cols := d.t.Shape()
		switch {
		case batch != 1:
			return shapeErr(op, d.name+" batch", batch, 1, "one entry")
		case heads != c.heads:
			return shapeErr(op, d.name+" heads", heads, c.heads, "KV heads")
		case cols != d.cols:
			return shapeErr(op, d.name+" cols", cols, d.cols, "row dimension")
		}
	}
	_, _, rows, _ := k.Shape()
	if _, _, vr, _ := v.Shape(); vr != rows {
		return shapeErr(op, "v rows", vr, rows, "rows of k")
	}
	return c.appendViews(op, b, k, v, rows)
}

// appendViews checks that entry b can take rows more rows, then writes
// them: every check comes before the first write.
func (c *KVCache) appendViews(op string, b int, k, v Tensor, rows int) error {
	if b < 0 || b >= c.batch {
		return argErr(op, "entry %d of %d", b, c.batch)
	}
	if !c.ring && rows > c.capacity-c.n[b] {
		return fmt.Errorf("%w: %s: entry %d holds %d of %d rows, %d more do not fit", ErrCapacity, op, b, c.n[b], c.capacity, rows)
	}
	if rows > math.MaxInt-c.pos[b] {
		return argErr(op, "position %d + %d rows overflows", c.pos[b], rows)
	}
	first := 0
	if rows > c.capacity { // a ring: earlier rows would be overwritten
		first = rows - c.capacity
	}
	slot := 0
	if c.capacity > 0 {
		slot = (c.pos[b] + first) % c.capacity
	}
	for i := first; i < rows; i++ {
		for h := range c.heads {
			c.putRow(b, h, slot, k.Row(0, h, i), v.Row(0, h, i))
		}
		if slot++; slot == c.capacity {
			slot = 0
		}
	}
	c.pos[b] += rows
	c.n[b] = min(c.n[b]+rows, c.capacity)
	return nil
}

// putRow stores one key and one value row at physical row slot of (b, h).
func (c *KVCache) putRow(b, h, slot int, k, v []float32) {
	ko := b*c.entryK + h*c.headK + slot*c.dk
	vo := b*c.entryV + h*c.headV + slot*c.dv
	switch c.typ {
	case F32:
		copy(c.k32[ko:ko+c.dk], k)
		copy(c.v32[vo:vo+c.dv], v)
	case F16:
		narrowF16(c.k16[ko:ko+c.dk], k)
		narrowF16(c.v16[vo:vo+c.dv], v)
	case BF16:
		narrowBF16(c.k16[ko:ko+c.dk], k)
		narrowBF16(c.v16[vo:vo+c.dv], v)
	}
}

// Truncate rolls entry b back to position n, dropping its rows at
// positions n and after: rejected speculative tokens. Afterwards Pos(b) =
// n and Len(b) is smaller by the rows dropped. n must lie in
// [Pos(b)−Len(b), Pos(b)]: without WithRing that is 0 ≤ n ≤ Len(b); in a
// ring, rows already overwritten cannot come back, so a position before
// the oldest held row is refused. Out of range n or b is ErrArgument, and
// changes nothing.
func (c *KVCache) Truncate(b, n int) error {
	const op = "KVCache.Truncate"
	if b < 0 || b >= c.batch {
		return argErr(op, "entry %d of %d", b, c.batch)
	}
	if oldest := c.pos[b] - c.n[b]; n < oldest || n > c.pos[b] {
		return argErr(op, "position %d outside the held rows, positions %d to %d", n, oldest, c.pos[b])
	}
	c.n[b] -= c.pos[b] - n
	c.pos[b] = n
	return nil
}
