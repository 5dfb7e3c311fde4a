package attention

import (
	"math"
	"math/bits"
)

// tensorOperand is one tensor of a call, for the aliasing checks.
type tensorOperand struct {
	name string
	t    Tensor
}

// checkOutputs enforces the aliasing rule of Batched.Attend: no two
// elements of out, Weights or Logits share memory, and none of them
// touches the span of another operand. The inputs may overlap one another
// freely (views into one fused QKV buffer); an output that overlaps an
// input would be read after it was written, by this task or another.
func checkOutputs(op string, out, q, k, v Tensor, opt *BatchOptions) error {
	// Absent options are empty views, which overlap nothing.
	all := [...]tensorOperand{{"out", out}, {"Weights", deref(opt.Weights)}, {"Logits", deref(opt.Logits)},
		{"q", q}, {"k", k}, {"v", v}, {"Bias", deref(opt.Bias)}}
	for i, o := range all[:3] {
		if !o.t.distinctRows() {
			return argErr(op, "%s has elements that share memory (its strides overlap)", o.name)
		}
		for _, x := range all[i+1:] {
			if overlaps(o.t.data, x.t.data) { // a view's data ends at its last element
				return argErr(op, "%s overlaps %s in memory", o.name, x.name)
			}
		}
	}
	return nil
}

func deref(t *Tensor) Tensor {
	if t == nil {
		return Tensor{}
	}
	return *t
}

// mulInt returns a·b for a, b >= 0, and false if it does not fit in an int.
func mulInt(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt {
		return math.MaxInt, false
	}
	return int(lo), true
}

// elems returns the product of the dimensions, saturated at math.MaxInt:
// for error messages, where a shape need not fit.
func elems(dims ...int) int {
	n := 1
	for _, d := range dims {
		var ok bool
		if n, ok = mulInt(n, d); !ok {
			return math.MaxInt
		}
	}
	return n
}

// elems returns the number of elements the view's shape calls for.
func (t Tensor) elems() int { return elems(t.batch, t.heads, t.rows, t.cols) }
