package onnxattn

import (
	"math"
	"math/bits"
)

// Shapes come from model files, which a service may not control: every
// product of dimensions is computed here with its overflow checked.

// mulInt returns a·b for a, b >= 0, and false if it does not fit in an int.
func mulInt(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt {
		return math.MaxInt, false
	}
	return int(lo), true
}

// addInt returns a+b for a, b >= 0, and false if it does not fit in an int.
func addInt(a, b int) (int, bool) {
	if a > math.MaxInt-b {
		return math.MaxInt, false
	}
	return a + b, true
}

// extent returns the product of the nonzero dimensions, and false if one
// is negative or the product does not fit in an int. For a tensor without
// zero dimensions it is the element count; for any tensor it bounds every
// stride, so a shape whose extent fits is safe to index and to view.
func extent(dims ...int) (int, bool) {
	n := 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		if d > 0 {
			var ok bool
			if n, ok = mulInt(n, d); !ok {
				return n, false
			}
		}
	}
	return n, true
}

// count returns the number of elements of the shape dims, exactly (0 when
// a dimension is 0, whatever the others), and false if a dimension is
// negative or the count does not fit in an int.
func count(dims ...int) (int, bool) {
	n, ok := 1, true
	for _, d := range dims {
		switch {
		case d < 0:
			return 0, false
		case ok:
			n, ok = mulInt(n, d)
		}
	}
	for _, d := range dims {
		if d == 0 {
			return 0, true
		}
	}
	return n, ok
}
