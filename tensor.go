package attention

import (
	"math"
	"math/bits"
)

// Tensor is a read-only strided view of float32 data laid out as
// [batch][heads][rows][cols]: element (b, h, i, j) is
// Data[b*BatchStride + h*HeadStride + i*RowStride + j]. Strides let Q, K and
// V be views into a caller's projection output (for example one
// [batch][T][heads·d] buffer) without copies.
type Tensor struct {
	data                     []float32
	batch, heads, rows, cols int
	bs, hs, rs               int // strides in elements
}

// NewTensor returns a packed [batch][heads][rows][cols] view of data.
func NewTensor(data []float32, batch, heads, rows, cols int) (Tensor, error) {
	return NewTensorStrided(data, batch, heads, rows, cols, heads*rows*cols, rows*cols, cols)
}

// NewTensorStrided returns a view with explicit batch, head and row strides
// (in elements; columns are contiguous). Views may overlap only if they are
// read-only; the engine never writes to Q, K or V.
func NewTensorStrided(data []float32, batch, heads, rows, cols, batchStride, headStride, rowStride int) (Tensor, error) {
	const op = "NewTensor"
	if batch < 0 || heads < 0 || rows < 0 || cols < 0 || batchStride < 0 || headStride < 0 || rowStride < 0 {
		return Tensor{}, argErr(op, "negative shape or stride [%d %d %d %d] / (%d %d %d)", batch, heads, rows, cols, batchStride, headStride, rowStride)
	}
	if rowStride < cols && rows > 1 {
		return Tensor{}, shapeErr(op, "row stride", rowStride, cols, "at least the column count")
	}
	t := Tensor{data: data, batch: batch, heads: heads, rows: rows, cols: cols, bs: batchStride, hs: headStride, rs: rowStride}
	if batch == 0 || heads == 0 || rows == 0 || cols == 0 {
		t.data = nil
		return t, nil
	}
	// The last element must be in range. Its offset is computed in 64 bits
	// with the overflow checked, so no shape can wrap around to a small
	// reach (and the check compiles where int has 32 bits).
	last, ok := reach(cols, [3]int{batch, heads, rows}, [3]int{batchStride, headStride, rowStride})
	if !ok || last > uint64(len(data)) {
		return Tensor{}, shapeErr(op, "len(data)", len(data), int(min(last, math.MaxInt)), "reach of the last element")
	}
	return t, nil
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

// Row returns row i of head h of batch entry b, aliasing the data.
func (t Tensor) Row(b, h, i int) []float32 {
	if b < 0 || b >= t.batch || h < 0 || h >= t.heads || i < 0 || i >= t.rows {
		panic("attention: Tensor.Row: index out of range")
	}
	o := b*t.bs + h*t.hs + i*t.rs
	return t.data[o : o+t.cols]
}

// rowsFrom returns the data from row i of (b, h) on, for the row kernels.
func (t Tensor) rowsFrom(b, h, i int) []float32 {
	if t.cols == 0 {
		return nil
	}
	return t.data[b*t.bs+h*t.hs+i*t.rs:]
}
