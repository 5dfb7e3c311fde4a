package attention

import "github.com/glancelab/attention/internal/kernel"

// cacheHead is the rows one entry and head of a KVCache holds, where
// Batched.AttendCache and a Memory of NewMemoryCache read them: float32 or
// 16-bit, packed (stride dk or dv), key j at stored row start+j, wrapping
// at a ring's capacity. Every kernel call over a run of keys is cut where
// the rows wrap (see run).
type cacheHead struct {
	kt              KVType
	start, capacity int
	dk, dv          int
	k32, v32        []float32 // F32: the head's rows up to KVCache.heldRows
	k16, v16        []uint16  // F16 and BF16: the stored bits
	k8, v8          []int8    // I8: rows of rk and rv elements, each its scale and its elements
	rk, rv          int       // I8: the stored rows' strides
	rot             bool      // I8: the key rows are rotated (see KVCache)
	ks, vs          []float32 // I8 WithScales: the head's per-channel scales, else nil
}

// run returns the stored row of key j and how many rows from it on are
// contiguous.
func (c *cacheHead) run(j int) (r, n int) {
	r = c.start + j
	if r >= c.capacity {
		r -= c.capacity
	}
	return r, c.capacity - r
}

// key returns key j as float32: the stored row of a float32 cache, or the
// 16-bit or int8 row widened into buf (dk floats), an int8 row rotated
// back if it was rotated.
func (c *cacheHead) key(buf []float32, j int) []float32 {
	r, _ := c.run(j)
	d := c.dk
	switch c.kt {
	case F32:
		return c.k32[r*d : (r+1)*d]
	case I8:
		kernel.WidenRowsI8(buf[:d], c.k8[r*c.rk:], c.rk, d)
		if c.rot {
			rotateBack(buf[:d])
		}
		if c.ks != nil {
			mulChannels(buf[:d], c.ks, 1)
		}
	default:
		widen16(buf, c.k16[r*d:(r+1)*d], c.kt)
	}
	return buf
}

// scoreKeys sets dst[i] to the dot of q with key j+i, for i < len(dst).
func (c *cacheHead) scoreKeys(dst []float32, j int, q []float32) {
	d := c.dk
	for len(dst) > 0 {
		r, run := c.run(j)
		n := min(len(dst), run)
		switch c.kt {
		case F32:
			kernel.ScoreRows(dst[:n], c.k32[r*d:], d, q)
		case F16:
			kernel.ScoreRowsF16(dst[:n], c.k16[r*d:], d, q)
		case BF16:
			kernel.ScoreRowsBF16(dst[:n], c.k16[r*d:], d, q)
		case I8:
			kernel.ScoreRowsI8(dst[:n], c.k8[r*c.rk:], c.rk, q)
		}
		dst, j = dst[n:], j+n
	}
}

// blendValues adds Σ w[i]·v(j+i) to acc over the value rows of the keys
// keep keeps (all if it is nil), as blendKept does.
func (c *cacheHead) blendValues(acc, w []float32, j int, keep []bool) {
	d := c.dv
	for len(w) > 0 {
		r, run := c.run(j)
		n := min(len(w), run)
		kn := maybe(keep, 0, min(n, len(keep)))
		switch c.kt {
		case F32:
			blendKept(acc, w[:n], c.v32[r*d:], d, kn)
		case F16:
			blendKeptWith(acc, w[:n], c.v16[r*d:], d, kn, kernel.BlendRowsF16Runs)
		case BF16:
			blendKeptWith(acc, w[:n], c.v16[r*d:], d, kn, kernel.BlendRowsBF16Runs)
		case I8:
			blendKeptWith(acc, w[:n], c.v8[r*c.rv:], c.rv, kn, kernel.BlendRowsI8)
		}
		w, j = w[n:], j+n
		if keep != nil {
			keep = keep[n:]
		}
	}
}

// head returns the rows entry b, head h holds.
func (c *KVCache) head(b, h int) cacheHead {
	x := cacheHead{kt: c.typ, start: c.Start(b), capacity: c.capacity, dk: c.dk, dv: c.dv, rk: c.rk, rv: c.rv, rot: c.rotate,
		ks: c.channelKeys(h), vs: c.channelValues(h)}
	switch c.typ {
	case F32:
		x.k32, x.v32 = c.heldKeys32(b, h), c.heldValues32(b, h)
	case I8:
		x.k8, x.v8 = c.heldKeys8(b, h), c.heldValues8(b, h)
	default:
		x.k16, x.v16 = c.heldKeys16(b, h), c.heldValues16(b, h)
	}
	return x
}
