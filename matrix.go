package attention

import "math"

// Matrix is a row-major view of a caller's float32 slice, which the engine
// only reads. NewMatrix makes one whose rows are packed back to back;
// NewMatrixStrided one whose rows start stride elements apart, padded
// (stride > cols), so a Matrix can view part of a larger buffer without
// copying. Element (i, j) is data[i*stride+j] of the slice it was made
// from. Rows, Cols and Stride report the shape; At returns one element and
// Row one row, a slice aliasing the data. The zero Matrix is a valid 0×0
// matrix.
type Matrix struct {
	rows, cols, stride int
	data               []float32 // exactly the reach of the view: nil if it has no element
}

// NewMatrix returns a rows×cols view of data with rows packed back to back
// (stride = cols). data must hold at least rows*cols elements.
func NewMatrix(rows, cols int, data []float32) (Matrix, error) {
	return NewMatrixStrided(rows, cols, cols, data)
}

// NewMatrixStrided returns a rows×cols view of data whose row i starts at
// data[i*stride]. It needs stride >= cols and
// len(data) >= (rows-1)*stride + cols, the reach of the last element; the
// last row need not be padded. The reach is computed without overflow: one
// that does not fit in an int is an error wrapping ErrArgument.
//
// A view with no element (rows or cols 0) needs no data and applies no
// stride: it is stored packed (Stride returns cols), every row of a
// zero-width view is the empty slice, and any number of rows is allowed,
// since nothing backs them. The engine derives no work or memory from the
// rows of such a view.
func NewMatrixStrided(rows, cols, stride int, data []float32) (Matrix, error) {
	const op = "NewMatrix"
	if rows < 0 || cols < 0 {
		return Matrix{}, argErr(op, "negative dimensions %d×%d", rows, cols)
	}
	if stride < cols {
		return Matrix{}, shapeErr(op, "stride", stride, cols, "at least the column count")
	}
	if rows == 0 || cols == 0 {
		return Matrix{rows: rows, cols: cols, stride: cols}, nil
	}
	need, ok := reach(cols, [3]int{rows, 1, 1}, [3]int{stride, 0, 0})
	if !ok || need > math.MaxInt {
		return Matrix{}, argErr(op, "%d rows of stride %d overflow int", rows, stride)
	}
	if uint64(len(data)) < need {
		return Matrix{}, shapeErr(op, "len(data)", len(data), int(need), "(rows-1)*stride + cols")
	}
	return Matrix{rows: rows, cols: cols, stride: stride, data: data[:need:need]}, nil
}

// Rows returns the number of rows.
func (m Matrix) Rows() int { return m.rows }

// Cols returns the number of columns.
func (m Matrix) Cols() int { return m.cols }

// Stride returns the distance between the starts of consecutive rows
// (Cols for a view with no element).
func (m Matrix) Stride() int { return m.stride }

// Row returns row i as a slice of length Cols that aliases the data.
// It panics if i is out of range.
func (m Matrix) Row(i int) []float32 {
	if i < 0 || i >= m.rows {
		panic("attention: Matrix.Row: index out of range")
	}
	// A zero-width view has stride 0: every row is data[0:0].
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

// rowRange returns a view of rows [i0, i1).
func (m Matrix) rowRange(i0, i1 int) Matrix {
	if i0 == i1 || m.cols == 0 {
		return Matrix{rows: i1 - i0, cols: m.cols, stride: m.cols}
	}
	return Matrix{rows: i1 - i0, cols: m.cols, stride: m.stride, data: m.data[i0*m.stride : (i1-1)*m.stride+m.cols]}
}

// colsFrom returns a view of columns [j, j+n) of every row.
func (m Matrix) colsFrom(j, n int) Matrix {
	if m.rows == 0 || n == 0 {
		return Matrix{rows: m.rows, cols: n, stride: n}
	}
	need := (m.rows-1)*m.stride + n
	return Matrix{rows: m.rows, cols: n, stride: m.stride, data: m.data[j : j+need]}
}

// meets reports whether x shares an element with the view: a slice in the
// padding between rows meets no row. It costs a few comparisons, and a
// division only when x lies within the span of a padded view.
func (m *Matrix) meets(x []float32) bool {
	if !overlaps(x, m.data) {
		return false
	}
	if m.stride == m.cols {
		return true // no padding: the span is all elements
	}
	// Byte offsets from the first row; x starts at or after it, or it
	// covers row 0's first element.
	base, x0 := addr(m.data), addr(x)
	if x0 <= base {
		return true
	}
	s, c := uintptr(m.stride)*4, uintptr(m.cols)*4
	off := x0 - base
	i := off / s
	if off-i*s < c {
		return true // x starts inside row i
	}
	// x starts in the padding after row i: it meets row i+1 if it reaches
	// it (the span ends with a row, so row i+1 exists).
	return base+(i+1)*s < x0+uintptr(len(x))*4
}
