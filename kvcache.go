package attention

import "fmt"

// KVType is the element type a KVCache stores its rows in.
type KVType uint8

const (
	F32  KVType = iota // float32: rows stored as given
	F16                // IEEE 754 binary16, rounded to nearest even; overflow to ±Inf
	BF16               // bfloat16, rounded to nearest even
	I8                 // int8 with a float32 scale per row, see KVCache
)

// String returns "f32", "f16", "bf16" or "i8".
func (t KVType) String() string {
	switch t {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	case I8:
		return "i8"
	}
	return fmt.Sprintf("KVType(%d)", uint8(t))
}

// Size returns the bytes an element takes, 0 for an unknown type. An I8
// row takes 4 bytes more, its scale.
func (t KVType) Size() int {
	switch t {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case I8:
		return 1
	}
	return 0
}

// rowExtra is the elements a stored row takes beyond its d: an I8 row's
// scale.
func (t KVType) rowExtra() int {
	if t == I8 {
		return 4
	}
	return 0
}

// A KVCacheOption configures NewKVCache; WithRing makes one. The zero
// KVCacheOption changes nothing.
type KVCacheOption struct {
	ring, plain, scales, storage bool
	ks, vs                       []float32
	k16, v16                     []uint16 // WithStorage16's
}

// WithRing makes the cache a ring of capacity rows per entry, for models
// with a sliding window of that many keys: an Append past the capacity
// overwrites the oldest rows instead of failing.
func WithRing() KVCacheOption { return KVCacheOption{ring: true} }

// WithoutRotation stores an I8 cache's key rows as given, not rotated (see
// KVCache); it changes nothing for the other types. Without the rotation
// a key row's few large channels (the outliers many models' keys have)
// set its scale, and the rest of the row keeps fewer bits: use it only
// for keys without such channels, or to read rows quantised elsewhere
// exactly as they were.
func WithoutRotation() KVCacheOption { return KVCacheOption{plain: true} }

// KVCache holds the keys and values of past tokens for incremental
// decoding: per batch entry and KV head, up to a capacity of key rows (dk
// elements) and value rows (dv elements), stored as float32, binary16 or
// bfloat16 (converted on Append, to nearest even), or int8: 16-bit rows
// halve the bytes a decode step reads, int8 rows quarter them.
//
// An I8 row is its elements' largest magnitude m over 127 (its scale s,
// a float32), then each element x as the integer nearest x·(127/m) in
// float32 (ties to even): an element is stored within ŝ = s·(1/2 + 2⁻¹⁶)
// of x, half a step and the float32 roundings. A key row is
// rotated first, by the orthonormal Walsh–Hadamard transform in blocks of
// the largest power of two dividing dk (none for an odd dk; WithoutRotation
// turns it off): that spreads a few large channels over the block, so
// that they no longer set the scale of the whole row; the engine rotates
// the queries the same way, and the scores are the dot products of the
// rows as given, up to rounding. Key returns the row rotated back (in
// float64, rounded once). A row with a NaN or an infinity is stored as NaN,
// as is a key row whose rotation overflows float32 (elements near the
// largest float32, which the rotation's sums may take past it). WithScales
// quantises with static scales instead, as ONNX Runtime's int8 cache does.
//
// Over an I8 cache a result is within the float32 bounds for the rows as
// stored, and the storage moves each score by at most
// δ_j = |scale|·Σ_c |(Hq)_c|·ŝ_j (ŝ_j of key row j, Hq the query rotated
// as the keys are, q itself without the rotation) and so each weight by a
// factor within e^(±2δ), δ = max δ_j, and the output by at most
// (e^(2δ)−1)·Σ_j w_j·(|v_j|+t̂_j) + e^(2δ)·Σ_j w_j·t̂_j, t̂_j of value row
// j. TestAttendCacheI8Bound checks it on every implementation,
// on keys with and without outlier channels.
//
// Each entry b has a position Pos(b), the number of rows ever appended
// minus those truncated: the absolute position of its next row, as masks
// and ALiBi count it. It holds the last Len(b) of those rows, positions
// Pos(b)−Len(b) to Pos(b)−1. Without WithRing, Len(b) = Pos(b) ≤ capacity
// and the rows sit at physical rows 0 to Len(b)−1. With WithRing, the row
// of position p sits at physical row p mod capacity, Len(b) =
// min(Pos(b), capacity) unless rows were truncated, and Start(b) is the
// physical row of the oldest.
//
// Storage: the rows of (b, h) are contiguous, capacity·dk (capacity·dv)
// elements, physical row r at offset r·dk (r·dv). A KVCache is not safe
// for concurrent use; distinct entries may be appended to from different
// goroutines.
type KVCache struct {
	typ                          KVType
	ring, rotate                 bool
	external                     bool // rows in the caller's slices (WithStorage16)
	batch, heads, capacity       int
	dk, dv                       int
	rk, rv                       int       // stored elements a row: dk and dv, and an I8 row's scale
	k32, v32                     []float32 // typ F32
	k16, v16                     []uint16  // typ F16 or BF16
	k8, v8                       []int8    // typ I8
	rot                          []float32 // typ I8 with rotate: dk floats of each entry's, for Append
	ks, vs                       []float32 // typ I8 WithScales: the static scales, else nil
	rope                         []float32 // dk floats of each entry's, for AppendRotary
	pos, n                       []int     // per entry: Pos and Len
	headK, headV, entryK, entryV int       // strides in elements
}

