package onnxattn

import "math"

// check validates the attributes and every input's type and shape, and
// returns the sizes of the call, every buffer of which fits (see
// sizes.fit).
func check(a Attributes, in Inputs, want Want) (dims, error) {
	var d dims
	switch {
	case a.QKMatmulOutputMode < 0 || a.QKMatmulOutputMode > 3:
		return d, argErr("qk_matmul_output_mode %d not in 0..3", a.QKMatmulOutputMode)
	case !(a.Softcap >= 0) || math.IsInf(float64(a.Softcap), 0):
		return d, argErr("softcap %v is not a finite value >= 0", a.Softcap)
	case a.Softcap > 0 && math.IsInf(float64(1/a.Softcap), 0):
		// The engine divides the scores by softcap through its reciprocal.
		return d, argErr("softcap %v is so small that its reciprocal is not a float32", a.Softcap)
	case math.IsNaN(float64(a.Scale)) || math.IsInf(float64(a.Scale), 0):
		return d, argErr("scale %v is not finite", a.Scale)
	case a.QNumHeads < 0 || a.KVNumHeads < 0:
		return d, argErr("q_num_heads %d and kv_num_heads %d must not be negative", a.QNumHeads, a.KVNumHeads)
	}
	switch a.SoftmaxPrecision {
	case 0, 1, 10, 11, 16:
	default:
		return d, argErr("softmax_precision %d is not float32 (1), float16 (10), float64 (11) or bfloat16 (16)", a.SoftmaxPrecision)
	}
	for _, x := range []struct {
		name string
		t    *Tensor
	}{{"Q", in.Q}, {"K", in.K}, {"V", in.V}} {
		if x.t == nil {
			return d, argErr("input %s is required", x.name)
		}
		if err := checkData(x.name, x.t, Float32, Float16); err != nil {
			return d, err
		}
	}
	if in.K.DType != in.Q.DType {
		return d, argErr("K is %v, want %v like Q", in.K.DType, in.Q.DType)
	}
	Q, K, V := in.Q.Shape, in.K.Shape, in.V.Shape
	switch r := len(Q); {
	case r != 3 && r != 4:
		return d, shapeErr("Q", Q, "rank 3 [batch, q_sequence_length, q_num_heads·head_size] or 4 [batch, q_num_heads, q_sequence_length, head_size]")
	case len(K) != r:
		return d, shapeErr("K", K, "rank %d like Q", r)
	case len(V) != r:
		return d, shapeErr("V", V, "rank %d like Q", r)
	}
	if len(Q) == 3 {
		d.threeD = true
		qh, kvh := a.QNumHeads, a.KVNumHeads
		if qh == 0 || kvh == 0 {
			return d, argErr("3D inputs need q_num_heads and kv_num_heads (got %d and %d)", qh, kvh)
		}
		if Q[2]%qh != 0 {
			return d, shapeErr("Q", Q, "a hidden size divisible by q_num_heads = %d", qh)
		}
		d.B, d.Sq, d.Hq, d.D = Q[0], Q[1], qh, Q[2]/qh
		if n, ok := mulInt(kvh, d.D); !ok || K[2] != n {
			return d, shapeErr("K", K, "hidden size kv_num_heads·head_size = %d·%d", kvh, d.D)
		}
		if V[2]%kvh != 0 {
			return d, shapeErr("V", V, "a hidden size divisible by kv_num_heads = %d", kvh)
		}
		d.Hkv, d.Skv, d.Dv = kvh, K[1], V[2]/kvh
		if K[0] != d.B || V[0] != d.B || V[1] != d.Skv {
			return d, shapeErr("K/V", append(append([]int(nil), K...), V...), "K [%d, S, %d] and V [%d, S, ·] with one S (Q is %v)", d.B, K[2], d.B, Q)
		}
	} else {
		d.B, d.Hq, d.Sq, d.D = Q[0], Q[1], Q[2], Q[3]
		d.Hkv, d.Skv, d.Dv = K[1], K[2], V[3]
		if K[0] != d.B || K[3] != d.D {
			return d, shapeErr("K", K, "[%d, kv_num_heads, kv_sequence_length, %d] (Q is %v)", d.B, d.D, Q)
		}
		if V[0] != d.B || V[1] != d.Hkv || V[2] != d.Skv {
			return d, shapeErr("V", V, "[%d, %d, %d, v_head_size] (K is %v)", d.B, d.Hkv, d.Skv, K)
		}
		if a.QNumHeads != 0 && a.QNumHeads != d.Hq {
			return d, shapeErr("Q", Q, "%d heads in dimension 1 (q_num_heads)", a.QNumHeads)
		}
		if a.KVNumHeads != 0 && a.KVNumHeads != d.Hkv {
			return d, shapeErr("K", K, "%d heads in dimension 1 (kv_num_heads)", a.KVNumHeads)
		}
	}
	if d.Hkv == 0 || d.Hq%d.Hkv != 0 {
		return d, shapeErr("Q", Q, "q_num_heads (%d) a multiple of kv_num_heads (%d)", d.Hq, d.Hkv)
	}

	if (in.PastKey == nil) != (in.PastValue == nil) {
		return d, argErr("past_key and past_value come as a pair")
	}
	if in.PastKey != nil {
		if err := checkData("past_key", in.PastKey, in.K.DType); err != nil {
			return d, err
		}
		if err := checkData("past_value", in.PastValue, in.V.DType); err != nil {
			return d, err
		}
		pk, pv := in.PastKey.Shape, in.PastValue.Shape
		if len(pk) != 4 || pk[0] != d.B || pk[1] != d.Hkv || pk[3] != d.D {
			return d, shapeErr("past_key", pk, "[%d, %d, past_sequence_length, %d] (batch, kv_num_heads, head_size)", d.B, d.Hkv, d.D)
		}
		d.P = pk[2]
		if len(pv) != 4 || pv[0] != d.B || pv[1] != d.Hkv || pv[2] != d.P || pv[3] != d.Dv {
			return d, shapeErr("past_value", pv, "[%d, %d, %d, %d] (past_key is %v, v_head_size %d)", d.B, d.Hkv, d.P, d.Dv, pk, d.Dv)
		}
	}
	var ok bool
	if d.T, ok = addInt(d.P, d.Skv); !ok {
		return d, shapeErr("K", K, "a kv_sequence_length that, after past_sequence_length %d, leaves total_sequence_length an int", d.P)
	}

	maxValid := 0 // the columns a mask must have: it may be short (opset 24)
	if n := in.NonpadKVSeqlen; n != nil {
		if err := checkData("nonpad_kv_seqlen", n, Int64); err != nil {
			return d, err
		}
		if len(n.Shape) != 1 || n.Shape[0] != d.B {
			return d, shapeErr("nonpad_kv_seqlen", n.Shape, "[%d] (batch)", d.B)
		}
		for b, x := range n.I64 {
			if x < 0 || x > int64(d.T) {
				return d, argErr("nonpad_kv_seqlen[%d] = %d outside [0, %d]", b, x, d.T)
			}
			maxValid = max(maxValid, int(x))
		}
	}
	if m := in.AttnMask; m != nil {
		if err := checkData("attn_mask", m, Bool, in.Q.DType); err != nil {
			return d, err
		}
		full := [4]int{d.B, d.Hq, d.Sq, d.T}
		r := len(m.Shape)
		if r < 1 || r > 4 {
			return d, shapeErr("attn_mask", m.Shape, "rank 1 to 4, broadcastable to %v", full)
		}
		for i, x := range m.Shape[:r-1] {
			if f := full[4-r+i]; x != f && x != 1 {
				return d, shapeErr("attn_mask", m.Shape, "broadcastable to [batch, q_num_heads, q_sequence_length, total_sequence_length] = %v", full)
			}
		}
		if c := m.Shape[r-1]; c > d.T || c < maxValid {
			return d, shapeErr("attn_mask", m.Shape, "a last dimension between %d (the valid keys) and %d (total_sequence_length)", maxValid, d.T)
		}
	}
	return d, d.fit(in, want)
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
