package attention

import (
	"fmt"
	"math"

	"github.com/glancelab/attention/internal/kernel"
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
	if err := c.checkRowsLen(op, len(k), len(v), rows); err != nil {
		return err
	}
	// The lengths match, so the packed views fit their data.
	kt, _ := NewTensor(1, c.heads, rows, c.dk, k)
	vt, _ := NewTensor(1, c.heads, rows, c.dv, v)
	return c.appendViews(op, b, kt, vt, rows)
}

// checkRowsLen checks the lengths of rows rows of keys and values laid out
// [kvHeads][rows][d] for an append (rows at least 0).
func (c *KVCache) checkRowsLen(op string, nk, nv, rows int) error {
	if rows < 0 {
		return argErr(op, "rows = %d", rows)
	}
	hr := elems(c.heads, rows)
	if want := elems(hr, c.dk); nk != want {
		return shapeErr(op, "len(k)", nk, want, "kvHeads·rows·dk")
	}
	if want := elems(hr, c.dv); nv != want {
		return shapeErr(op, "len(v)", nv, want, "kvHeads·rows·dv")
	}
	return nil
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
	// The rows of a run lie back to back in k and v where Append gave
	// them: then one call per K and V stores a run.
	whole := rows == 1 || packedRows(k, c.dk) && packedRows(v, c.dv)
	return c.appendRows(op, b, rows, func(h, i, ko, vo, n int) {
		if whole {
			c.putRows(b, h, ko, vo, k.rowsFrom(0, h, i)[:n*c.dk], v.rowsFrom(0, h, i)[:n*c.dv])
			return
		}
		for r := range n {
			c.putRows(b, h, ko+r*c.rk, vo+r*c.rv, k.Row(0, h, i+r), v.Row(0, h, i+r))
		}
	})
}

// appendRows checks that entry b can take rows more rows, then has put
// store them, a run of n rows of head h from row i on at a time, at
// physical element ko of the K store and vo of the V store, and moves the
// entry's position: every check comes before the first write.
func (c *KVCache) appendRows(op string, b, rows int, put func(h, i, ko, vo, n int)) error {
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
	start := 0
	if c.capacity > 0 {
		start = (c.pos[b] + first) % c.capacity
	}
	// The rows of a head take consecutive physical rows up to the end of
	// the ring, then go on from its start: at most two runs.
	for h := range c.heads {
		if c.dk == 0 && c.dv == 0 {
			break // rows of no element: nothing to store, however many heads
		}
		for i, slot := first, start; i < rows; slot = 0 {
			n := min(rows-i, c.capacity-slot)
			put(h, i, b*c.entryK+h*c.headK+slot*c.rk, b*c.entryV+h*c.headV+slot*c.rv, n)
			i += n
		}
	}
	c.pos[b] += rows
	c.n[b] = min(c.n[b]+rows, c.capacity)
	return nil
}

// packedRows reports whether the rows of each head of t lie back to
// back, d elements apart.
func packedRows(t Tensor, d int) bool {
	_, _, rs := t.Strides()
	return rs == d
}

// putRows stores key and value elements, whole rows of one head of entry
// b, from physical element ko of the K store and vo of the V store on,
// converted to the cache's type.
func (c *KVCache) putRows(b, h, ko, vo int, k, v []float32) {
	switch c.typ {
	case I8:
		c.putRows8(b, h, ko, vo, k, v)
	case F32:
		copy(c.k32[ko:ko+len(k)], k)
		copy(c.v32[vo:vo+len(v)], v)
	case F16:
		kernel.NarrowF16(c.k16[ko:ko+len(k)], k)
		kernel.NarrowF16(c.v16[vo:vo+len(v)], v)
	case BF16:
		kernel.NarrowBF16(c.k16[ko:ko+len(k)], k)
		kernel.NarrowBF16(c.v16[vo:vo+len(v)], v)
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

// putRows8 is putRows for an I8 cache: each key row rotated (in entry b's
// scratch) if the cache rotates, then each row quantised, against its own
// scale or the static ones. A row of no elements keeps the scale 0 its
// store was made with.
func (c *KVCache) putRows8(b, h, ko, vo int, k, v []float32) {
	if c.ks != nil {
		s, ch := c.staticScales(true, h)
		for i := range len(k) / max(c.dk, 1) {
			kernel.NarrowI8Static(c.k8[ko+i*c.rk:], k[i*c.dk:(i+1)*c.dk], s, ch)
		}
		s, ch = c.staticScales(false, h)
		for i := range len(v) / max(c.dv, 1) {
			kernel.NarrowI8Static(c.v8[vo+i*c.rv:], v[i*c.dv:(i+1)*c.dv], s, ch)
		}
		return
	}
	if fused(c.dk) {
		var f float32
		var tmp []float32
		if c.rotate {
			f, tmp = float32(1/math.Sqrt(float64(c.dk))), c.rot[2*b*c.dk:2*(b+1)*c.dk]
		}
		kernel.QuantRowsI8(c.k8[ko:], c.rk, k, c.dk, f, tmp)
	} else {
		for i := range len(k) / max(c.dk, 1) {
			row := k[i*c.dk : (i+1)*c.dk]
			if c.rotate {
				r := c.rot[2*b*c.dk : (2*b+1)*c.dk]
				copy(r, row)
				kernel.RotateRows(r, c.dk)
				row = r
			}
			kernel.NarrowI8(c.k8[ko+i*c.rk:], row)
		}
	}
	if fused(c.dv) {
		kernel.QuantRowsI8(c.v8[vo:], c.rv, v, c.dv, 0, nil)
		return
	}
	for i := range len(v) / max(c.dv, 1) {
		kernel.NarrowI8(c.v8[vo+i*c.rv:], v[i*c.dv:(i+1)*c.dv])
	}
}

// fused reports whether rows of d elements are quantised (and rotated) by
// kernel.QuantRowsI8, in registers: d = 128, the width of most models'
// heads.
func fused(d int) bool { return d == 128 }
