package attention

import (
	"math"
	"math/bits"
)

// Tensor is a strided view of a caller's float32 slice laid out as
// [batch][heads][rows][cols]. NewTensor makes a packed one;
// NewTensorStrided takes the batch, head and row strides, in elements
// (columns are contiguous), which let Q, K and V be views into a caller's
// projection output (for example one [batch][T][heads·d] buffer) without
// copies. Element (b, h, i, j) is
// data[b*batchStride + h*headStride + i*rowStride + j] of the slice it was
// made from. Shape and Strides report the view; At returns one element and
// Row one row, a slice aliasing the data. Batched reads the Tensors it is
// given as inputs and writes only those of BatchOutputs. The zero Tensor
// is a valid view with no element.
type Tensor struct {
	data                     []float32
	batch, heads, rows, cols int
	bs, hs, rs               int // strides in elements
}

// NewTensor returns a packed [batch][heads][rows][cols] view of data.
func NewTensor(batch, heads, rows, cols int, data []float32) (Tensor, error) {
	return NewTensorStrided(batch, heads, rows, cols, heads*rows*cols, rows*cols, cols, data)
}

// NewTensorStrided returns a view with explicit batch, head and row strides
// (in elements; columns are contiguous). With more than one row, the row
// stride must be at least cols. Input views may share memory with each
// other, since the engine never writes to Q, K or V; an output may not
// (see BatchOutputs).
//
// The reach of the last element, cols + Σ (dim−1)·stride, is computed with
// overflow checks and must not exceed len(data). A view with a zero-size
// dimension has no elements: its strides are irrelevant (only their signs
// are checked) and it holds no data, and the engine never derives work or
// memory from the other dimensions of such a view.
func NewTensorStrided(batch, heads, rows, cols, batchStride, headStride, rowStride int, data []float32) (Tensor, error) {
	const op = "NewTensor"
	if batch < 0 || heads < 0 || rows < 0 || cols < 0 || batchStride < 0 || headStride < 0 || rowStride < 0 {
		return Tensor{}, argErr(op, "negative shape or stride [%d %d %d %d] / (%d %d %d)", batch, heads, rows, cols, batchStride, headStride, rowStride)
	}
	if batch == 0 || heads == 0 || rows == 0 || cols == 0 {
		return Tensor{batch: batch, heads: heads, rows: rows, cols: cols}, nil
	}
	if rowStride < cols && rows > 1 {
		return Tensor{}, shapeErr(op, "row stride", rowStride, cols, "at least the column count")
	}
	// The last element must be in range. Its offset is computed in 64 bits
	// with the overflow checked, so no shape can wrap around to a small
	// reach (and the check compiles where int has 32 bits).
	last, ok := reach(cols, [3]int{batch, heads, rows}, [3]int{batchStride, headStride, rowStride})
	if !ok || last > uint64(len(data)) {
		return Tensor{}, shapeErr(op, "len(data)", len(data), int(min(last, math.MaxInt)), "reach of the last element")
	}
	return Tensor{data: data[:last:last], batch: batch, heads: heads, rows: rows, cols: cols, bs: batchStride, hs: headStride, rs: rowStride}, nil
}

// reach returns cols + Σ (dims[i]−1)·strides[i] for dims of at least 1 and
// non-negative strides, and false if the sum does not fit in 64 bits.
func reach(cols int, dims, strides [3]int) (uint64, bool) {
	total := uint64(cols)
	for i, n := range dims {
		hi, lo := bits.Mul64(uint64(n-1), uint64(strides[i]))
		var carry uint64
		total, carry = bits.Add64(total, lo, 0)
		if hi != 0 || carry != 0 {
			return math.MaxUint64, false
		}
	}
	return total, true
}

// Shape returns the four dimensions.
func (t Tensor) Shape() (batch, heads, rows, cols int) { return t.batch, t.heads, t.rows, t.cols }

// Strides returns the batch, head and row strides, in elements (all 0 for
// a view with no element, whose strides are irrelevant).
func (t Tensor) Strides() (batch, head, row int) { return t.bs, t.hs, t.rs }

// At returns element (b, h, i, j). It panics if an index is out of range.
func (t Tensor) At(b, h, i, j int) float32 {
	if j < 0 || j >= t.cols {
		panic("attention: Tensor.At: column out of range")
	}
	return t.Row(b, h, i)[j]
}

// Row returns row i of head h of batch entry b, aliasing the data.
func (t Tensor) Row(b, h, i int) []float32 {
	if b < 0 || b >= t.batch || h < 0 || h >= t.heads || i < 0 || i >= t.rows {
		panic("attention: Tensor.Row: index out of range")
	}
	o := b*t.bs + h*t.hs + i*t.rs
	return t.data[o : o+t.cols]
}

// rowsFrom returns the data from row i of (b, h) to the end of the head's
// last row, for the row kernels. It stops there, not at the end of the
// data, because the kernels prefetch ahead within the slices they get:
// past a head's rows may lie memory the view does not use, such as the
// unused capacity of the caller's own cache, never written and perhaps not
// backed by memory yet, where each prefetch would cost a page walk. A view
// without elements has zero strides, so this is nil[0:0].
func (t Tensor) rowsFrom(b, h, i int) []float32 {
	o := b*t.bs + h*t.hs
	return t.data[o+i*t.rs : max(o+i*t.rs, min(len(t.data), o+(t.rows-1)*t.rs+t.cols))]
}

// empty reports whether the view has no elements.
func (t Tensor) empty() bool { return len(t.data) == 0 }

// nestedRows reports, cheaply, whether t's rows are laid out in one of
// the two usual nestings, which keep them apart: heads inside batch
// entries and rows inside heads ([batch][heads][rows][cols], packed or
// padded), or heads inside rows ([batch][rows][heads][cols], a
// projection's output). False says nothing; distinctRows decides.
func (t Tensor) nestedRows() bool {
	apart := func(n, stride, extent int) bool { return n == 1 || stride >= extent }
	c := t.cols
	r := (t.rows-1)*t.rs + c
	h := (t.heads-1)*t.hs + c
	return apart(t.rows, t.rs, c) && apart(t.heads, t.hs, r) && apart(t.batch, t.bs, (t.heads-1)*t.hs+r) ||
		apart(t.heads, t.hs, c) && apart(t.rows, t.rs, h) && apart(t.batch, t.bs, (t.rows-1)*t.rs+h)
}

// distinctRows reports whether no two elements of the view share memory:
// ordered by stride, each dimension must step past everything the
// dimensions inside it cover (a sufficient test, exact for the layouts of
// permuted dimensions). Outputs need it: two tasks writing one element
// would race.
func (t Tensor) distinctRows() bool {
	if t.empty() {
		return true
	}
	dims := [3][2]int{{t.batch, t.bs}, {t.heads, t.hs}, {t.rows, t.rs}}
	// Three elements: a fixed sorting network by stride.
	for _, p := range [3][2]int{{0, 1}, {1, 2}, {0, 1}} {
		if dims[p[1]][1] < dims[p[0]][1] {
			dims[p[0]], dims[p[1]] = dims[p[1]], dims[p[0]]
		}
	}
	extent := t.cols // elements spanned by the dimensions inside, from the first
	for _, d := range dims {
		if d[0] == 1 {
			continue
		}
		if d[1] < extent {
			return false
		}
		extent = d[1]*(d[0]-1) + extent // at most the reach, which fits
	}
	return true
}
