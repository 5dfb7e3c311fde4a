package onnxattn

import (
	"math"

	"github.com/glancelab/attention"
)

// check validates the attributes and every input's type and shape, and
// returns the sizes of the call, every buffer of which fits (see
// sizes.fit). The checks run in a fixed order, so an input with several
// faults always reports the same one. The past comes from past_key and
// past_value, or, if cache is not nil (RunCache), from the rows it holds.
func check(a Attributes, in Inputs, want Want, cache *attention.KVCache) (dims, error) {
	if err := checkAttributes(a); err != nil {
		return dims{}, err
	}
	d, err := headDims(a, in)
	if err != nil {
		return d, err
	}
	if err := d.checkPast(in, cache); err != nil {
		return d, err
	}
	var ok bool
	if d.T, ok = addInt(d.P, d.Skv); !ok {
		return d, shapeErr("K", in.K.Shape, "a kv_sequence_length that, after past_sequence_length %d, leaves total_sequence_length an int", d.P)
	}
	maxValid, err := d.checkNonpad(in.NonpadKVSeqlen)
	if err != nil {
		return d, err
	}
	if err := d.checkMask(in, maxValid); err != nil {
		return d, err
	}
	return d, d.fit(in, want)
}

// checkAttributes checks the attributes that no input's shape bears on.
func checkAttributes(a Attributes) error {
	switch {
	case a.QKMatmulOutputMode < 0 || a.QKMatmulOutputMode > 3:
		return argErr("qk_matmul_output_mode %d not in 0..3", a.QKMatmulOutputMode)
	case !(a.Softcap >= 0) || math.IsInf(float64(a.Softcap), 0):
		return argErr("softcap %v is not a finite value >= 0", a.Softcap)
	case a.Softcap > 0 && math.IsInf(float64(1/a.Softcap), 0):
		// The engine divides the scores by softcap through its reciprocal.
		return argErr("softcap %v is so small that its reciprocal is not a float32", a.Softcap)
	case math.IsNaN(float64(a.Scale)) || math.IsInf(float64(a.Scale), 0):
		return argErr("scale %v is not finite", a.Scale)
	case a.QNumHeads < 0 || a.KVNumHeads < 0:
		return argErr("q_num_heads %d and kv_num_heads %d must not be negative", a.QNumHeads, a.KVNumHeads)
	}
	switch a.SoftmaxPrecision {
	case 0, 1, 10, 11, 16:
		return nil
	}
	return argErr("softmax_precision %d is not float32 (1), float16 (10), float64 (11) or bfloat16 (16)", a.SoftmaxPrecision)
}

// fit checks every tensor the call views and every buffer it allocates
// (see sizes.fit), and records the sizes of the outputs.
func (d *dims) fit(in Inputs, want Want) error {
	s := newSizes(*d, in)
	type buffer struct {
		name string
		axes []axis
		n    *int // where its element count goes, if needed
	}
	bufs := []buffer{
		{"Q", []axis{axBatch, axQHeads, axQLen, axHeadSize}, nil},
		{"K", []axis{axBatch, axKVHeads, axKVLen, axHeadSize}, nil},
		{"V", []axis{axBatch, axKVHeads, axKVLen, axVHeadSize}, nil},
		{"Y", []axis{axBatch, axQHeads, axQLen, axVHeadSize}, &d.nY},
	}
	if in.PastKey != nil || want.Present {
		bufs = append(bufs,
			buffer{"present_key", []axis{axBatch, axKVHeads, axTotalLen, axHeadSize}, nil},
			buffer{"present_value", []axis{axBatch, axKVHeads, axTotalLen, axVHeadSize}, nil})
	}
	if want.QKMatmulOutput {
		bufs = append(bufs, buffer{"qk_matmul_output", []axis{axBatch, axQHeads, axQLen, axTotalLen}, &d.nQK})
	}
	if m := in.AttnMask; m != nil {
		axes := s.maskAxes(m)
		bufs = append(bufs, buffer{"the bias attn_mask becomes", axes[:], nil})
	}
	for _, b := range bufs {
		n, err := s.fit(b.name, b.axes...)
		if err != nil {
			return err
		}
		if b.n != nil {
			*b.n = n
		}
	}
	return nil
}

// checkData checks that t has one of the types and as many elements as its
// shape calls for.
func checkData(name string, t *Tensor, types ...DType) error {
	ok := false
	for _, x := range types {
		ok = ok || t.DType == x
	}
	if !ok {
		return argErr("%s is %v, want one of %v", name, t.DType, types)
	}
	for _, x := range t.Shape {
		if x < 0 {
			return shapeErr(name, t.Shape, "no negative dimension")
		}
	}
	if _, ok := extent(t.Shape...); !ok {
		return shapeErr(name, t.Shape, "dimensions whose product fits in an int")
	}
	if n := t.dataLen(); n != t.Len() {
		return shapeErr(name, t.Shape, "%d elements to match the shape, got %d", t.Len(), n)
	}
	return nil
}
