package attention

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
	// The last element must be in range; strides are bounded so the
	// arithmetic cannot overflow for any slice Go can allocate.
	const big = 1 << 40
	if batch > big || heads > big || rows > big || cols > big || batchStride > big || headStride > big || rowStride > big {
		return Tensor{}, argErr(op, "shape or stride beyond 2^40")
	}
	last := (batch-1)*batchStride + (heads-1)*headStride + (rows-1)*rowStride + cols
	if len(data) < last {
		return Tensor{}, shapeErr(op, "len(data)", len(data), last, "reach of the last element")
	}
	return t, nil
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
