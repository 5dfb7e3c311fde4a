package onnxattn

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
)

// Shapes come from model files, which a service may not control: every
// product of dimensions is computed here with its overflow checked, and
// every buffer Run allocates is sized by dimensions that data backs.

// maxUnbacked bounds the product of the dimensions of one buffer that no
// element backs. A dimension is backed when an input that has it holds at
// least one element, so it is at most that input's length; a buffer
// therefore holds at most maxUnbacked elements per element of its backed
// dimensions, and a shape of a few bytes cannot ask for gigabytes. The
// bound is the engine's per-row budget; beyond inputs of that many
// elements, products of backed dimensions (a quadratic qk_matmul_output)
// allow more anyway.
const maxUnbacked = 1 << 16

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
	if slices.ContainsFunc(dims, func(d int) bool { return d < 0 }) {
		return 0, false
	}
	if slices.Contains(dims, 0) {
		return 0, true
	}
	return extent(dims...)
}

// axis is one dimension of a call.
type axis int

const (
	axOne axis = iota // a broadcast dimension of size 1
	axBatch
	axQHeads
	axKVHeads
	axQLen
	axKVLen
	axPastLen
	axTotalLen
	axHeadSize
	axVHeadSize
	numAxes
)

var axisNames = [numAxes]string{"1", "batch", "q_num_heads", "kv_num_heads", "q_sequence_length",
	"kv_sequence_length", "past_sequence_length", "total_sequence_length", "head_size", "v_head_size"}

// sizes are the axes of a call: their sizes, which of them an element
// backs, and the inputs, for the errors that name them.
type sizes struct {
	n      [numAxes]int
	backed [numAxes]bool
	in     Inputs
	cached bool // the past is the rows of a cache
}

func newSizes(d dims, in Inputs) *sizes {
	s := &sizes{in: in, cached: d.cached}
	s.n = [numAxes]int{1, d.B, d.Hq, d.Hkv, d.Sq, d.Skv, d.P, d.T, d.D, d.Dv}
	s.backed[axOne] = true
	backN := func(n int, axes ...axis) {
		if n > 0 {
			for _, a := range axes {
				s.backed[a] = true
			}
		}
	}
	back := func(t *Tensor, axes ...axis) {
		if t != nil {
			backN(t.Len(), axes...)
		}
	}
	back(in.Q, axBatch, axQHeads, axQLen, axHeadSize)
	back(in.K, axBatch, axKVHeads, axKVLen, axHeadSize)
	back(in.V, axBatch, axKVHeads, axKVLen, axVHeadSize)
	back(in.PastKey, axBatch, axKVHeads, axPastLen, axHeadSize)
	back(in.PastValue, axBatch, axKVHeads, axPastLen, axVHeadSize)
	if d.cached { // the rows a cache holds back the past as past_key/past_value would
		nk, _ := count(d.B, d.Hkv, d.P, d.D)
		nv, _ := count(d.B, d.Hkv, d.P, d.Dv)
		backN(nk, axBatch, axKVHeads, axPastLen, axHeadSize)
		backN(nv, axBatch, axKVHeads, axPastLen, axVHeadSize)
	}
	back(in.NonpadKVSeqlen, axBatch)
	if m := in.AttnMask; m != nil {
		axes := s.maskAxes(m)
		if m.Shape[len(m.Shape)-1] != d.T {
			axes[3] = axOne // a short mask's columns back no axis
		}
		back(m, axes[:]...)
	}
	return s
}

// maskAxes returns the axes of the bias attn_mask becomes: right-aligned
// to [batch, q_num_heads, q_sequence_length, total_sequence_length], with
// its size-1 dimensions broadcast.
func (s *sizes) maskAxes(m *Tensor) [4]axis {
	axes := [4]axis{axOne, axOne, axOne, axTotalLen}
	full := [3]axis{axBatch, axQHeads, axQLen}
	r := len(m.Shape)
	for i, x := range m.Shape[:r-1] {
		if x != 1 {
			axes[4-r+i] = full[4-r+i]
		}
	}
	return axes
}

