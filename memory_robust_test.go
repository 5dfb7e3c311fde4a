package attention

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// noPanic runs f and fails the test, instead of crashing it, if f panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", what, r)
		}
	}()
	f()
}

// A view with no elements applies no stride: every row of a zero-width
// view is the empty slice, whatever stride it was made with and however
// many rows it has.
func TestMatrixZeroSizeViews(t *testing.T) {
	data := make([]float32, 24)
	for _, c := range []struct{ rows, cols, stride int }{
		{3, 0, 5}, {3, 0, 0}, {0, 4, 7}, {0, 0, 9},
		{math.MaxInt, 0, 1}, {math.MaxInt, 0, math.MaxInt},
	} {
		what := fmt.Sprintf("NewMatrixStride(%d, %d, %d)", c.rows, c.cols, c.stride)
		noPanic(t, what, func() {
			m, err := NewMatrixStride(c.rows, c.cols, c.stride, data)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, i := range []int{0, 1, c.rows / 2, c.rows - 1} {
				if i < 0 || i >= c.rows {
					continue
				}
				if r := m.Row(i); len(r) != 0 {
					t.Fatalf("%s: Row(%d) has %d elements", what, i, len(r))
				}
				if r := m.rowsFrom(i); len(r) != 0 {
					t.Fatalf("%s: rowsFrom(%d) has %d elements", what, i, len(r))
				}
			}
			if m.Rows() != c.rows || m.Cols() != c.cols || m.Stride() != c.cols {
				t.Fatalf("%s: got %d×%d stride %d, want %d×%d stride %d (packed: no element, no stride)",
					what, m.Rows(), m.Cols(), m.Stride(), c.rows, c.cols, c.cols)
			}
		})
	}
	// A zero-width column range of a padded matrix is such a view too.
	m, _ := NewMatrixStride(3, 4, 7, make([]float32, 18))
	for _, j := range []int{0, 2, 4} {
		noPanic(t, fmt.Sprintf("colsFrom(%d, 0)", j), func() {
			c := m.colsFrom(j, 0)
			for i := range c.Rows() {
				if len(c.Row(i)) != 0 {
					t.Fatalf("colsFrom(%d, 0).Row(%d) is not empty", j, i)
				}
			}
		})
	}
	// The reach of a view is checked without wrapping: a single row
	// needs only its columns, however large the stride.
	if v, err := NewMatrixStride(1, 2, math.MaxInt, make([]float32, 2)); err != nil || v.Row(0)[1] != 0 {
		t.Errorf("one row of stride MaxInt: %v", err)
	}
	if _, err := NewMatrixStride(3, 2, math.MaxInt/2, make([]float32, 8)); !errors.Is(err, ErrArgument) {
		t.Errorf("three rows of stride MaxInt/2: err = %v, want ErrArgument (overflow)", err)
	}
}
