package attention

import (
	"fmt"
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// Key stores in dst, widened to float32, the key row of head h that entry
// b holds i-th, oldest first: the row of position Pos(b)−Len(b)+i. It
// panics if an index is out of range or len(dst) is not dk, as Tensor.Row
// does: for tests, oracles and inspection, not for the engine, which reads
// rows in place. An I8 cache's key comes dequantised (times its static
// per-channel scales, see WithScales) and, if the cache rotates its keys,
// rotated back.
func (c *KVCache) Key(dst []float32, b, h, i int) {
	r := c.physRow("Key", b, h, i, len(dst), c.dk)
	switch c.typ {
	case F32:
		copy(dst, c.keys32(b, h)[r*c.dk:])
	case I8:
		kernel.WidenRowsI8(dst, c.keys8(b, h)[r*c.rk:], c.rk, c.dk)
		if c.rotate {
			rotateBack(dst)
		}
		if s := c.channelKeys(h); s != nil {
			mulChannels(dst, s, 1)
		}
	default:
		c.widen(dst, c.keys16(b, h)[r*c.dk:(r+1)*c.dk])
	}
}

// Value is Key for the value rows (len(dst) = dv).
func (c *KVCache) Value(dst []float32, b, h, i int) {
	r := c.physRow("Value", b, h, i, len(dst), c.dv)
	switch c.typ {
	case F32:
		copy(dst, c.values32(b, h)[r*c.dv:])
	case I8:
		kernel.WidenRowsI8(dst, c.values8(b, h)[r*c.rv:], c.rv, c.dv)
		if s := c.channelValues(h); s != nil {
			mulChannels(dst, s, 1)
		}
	default:
		c.widen(dst, c.values16(b, h)[r*c.dv:(r+1)*c.dv])
	}
}

// physRow returns the physical row of (b, h)'s i-th held row, and panics
// on an index out of range or a row buffer of the wrong length.
func (c *KVCache) physRow(op string, b, h, i, got, want int) int {
	if b < 0 || b >= c.batch || h < 0 || h >= c.heads || i < 0 || i >= c.n[b] {
		panic(fmt.Sprintf("attention: KVCache.%s: index (%d, %d, %d) out of range (%d, %d, %d)", op, b, h, i, c.batch, c.heads, c.n[b]))
	}
	if got != want {
		panic(shapeErr("KVCache."+op, "len(dst)", got, want, "row dimension"))
	}
	return (c.Start(b) + i) % c.capacity
}

func (c *KVCache) widen(dst []float32, src []uint16) {
	if c.typ == F16 {
		kernel.WidenF16(dst, src)
	} else {
		kernel.WidenBF16(dst, src)
	}
}

// heldRuns returns entry b's held rows in physical order of position, as
// two runs: rows start to start+n1−1, then rows 0 to n2−1 (n2 > 0 only in
// a ring whose held rows wrap), as the engine reads them (see keyRun).
func (c *KVCache) heldRuns(b int) (start, n1, n2 int) {
	start, n := c.Start(b), c.n[b]
	n1 = min(n, c.capacity-start)
	return start, n1, n - n1
}

// keys32 returns the capacity·dk stored key elements of (b, h), physical
// row r at r·dk, for an F32 cache. The accessors panic on another type
// or an index out of range: the engine picks its kernels by Type first.
func (c *KVCache) keys32(b, h int) []float32 {
	c.mustType("keys32", F32, b, h)
	o := b*c.entryK + h*c.headK
	return c.k32[o : o+c.headK : o+c.headK]
}

// values32 is keys32 for the values (capacity·dv elements).
func (c *KVCache) values32(b, h int) []float32 {
	c.mustType("values32", F32, b, h)
	o := b*c.entryV + h*c.headV
	return c.v32[o : o+c.headV : o+c.headV]
}

// keys16 is keys32 for an F16 or BF16 cache: the stored bits.
func (c *KVCache) keys16(b, h int) []uint16 {
	c.mustType("keys16", F16, b, h)
	o := b*c.entryK + h*c.headK
	return c.k16[o : o+c.headK : o+c.headK]
}

// values16 is keys16 for the values.
func (c *KVCache) values16(b, h int) []uint16 {
	c.mustType("values16", F16, b, h)
	o := b*c.entryV + h*c.headV
	return c.v16[o : o+c.headV : o+c.headV]
}

// keys8 is keys32 for an I8 cache: its rows of rk elements, each the
// row's scale and its dk elements.
func (c *KVCache) keys8(b, h int) []int8 {
	c.mustType("keys8", I8, b, h)
	o := b*c.entryK + h*c.headK
	return c.k8[o : o+c.headK : o+c.headK]
}

// values8 is keys8 for the values (rows of rv elements).
func (c *KVCache) values8(b, h int) []int8 {
	c.mustType("values8", I8, b, h)
	o := b*c.entryV + h*c.headV
	return c.v8[o : o+c.headV : o+c.headV]
}

// heldRows returns how many of entry b's physical rows, from row 0, the
// engine's kernels may be given: up to the end of the held rows, or all of
// a ring's once they wrap. The rows past them were never written, or hold
// nothing any more; a new cache's unused capacity may not even be backed
// by memory yet, where a kernel's prefetches ahead, which keep inside the
// slices they get, would each cost a page walk.
func (c *KVCache) heldRows(b int) int { return min(c.capacity, c.Start(b)+c.n[b]) }

// heldKeys32, heldValues32, heldKeys16 and heldValues16 are keys32 and its
// kin up to heldRows.
func (c *KVCache) heldKeys32(b, h int) []float32   { return c.keys32(b, h)[:c.heldRows(b)*c.dk] }
func (c *KVCache) heldValues32(b, h int) []float32 { return c.values32(b, h)[:c.heldRows(b)*c.dv] }
func (c *KVCache) heldKeys16(b, h int) []uint16    { return c.keys16(b, h)[:c.heldRows(b)*c.dk] }
func (c *KVCache) heldValues16(b, h int) []uint16  { return c.values16(b, h)[:c.heldRows(b)*c.dv] }
func (c *KVCache) heldKeys8(b, h int) []int8       { return c.keys8(b, h)[:c.heldRows(b)*c.rk] }
func (c *KVCache) heldValues8(b, h int) []int8     { return c.values8(b, h)[:c.heldRows(b)*c.rv] }

// mustType panics unless the cache's storage is that of want (F16 and
// BF16 share theirs) and (b, h) is in range.
func (c *KVCache) mustType(op string, want KVType, b, h int) {
	if storage(c.typ) != storage(want) {
		panic(fmt.Sprintf("attention: KVCache.%s on a %v cache", op, c.typ))
	}
	if b < 0 || b >= c.batch || h < 0 || h >= c.heads {
		panic(fmt.Sprintf("attention: KVCache.%s: index (%d, %d) out of range (%d, %d)", op, b, h, c.batch, c.heads))
	}
}

// rotateBack rotates a dequantised key row back, in float64 and rounded
// once: rotated in float32 the sums of a row near the largest float32
// would overflow, where the row they come from did not. Rows of up to 256
// elements take no allocation.
func rotateBack(x []float32) {
	var buf [256]float64
	y := buf[:0]
	if len(x) > len(buf) {
		y = make([]float64, 0, len(x))
	}
	for _, v := range x {
		y = append(y, float64(v))
	}
	hadamard64(y)
	for i, v := range y {
		x[i] = float32(v)
	}
}

// hadamard64 rotates x in float64 as kernel.Hadamard rotates a row in
// float32: in blocks of b = len(x)&-len(x) elements, each multiplied by
// H_b/√b (nothing for an odd length).
func hadamard64(x []float64) {
	d := len(x)
	b := d & -d
	if b < 2 {
		return
	}
	f := 1 / math.Sqrt(float64(b))
	for blk := 0; blk < d; blk += b {
		y := x[blk : blk+b]
		for span := 1; span < b; span *= 2 {
			for i := 0; i < b; i += 2 * span {
				for r := i; r < i+span; r++ {
					y[r], y[r+span] = y[r]+y[r+span], y[r]-y[r+span]
				}
			}
		}
		for i := range y {
			y[i] *= f
		}
	}
}

// storage names the store a type's rows live in: F16 and BF16 share one.
func storage(t KVType) KVType {
	if t == BF16 {
		return F16
	}
	return t
}
