package onnxattn

import (
	"fmt"

	"github.com/glancelab/attention"
)

// ShapeError reports an input whose shape does not fit the operator or the
// other inputs. It names the input, its shape, and what was wanted; it
// matches attention.ErrShape under errors.Is.
type ShapeError struct {
	Input string // "Q", "attn_mask", "past_key", ...; "cache" for RunCache's past
	Shape []int  // the input's shape
	Want  string // what was required, e.g. "rank 3 or 4"
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("onnxattn: %s has shape %v, want %s", e.Input, e.Shape, e.Want)
}

// Is reports whether target is attention.ErrShape.
func (e *ShapeError) Is(target error) bool { return target == attention.ErrShape }

func shapeErr(input string, shape []int, format string, args ...any) error {
	return &ShapeError{Input: input, Shape: append([]int(nil), shape...), Want: fmt.Sprintf(format, args...)}
}

// argErr reports an attribute or value outside its domain; it wraps
// attention.ErrArgument.
func argErr(format string, args ...any) error {
	return fmt.Errorf("%w: onnxattn: %s", attention.ErrArgument, fmt.Sprintf(format, args...))
}
