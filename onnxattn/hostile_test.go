package onnxattn

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"testing"

	"github.com/glancelab/attention"
)

// Dimensions whose products wrap an int around to 0, written so that they
// compile where int has 32 bits: wrapDim·4 and halfDim·halfDim are 2^64
// (2^32 on 32-bit platforms).
const (
	wrapDim = 1 << (bits.UintSize - 2)
	halfDim = 1 << (bits.UintSize / 2)
)

// Len counts the elements exactly or says -1: a product that overflows
// must not wrap around to a small count.
func TestLenOverflow(t *testing.T) {
	for _, c := range []struct {
		shape []int
		want  int
	}{
		{nil, 1},
		{[]int{3, 0, 5}, 0},
		{[]int{2, 3, 4}, 24},
		{[]int{math.MaxInt}, math.MaxInt},
		{[]int{1, 1, wrapDim, 4}, -1},
		{[]int{halfDim, halfDim}, -1},
		{[]int{wrapDim, 4, 0}, 0},
		{[]int{math.MaxInt, 2}, -1},
		{[]int{3, -1}, -1},
		{[]int{0, -1}, -1},
	} {
		if got := NewFloat32(nil, c.shape...).Len(); got != c.want {
			t.Errorf("Len of %v = %d, want %d", c.shape, got, c.want)
		}
	}
}

// runHostile runs one call and returns its error; a panic fails the test
// with the call named.
func runHostile(t *testing.T, name string, a Attributes, in Inputs, want Want) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: panic: %v", name, p)
		}
	}()
	_, err = Run(nil, a, in, want)
	return err
}

// wantShapeError fails unless err is a *ShapeError naming input.
func wantShapeError(t *testing.T, name string, err error, input string) {
	t.Helper()
	var se *ShapeError
	if !errors.As(err, &se) || !errors.Is(err, attention.ErrShape) {
		t.Errorf("%s: err = %v (%T), want a *onnxattn.ShapeError", name, err, err)
		return
	}
	if se.Input != input {
		t.Errorf("%s: %v names %s, want %s", name, err, se.Input, input)
	}
}

// A past_key whose element count wraps around to 0 is refused, not
// concatenated.
func TestPastKeyLengthOverflow(t *testing.T) {
	for _, want := range []Want{{}, {Present: true}, {Present: true, QKMatmulOutput: true}} {
		in := Inputs{Q: zeros(1, 1, 1, 4), K: zeros(1, 1, 1, 4), V: zeros(1, 1, 1, 4),
			PastKey: NewFloat32(nil, 1, 1, wrapDim, 4), PastValue: NewFloat32(nil, 1, 1, wrapDim, 4)}
		err := runHostile(t, fmt.Sprint(want), Attributes{}, in, want)
		wantShapeError(t, fmt.Sprint(want), err, "past_key")
	}
}
