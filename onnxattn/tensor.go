package onnxattn

import (
	"fmt"
	"math"
	"slices"

	"github.com/glancelab/attention/internal/kernel"
)

// DType is the element type of a Tensor.
type DType int

// The element types the operator reads and writes.
const (
	Undefined DType = iota
	Float32
	Float16
	Bool
	Int64
	Int32 // GroupQueryAttention's seqlens_k and total_sequence_length
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float16:
		return "float16"
	case Bool:
		return "bool"
	case Int64:
		return "int64"
	case Int32:
		return "int32"
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// Tensor is a dense ONNX tensor in row-major order. Exactly one data slice,
// the one of its DType, is used: F32 for Float32, F16 (IEEE half-precision
// bits, see Float16ToFloat32) for Float16, Bool for Bool, I64 for Int64,
// I32 for Int32.
type Tensor struct {
	DType DType
	Shape []int
	F32   []float32
	F16   []uint16
	Bool  []bool
	I64   []int64
	I32   []int32
}

// NewFloat32 returns a float32 tensor of the given shape over data.
func NewFloat32(data []float32, shape ...int) *Tensor {
	return &Tensor{DType: Float32, Shape: shape, F32: data}
}

// NewFloat16 returns a float16 tensor of the given shape over data.
func NewFloat16(data []uint16, shape ...int) *Tensor {
	return &Tensor{DType: Float16, Shape: shape, F16: data}
}

// NewBool returns a bool tensor of the given shape over data.
func NewBool(data []bool, shape ...int) *Tensor {
	return &Tensor{DType: Bool, Shape: shape, Bool: data}
}

// NewInt32 returns an int32 tensor of the given shape over data.
func NewInt32(data []int32, shape ...int) *Tensor {
	return &Tensor{DType: Int32, Shape: shape, I32: data}
}

// NewInt64 returns an int64 tensor of the given shape over data.
func NewInt64(data []int64, shape ...int) *Tensor {
	return &Tensor{DType: Int64, Shape: shape, I64: data}
}

// Len returns the number of elements its shape calls for, or -1 if a
// dimension is negative or the number does not fit in an int (a count
// that wrapped around could pass for the length of a short slice).
func (t *Tensor) Len() int {
	n, ok := count(t.Shape...)
	if !ok {
		return -1
	}
	return n
}

// dataLen is the length of the slice of its DType.
func (t *Tensor) dataLen() int {
	switch t.DType {
	case Float32:
		return len(t.F32)
	case Float16:
		return len(t.F16)
	case Bool:
		return len(t.Bool)
	case Int64:
		return len(t.I64)
	case Int32:
		return len(t.I32)
	}
	return -1
}

// Floats returns the elements of a Float32 or Float16 tensor as float32:
// the data itself for Float32, a converted copy for Float16.
func (t *Tensor) Floats() []float32 {
	switch t.DType {
	case Float32:
		return t.F32
	case Float16:
		return widen16(t.F16)
	}
	return nil
}

// widen16 returns float16 elements h as float32s, a new slice (with F16C
// where the CPU has it).
func widen16(h []uint16) []float32 {
	x := make([]float32, len(h))
	kernel.WidenF16(x, h)
	return x
}

// clone returns a copy of t: its shape and its elements.
func (t *Tensor) clone() *Tensor {
	return &Tensor{DType: t.DType, Shape: slices.Clone(t.Shape), F32: slices.Clone(t.F32), F16: slices.Clone(t.F16),
		Bool: slices.Clone(t.Bool), I64: slices.Clone(t.I64), I32: slices.Clone(t.I32)}
}

// floatTensor returns a tensor of type d holding x (rounded to the
// nearest float16 for Float16).
func floatTensor(d DType, x []float32, shape ...int) *Tensor {
	if d == Float16 {
		h := make([]uint16, len(x))
		kernel.NarrowF16(h, x)
		return NewFloat16(h, shape...)
	}
	return NewFloat32(x, shape...)
}

var negInf = float32(math.Inf(-1))