// weight is what an axis multiplies a buffer by beyond what data backs: 1
// for a backed axis (or one of size 0 or 1), else its size. The total
// length is the sum of the past and new lengths, so its weight is theirs
// unless a full-width mask backs it itself.
func (s *sizes) weight(a axis) int {
	switch {
	case s.backed[a] || s.n[a] <= 1:
		return 1
	case a == axTotalLen:
		w, _ := mulInt(s.weight(axPastLen), s.weight(axKVLen))
		return w
	}
	return s.n[a]
}

// source returns the input that declares an axis, and its shape.
func (s *sizes) source(a axis) (string, []int) {
	switch a {
	case axKVHeads, axKVLen:
		return "K", s.in.K.Shape
	case axVHeadSize:
		return "V", s.in.V.Shape
	case axPastLen:
		return s.past()
	case axTotalLen:
		if (s.in.PastKey != nil || s.cached) && (s.weight(axPastLen) > 1 || s.n[axKVLen] == 0) {
			return s.past()
		}
		return "K", s.in.K.Shape
	}
	return "Q", s.in.Q.Shape
}

// past returns the input that declares the past length, and its shape:
// past_key, or the cache of RunCache, whose held keys have the shape
// past_key would have, [batch, kv_num_heads, past_sequence_length,
// head_size].
func (s *sizes) past() (string, []int) {
	if s.cached {
		return "cache", []int{s.n[axBatch], s.n[axKVHeads], s.n[axPastLen], s.n[axHeadSize]}
	}
	return "past_key", s.in.PastKey.Shape
}

// fit checks one buffer of the call, named buf, with the given axes (at
// most 4): its nonzero dimensions must multiply to an int (so its strides
// do too), and if it has elements, those of its dimensions no element
// backs to at most maxUnbacked. It returns the buffer's element count. An
// error names the input that declares the largest dimension no element
// backs (the one that asked for the size), or else the largest dimension.
func (s *sizes) fit(buf string, axes ...axis) (int, error) {
	var dims [4]int
	shape := dims[:len(axes)]
	culprit, w := axes[0], 1
	for i, a := range axes {
		shape[i] = s.n[a]
		if x, c := s.weight(a), s.weight(culprit); x > c || x == c && s.n[a] > s.n[culprit] {
			culprit = a
		}
		w, _ = mulInt(w, s.weight(a))
	}
	n, ok := extent(shape...)
	switch {
	case !ok:
		return 0, s.fitErr(buf, axes, culprit, "%s %d to leave the size of %s within an int", axisNames[culprit], s.n[culprit])
	case slices.Contains(shape, 0):
		return 0, nil
	case w > maxUnbacked:
		var unbacked []string
		for _, a := range axes {
			if s.weight(a) > 1 {
				unbacked = append(unbacked, fmt.Sprintf("%s %d", axisNames[a], s.n[a]))
			}
		}
		return 0, s.fitErr(buf, axes, culprit, "the dimensions that no element of an input backs (%s) to multiply to at most %d in %s",
			strings.Join(unbacked, ", "), maxUnbacked)
	}
	return n, nil
}

// fitErr is the *ShapeError of fit: format, with args and then a
// description of the buffer, is what was wanted of the culprit's input.
func (s *sizes) fitErr(buf string, axes []axis, culprit axis, format string, args ...any) error {
	names := make([]string, len(axes))
	shape := make([]int, len(axes))
	for i, a := range axes {
		names[i], shape[i] = axisNames[a], s.n[a]
	}
	desc := fmt.Sprintf("%s of [%s] = %v", buf, strings.Join(names, ", "), shape)
	input, ishape := s.source(culprit)
	return shapeErr(input, ishape, format, append(args, desc)...)
}
