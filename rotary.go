package attention

import (
	"fmt"
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// RotaryLayout says which elements of a row a rotary embedding turns
// together.
type RotaryLayout uint8

const (
	// RotateHalf pairs element i with element i + r/2 (r the rotary
	// width): GPT-NeoX, Llama and most models since; ONNX's
	// RotaryEmbedding with interleaved = 0.
	RotateHalf RotaryLayout = iota
	// RotateInterleaved pairs element 2i with element 2i+1: GPT-J;
	// ONNX's interleaved = 1.
	RotateInterleaved
)

// String returns "half" or "interleaved".
func (l RotaryLayout) String() string {
	if l == RotateInterleaved {
		return "interleaved"
	}
	if l == RotateHalf {
		return "half"
	}
	return fmt.Sprintf("RotaryLayout(%d)", uint8(l))
}

// Rotary is a rotary position embedding (RoPE): the cosines and sines of
// every position up to a limit, by which Apply turns the first Dim
// elements of query and key rows in place, and KVCache.AppendRotary the
// keys it stores. Pair i of a row at position p turns by the angle p·ω_i:
//
//	y₁ = cos(p·ω_i)·x₁ − sin(p·ω_i)·x₂,  y₂ = sin(p·ω_i)·x₁ + cos(p·ω_i)·x₂
//
// each product and each sum rounded to float32 once (ONNX's arithmetic,
// bit for bit; no fused multiply-add). Elements from Dim on are left as
// they are (partial rotation). A Rotary is read-only after it is made and
// may be used by any number of goroutines at once.
type Rotary struct {
	dim, positions int
	layout         RotaryLayout
	cos, sin       []float32 // [positions][dim/2]
}

// A RotaryOption configures NewRotary; WithLlama3Scaling makes one.
type RotaryOption struct {
	llama3                  bool
	factor, low, high, orig float64
}

// WithLlama3Scaling stretches the long wavelengths as Llama 3.1 does
// (rope_type "llama3"): frequencies whose wavelength 2π/ω is above
// originalPositions/lowFreqFactor are divided by factor, those below
// originalPositions/highFreqFactor kept, and those between blended
// smoothly. Llama 3.1: factor 8, lowFreqFactor 1, highFreqFactor 4,
// originalPositions 8192.
func WithLlama3Scaling(factor, lowFreqFactor, highFreqFactor float64, originalPositions int) RotaryOption {
	return RotaryOption{llama3: true, factor: factor, low: lowFreqFactor, high: highFreqFactor, orig: float64(originalPositions)}
}

// NewRotary returns the rotary embedding of width dim (even, the elements
// of a row it turns) for positions 0 to positions−1, with frequencies
// ω_i = theta^(−2i/dim) (theta the base: 10000 in most models, 500000 in
// Llama 3). Each cosine and sine is computed in float64 and rounded once
// (a model that computes its table in float32 differs in the last bits:
// NewRotaryTable takes that table as it is). The table takes
// positions·dim·4 bytes. An odd or non-positive dim, positions < 1, a
// theta that is not finite and greater than 1, or scaling factors out of
// their domain are ErrArgument.
func NewRotary(dim, positions int, theta float64, layout RotaryLayout, opts ...RotaryOption) (*Rotary, error) {
	const op = "NewRotary"
	if err := checkRotary(op, dim, positions, layout); err != nil {
		return nil, err
	}
	if !(theta > 1 && theta <= math.MaxFloat64) {
		return nil, argErr(op, "theta = %v: want a finite base above 1", theta)
	}
	var o RotaryOption
	for _, opt := range opts {
		if opt.llama3 {
			o = opt
		}
	}
	if o.llama3 && !(o.factor >= 1 && o.high > o.low && o.low > 0 && o.orig > 0 && o.factor <= math.MaxFloat64 && o.high <= math.MaxFloat64) {
		return nil, argErr(op, "llama3 scaling factor %v, low %v, high %v, original positions %v: want factor ≥ 1 and 0 < low < high", o.factor, o.low, o.high, o.orig)
	}
	half := dim / 2
	if _, ok := floatsFor(positions, dim); !ok {
		return nil, argErr(op, "%d positions of %d: too large a table", positions, dim)
	}
	freq := make([]float64, half)
	for i := range freq {
		w := math.Pow(theta, -float64(2*i)/float64(dim))
		if o.llama3 {
			w = llama3Frequency(w, o)
		}
		freq[i] = w
	}
	r := &Rotary{dim: dim, positions: positions, layout: layout,
		cos: make([]float32, positions*half), sin: make([]float32, positions*half)}
	for p := range positions {
		for i, w := range freq {
			s, c := math.Sincos(float64(p) * w)
			r.cos[p*half+i], r.sin[p*half+i] = float32(c), float32(s)
		}
	}
	return r, nil
}

// llama3Frequency is frequency w after Llama 3.1's scaling.
func llama3Frequency(w float64, o RotaryOption) float64 {
	wavelen := 2 * math.Pi / w
	switch {
	case wavelen < o.orig/o.high:
		return w
	case wavelen > o.orig/o.low:
		return w / o.factor
	}
	smooth := (o.orig/wavelen - o.low) / (o.high - o.low)
	return (1-smooth)*w/o.factor + smooth*w
}

// NewRotaryTable returns the rotary embedding of width dim whose cosines
// and sines are the caller's: cos and sin laid out [positions][dim/2], as
// ONNX's RotaryEmbedding and ONNX Runtime's GroupQueryAttention take them
// (cos_cache, sin_cache). The Rotary reads them in place, as a Memory
// reads its matrices: they must not change while it is used. Lengths that
// are not a whole number of positions, or differ, are ErrShape; an odd or
// non-positive dim ErrArgument.
func NewRotaryTable(cos, sin []float32, dim int, layout RotaryLayout) (*Rotary, error) {
	const op = "NewRotaryTable"
	if err := checkRotary(op, dim, 1, layout); err != nil {
		return nil, err
	}
	half := dim / 2
	if len(cos)%half != 0 || len(cos) == 0 {
		return nil, shapeErr(op, "len(cos)", len(cos), (len(cos)/half+1)*half, "positions·dim/2")
	}
	if len(sin) != len(cos) {
		return nil, shapeErr(op, "len(sin)", len(sin), len(cos), "len(cos)")
	}
	n := len(cos)
	return &Rotary{dim: dim, positions: n / half, layout: layout, cos: cos[:n:n], sin: sin[:n:n]}, nil
}

func checkRotary(op string, dim, positions int, layout RotaryLayout) error {
	switch {
	case dim <= 0 || dim%2 != 0:
		return argErr(op, "dim = %d: want an even width above 0", dim)
	case positions < 1:
		return argErr(op, "positions = %d: want at least 1", positions)
	case layout > RotateInterleaved:
		return argErr(op, "unknown layout %v", layout)
	}
	return nil
}

// Dim returns the number of elements of a row the embedding turns.
func (r *Rotary) Dim() int { return r.dim }

// Positions returns how many positions the table holds: 0 to Positions−1.
func (r *Rotary) Positions() int { return r.positions }

// Layout returns which elements the embedding pairs.
func (r *Rotary) Layout() RotaryLayout { return r.layout }

// Apply turns, in place, the first Dim elements of every row of x
// ([batch][heads][T][d], d ≥ Dim): row (b, h, t) by position
// pos[b·T+t], the same for every head. A decode step's query and key rows
// of one token share their position; prefill's rows are positions
// p0, p0+1, …. len(pos) other than batch·T, or d < Dim, is a *ShapeError;
// a position outside [0, Positions), or rows of x that share elements
// (which would turn twice), ErrArgument; every check comes before the
// first write. Apply does not allocate.
func (r *Rotary) Apply(x Tensor, pos []int) error {
	const op = "Rotary.Apply"
	if err := r.checkRows(op, &x); err != nil {
		return err
	}
	if want := elems(x.batch, x.rows); len(pos) != want {
		return shapeErr(op, "len(pos)", len(pos), want, "batch·T")
	}
	for i, p := range pos {
		if uint(p) >= uint(r.positions) {
			return argErr(op, "pos[%d] = %d outside the table's positions [0, %d)", i, p, r.positions)
		}
	}
	if x.empty() {
		return nil
	}
	// One kernel call turns a (batch entry, position)'s rows of every head,
	// a head stride apart.
	for b := range x.batch {
		for t := range x.rows {
			cos, sin := r.angles(pos[b*x.rows+t])
			r.kernel(x.data[b*x.bs+t*x.rs:], x.hs, x.heads, cos, sin)
		}
	}
	return nil
}

// checkRows checks that x's rows can be turned: at least Dim columns and
// no two rows sharing an element.
func (r *Rotary) checkRows(op string, x *Tensor) error {
	if x.cols < r.dim {
		return shapeErr(op, "x cols", x.cols, r.dim, "at least the rotary width")
	}
	oneRowEach := x.batch == 1 && x.rows == 1 && (x.heads == 1 || x.hs >= x.cols) // a decode step's rows
	if !oneRowEach && !x.empty() && !x.nestedRows() && !x.distinctRows() {
		return argErr(op, "x's rows share elements: each would be turned more than once")
	}
	return nil
}

// angles returns the cosines and sines of position p.
func (r *Rotary) angles(p int) (cos, sin []float32) {
	half := r.dim / 2
	return r.cos[p*half : (p+1)*half], r.sin[p*half : (p+1)*half]
}

// kernel runs the layout's kernel.
func (r *Rotary) kernel(x []float32, stride, rows int, cos, sin []float32) {
	if r.layout == RotateInterleaved {
		kernel.RotaryPairs(x, stride, rows, cos, sin)
	} else {
		kernel.RotaryHalf(x, stride, rows, cos, sin)
	}
}

// AppendRotary is Append with the key rows turned by r as they are
// stored: row i of the rows at position Pos(b)+i (its position in the
// sequence, as masks and ALiBi count it), each turned in scratch before it
// is converted, so that a decode step is turn the query, AppendRotary,
// attend, with no pass over the stored keys. The values are stored as
// given. A position past r's table, or r wider than dk, is an error (as
// are Append's), and changes nothing.
func (c *KVCache) AppendRotary(b int, k, v []float32, rows int, r *Rotary) error {
	const op = "KVCache.AppendRotary"
	if r == nil {
		return argErr(op, "nil Rotary")
	}
	if err := c.checkRowsLen(op, len(k), len(v), rows); err != nil {
		return err
	}
	if r.dim > c.dk {
		return shapeErr(op, "dk", c.dk, r.dim, "at least the rotary width")
	}
	if b >= 0 && b < c.batch && rows > 0 && c.pos[b] > r.positions-rows {
		return argErr(op, "positions %d to %d past the rotary table's %d", c.pos[b], c.pos[b]+rows-1, r.positions)
	}
	return c.appendRows(op, b, rows, func(h, i, ko, vo, n int) {
		tmp := c.rope[b*c.dk : (b+1)*c.dk]
		for j := range n {
			copy(tmp, k[(h*rows+i+j)*c.dk:][:c.dk])
			cos, sin := r.angles(c.pos[b] + i + j)
			r.kernel(tmp, 0, 1, cos, sin)
			c.putRows(b, h, ko+j*c.rk, vo+j*c.rv, tmp, v[(h*rows+i+j)*c.dv:][:c.dv])
		}
	})
}
