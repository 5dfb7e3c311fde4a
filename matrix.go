package attention

// Matrix is a read-only, row-major view of float32 data: element (i, j) is
// Data[i*Stride+j]. Rows may be padded (Stride > Cols), so a Matrix can view
// part of a caller's larger buffer without copying. The zero Matrix is a
// valid 0×0 matrix.
type Matrix struct {
	rows, cols, stride int
	data               []float32
}

// NewMatrix returns a rows×cols view of data with rows packed back to back
// (stride = cols). data must hold at least rows*cols elements.
func NewMatrix(rows, cols int, data []float32) (Matrix, error) {
	return NewMatrixStride(rows, cols, cols, data)
}

// NewMatrixStride returns a rows×cols view of data whose row i starts at
// data[i*stride]. It needs stride >= cols and
// len(data) >= (rows-1)*stride + cols; the last row need not be padded.
func NewMatrixStride(rows, cols, stride int, data []float32) (Matrix, error) {
	const op = "NewMatrix"
	if rows < 0 || cols < 0 {
		return Matrix{}, argErr(op, "negative dimensions %d×%d", rows, cols)
	}
	if stride < cols {
		return Matrix{}, shapeErr(op, "stride", stride, cols, "at least the column count")
	}
	need := 0
	if rows > 0 && cols > 0 {
		// Guard the multiplication: a huge stride must be an error, not a wrap.
		if stride > (int(^uint(0)>>1)-cols)/rows {
			return Matrix{}, argErr(op, "%d rows of stride %d overflow int", rows, stride)
		}
		need = (rows-1)*stride + cols
	}
	if len(data) < need {
		return Matrix{}, shapeErr(op, "len(data)", len(data), need, "(rows-1)*stride + cols")
	}
	return Matrix{rows: rows, cols: cols, stride: stride, data: data[:need:need]}, nil
}

// Rows returns the number of rows.
func (m Matrix) Rows() int { return m.rows }

// Cols returns the number of columns.
func (m Matrix) Cols() int { return m.cols }

// Stride returns the distance between the starts of consecutive rows.
func (m Matrix) Stride() int { return m.stride }

// Row returns row i as a slice of length Cols that aliases the data.
// It panics if i is out of range.
func (m Matrix) Row(i int) []float32 {
	if i < 0 || i >= m.rows {
		panic("attention: Matrix.Row: index out of range")
	}
	return m.data[i*m.stride : i*m.stride+m.cols]
}

// At returns element (i, j). It panics if either index is out of range.
func (m Matrix) At(i, j int) float32 {
	if j < 0 || j >= m.cols {
		panic("attention: Matrix.At: column out of range")
	}
	return m.Row(i)[j]
}

// rowsFrom returns the data from the start of row i on, for the row kernels,
// which read rows [i, i+n) at m.stride.
func (m Matrix) rowsFrom(i int) []float32 {
	if m.cols == 0 {
		return nil
	}
	return m.data[i*m.stride:]
}

// colsFrom returns a view of columns [j, j+n) of every row.
func (m Matrix) colsFrom(j, n int) Matrix {
	if m.rows == 0 || n == 0 {
		return Matrix{rows: m.rows, cols: n, stride: m.stride}
	}
	need := (m.rows-1)*m.stride + n
	return Matrix{rows: m.rows, cols: n, stride: m.stride, data: m.data[j : j+need]}
}
