package attention

import "fmt"

// KVType is the element type a KVCache stores its rows in.
type KVType uint8

const (
	F32  KVType = iota // float32: rows stored as given
	F16                // IEEE 754 binary16, rounded to nearest even; overflow to ±Inf
	BF16               // bfloat16, rounded to nearest even
)

// String returns "f32", "f16" or "bf16".
func (t KVType) String() string {
	switch t {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("KVType(%d)", uint8(t))
}

// Size returns the bytes an element takes, 0 for an unknown type.
func (t KVType) Size() int {
	switch t {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	return 0
}

// A KVCacheOption configures NewKVCache; WithRing makes one. The zero
// KVCacheOption changes nothing.
type KVCacheOption struct {
	ring bool
}

// WithRing makes the cache a ring of capacity rows per entry, for models
// with a sliding window of that many keys: an Append past the capacity
// overwrites the oldest rows instead of failing.
func WithRing() KVCacheOption { return KVCacheOption{ring: true} }

// KVCache holds the keys and values of past tokens for incremental
// decoding: per batch entry and KV head, up to a capacity of key rows (dk
// elements) and value rows (dv elements), stored as float32, binary16 or
// bfloat16 (converted on Append, to nearest even): 16-bit rows halve the
// bytes a decode step reads.
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
	ring                         bool
	batch, heads, capacity       int
	dk, dv                       int
	k32, v32                     []float32 // typ F32
	k16, v16                     []uint16  // typ F16 or BF16
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
	}
	if o.ring && capacity == 0 {
		return nil, argErr(op, "a ring needs a capacity of at least 1 row")
	}
	rows, ok := kvElems(batch, kvHeads, capacity)
	nk, okK := kvElems(rows, dk, 1)
	nv, okV := kvElems(rows, dv, 1)
	// Each entry also keeps a position and a length: 2·batch ints, as
	// many bytes as 4·batch floats.
	if !ok || !okK || !okV || nk > maxFloats-nv || batch > (maxFloats-nk-nv)/4 {
		return nil, argErr(op, "%d×%d×%d rows of %d+%d elements are too many to allocate", batch, kvHeads, capacity, dk, dv)
	}
	c := &KVCache{
		typ: typ, ring: o.ring, batch: batch, heads: kvHeads, capacity: capacity, dk: dk, dv: dv,
		pos: make([]int, batch), n: make([]int, batch),
		headK: capacity * dk, headV: capacity * dv,
		entryK: kvHeads * capacity * dk, entryV: kvHeads * capacity * dv,
	}
	if typ == F32 {
		c.k32, c.v32 = make([]float32, nk), make([]float32, nv)
	} else {
		c.k16, c.v16 = make([]uint16, nk), make([]uint16, nv)
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