// NewKVCache returns an empty cache of batch entries, each with kvHeads
// heads of capacity rows. Negative sizes and an unknown type are
// ErrArgument, as is a ring of capacity 0; a cache whose elements could
// not be allocated (their byte count does not fit in an int or in the
// heap a Go program can have) is ErrArgument too, before any allocation.
func NewKVCache(batch, kvHeads, capacity, dk, dv int, typ KVType, opts ...KVCacheOption) (*KVCache, error) {
	const op = "NewKVCache"
	if batch < 0 || kvHeads < 0 || capacity < 0 || dk < 0 || dv < 0 {
		return nil, argErr(op, "negative size: batch %d, kvHeads %d, capacity %d, dk %d, dv %d", batch, kvHeads, capacity, dk, dv)
	}
	if typ.Size() == 0 {
		return nil, argErr(op, "unknown type %v", typ)
	}
	var o KVCacheOption
	for _, opt := range opts {
		o.ring = o.ring || opt.ring
		o.plain = o.plain || opt.plain
		if opt.scales {
			o.scales, o.ks, o.vs = true, opt.ks, opt.vs
		}
		if opt.storage {
			o.storage, o.k16, o.v16 = true, opt.k16, opt.v16
		}
	}
	if o.scales {
		if err := checkScales(op, typ, kvHeads, dk, dv, o); err != nil {
			return nil, err
		}
	}
	if o.ring && capacity == 0 {
		return nil, argErr(op, "a ring needs a capacity of at least 1 row")
	}
	rk, rv := dk+typ.rowExtra(), dv+typ.rowExtra()
	rows, ok := kvElems(batch, kvHeads, capacity)
	nk, okK := kvElems(rows, rk, 1)
	nv, okV := kvElems(rows, rv, 1)
	// Each entry also keeps a position and a length (2·batch ints, as
	// many bytes as 4·batch floats) and dk floats of scratch.
	nr, okR := kvElems(batch, dk, 1)
	if !ok || !okK || !okV || !okR || nk > maxFloats-nv || nr > maxFloats-nk-nv || batch > (maxFloats-nk-nv-nr)/4 {
		return nil, argErr(op, "%d×%d×%d rows of %d+%d elements are too many to allocate", batch, kvHeads, capacity, dk, dv)
	}
	if o.storage {
		if err := checkStorage(op, typ, nk, nv, o); err != nil {
			return nil, err
		}
	}
	c := &KVCache{
		typ: typ, ring: o.ring, external: o.storage, batch: batch, heads: kvHeads, capacity: capacity, dk: dk, dv: dv, rk: rk, rv: rv,
		pos: make([]int, batch), n: make([]int, batch), rope: make([]float32, batch*dk),
		headK: capacity * rk, headV: capacity * rv,
		entryK: kvHeads * capacity * rk, entryV: kvHeads * capacity * rv,
	}
	switch typ {
	case F32:
		c.k32, c.v32 = make([]float32, nk), make([]float32, nv)
	case I8:
		c.k8, c.v8 = make([]int8, nk), make([]int8, nv)
		c.rotate = !o.plain && dk&-dk > 1
		if o.scales {
			c.ks = append(make([]float32, 0, len(o.ks)), o.ks...)
			c.vs = append(make([]float32, 0, len(o.vs)), o.vs...)
			c.rotate = false
		}
		if c.rotate {
			// Two rows an entry: the scratch of kernel.QuantRowsI8.
			c.rot = make([]float32, 2*batch*dk)
		}
	default:
		if o.storage {
			c.k16, c.v16 = o.k16[:nk:nk], o.v16[:nv:nv]
		} else {
			c.k16, c.v16 = make([]uint16, nk), make([]uint16, nv)
		}
	}
	return c, nil
}

// kvElems returns a·b·c for sizes at least 0, and false if the product
// exceeds maxFloats (so twice or four times it is a byte count that fits).
func kvElems(a, b, c int) (int, bool) {
	ab, ok := floatsFor(a, b)
	if !ok {
		return 0, false
	}
	return floatsFor(ab, c)
}

// Type returns the element type the rows are stored in.
func (c *KVCache) Type() KVType { return c.typ }

// Rotated reports whether an I8 cache stores its key rows rotated (see
// KVCache): false for the other types and WithoutRotation.
func (c *KVCache) Rotated() bool { return c.rotate }

// Ring reports whether the cache was made WithRing.
func (c *KVCache) Ring() bool { return c.ring }

// Shape returns the sizes the cache was made with.
func (c *KVCache) Shape() (batch, kvHeads, capacity, dk, dv int) {
	return c.batch, c.heads, c.capacity, c.dk, c.dv
}

// Len returns the number of rows entry b holds. It panics if b is out of
// range.
func (c *KVCache) Len(b int) int { return c.n[b] }

// Pos returns the absolute position of entry b's next row: the rows ever
// appended to it minus those truncated. It panics if b is out of range.
func (c *KVCache) Pos(b int) int { return c.pos[b] }

// Start returns the physical row of entry b's oldest held row: 0 without
// WithRing, (Pos(b)−Len(b)) mod capacity with it. The held rows run from
// there, wrapping at the capacity.
func (c *KVCache) Start(b int) int {
	if c.capacity == 0 {
		return 0
	}
	return (c.pos[b] - c.n[b]) % c.capacity
}

// Reset empties entry b: Len and Pos become 0, as for a new sequence. It
// panics if b is out of range.
func (c *KVCache) Reset(b int) { c.pos[b], c.n[b] = 0, 0 }
