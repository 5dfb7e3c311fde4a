// Package onnxattn implements the ONNX Attention operator (opsets 23 and
// 24, with the ONNX 1.23 errata) on the batched engine of package
// attention, so attention exported from ONNX models runs through the same
// kernels as everything else.
//
// Everything the operator does is one call of attention.Batched.Attend:
// the attention mask becomes the engine's Bias (bool false and the padded
// columns of a short mask become −Inf), is_causal its causal frontier with
// the operator's own offset (the past length with a KV cache, the valid
// length minus Sq with nonpad_kv_seqlen, 0 otherwise: top-left aligned,
// not bottom-right), nonpad_kv_seqlen its ValidLen, softcap its Softcap,
// and the qk_matmul_output modes its Logits (modes 1 and 2; mode 0 is a
// second call without softcap or masks) and Weights (mode 3). 3D inputs
// are strided views, never transposed copies; only past_key/past_value
// are concatenated (into present_key/present_value, which the engine then
// reads) and float16 inputs are widened.
//
// Numerics: everything is computed in float32, whatever the input type and
// softmax_precision (float32 is at least as precise as float16 and
// bfloat16; a float64 softmax_precision is accepted and computed in
// float32). Float16 outputs are rounded to nearest, ties to even. A query
// row with no key left (every bias −Inf) gets a zero output and zero
// weights, as the 1.23 errata require.
package onnxattn

import (
	"math"

	"github.com/glancelab/attention"
)

// Attributes are the node's attributes; the zero value of each is the
// operator's default.
type Attributes struct {
	// IsCausal masks key j for query row i unless j <= i + offset, where
	// the offset is the past length with past_key, nonpad_kv_seqlen[b] −
	// q_sequence_length with nonpad_kv_seqlen, and 0 otherwise.
	IsCausal bool
	// QNumHeads and KVNumHeads split the hidden axis of 3D inputs (head
	// major: index h·head_size + d). Required for 3D inputs; for 4D inputs
	// they may be 0 or must match dimension 1 of Q and K.
	QNumHeads, KVNumHeads int
	// QKMatmulOutputMode selects what the qk_matmul_output output holds:
	// 0 scale·Q·Kᵀ, 1 after softcap, 2 after softcap and the mask (the
	// softmax input, −Inf where masked), 3 the softmax weights (zero in
	// fully masked rows). Mode 0 is the raw scaled product even with
	// softcap, as the specification's text and function body say (ONNX's
	// Python reference returns the softcapped scores there; no ONNX test
	// case covers that combination).
	QKMatmulOutputMode int
	// Scale multiplies Q·Kᵀ; 0 means 1/√head_size.
	Scale float32
	// Softcap, if positive, caps the scaled scores at c·tanh(s/c) before
	// the mask is added.
	Softcap float32
	// SoftmaxPrecision is a TensorProto data type code (1 float32, 10
	// float16, 11 float64, 16 bfloat16) or 0 for unset. Validated; the
	// computation is float32 in every case.
	SoftmaxPrecision int
}

// Inputs are the operator's positional inputs; nil means absent. Q, K and V
// are float32 or float16 (Q and K of one type), attn_mask bool or of Q's
// type, past_key/past_value of K's/V's type, nonpad_kv_seqlen int64.
type Inputs struct {
	Q, K, V                      *Tensor
	AttnMask, PastKey, PastValue *Tensor
	NonpadKVSeqlen               *Tensor // opset 24
}

// Want selects the optional outputs.
type Want struct {
	Present        bool // present_key and present_value
	QKMatmulOutput bool
}

// Outputs are the operator's positional outputs; the optional ones are nil
// unless wanted.
type Outputs struct {
	Y, PresentKey, PresentValue, QKMatmulOutput *Tensor
}

// dims are the sizes of one call.
type dims struct {
	threeD                    bool
	B, Hq, Hkv, Sq, Skv, P, T int
	D, Dv                     int
}

// Run evaluates the Attention operator on e (nil: a single-worker engine
// for this call). Inputs that do not fit return a *ShapeError naming the
// input and its shape (errors.Is attention.ErrShape), bad attributes or
// values an error wrapping attention.ErrArgument.
func Run(e *attention.Batched, a Attributes, in Inputs, want Want) (Outputs, error) {
	d, err := check(a, in)
	if err != nil {
		return Outputs{}, err
	}
	if e == nil {
		e = attention.NewBatched(1)
		defer e.Close()
	}
	B, Hq, Hkv, Sq, Skv, P, T, D, Dv := d.B, d.Hq, d.Hkv, d.Sq, d.Skv, d.P, d.T, d.D, d.Dv

	q, err := view(in.Q.Floats(), d.threeD, B, Hq, Sq, D)
	if err != nil {
		return Outputs{}, err
	}
	k, err := view(in.K.Floats(), d.threeD, B, Hkv, Skv, D)
	if err != nil {
		return Outputs{}, err
	}
	v, err := view(in.V.Floats(), d.threeD, B, Hkv, Skv, Dv)
	if err != nil {
		return Outputs{}, err
	}
	var out Outputs
	if in.PastKey != nil || want.Present {
		var pk, pv []float32
		if in.PastKey != nil {
			pk, pv = in.PastKey.Floats(), in.PastValue.Floats()
		}
		kc, kData := concat(pk, k, B, Hkv, P, Skv, D)
		vc, vData := concat(pv, v, B, Hkv, P, Skv, Dv)
		k, v = kc, vc
		if want.Present {
			out.PresentKey = floatTensor(in.K.DType, kData, B, Hkv, T, D)
			out.PresentValue = floatTensor(in.V.DType, vData, B, Hkv, T, Dv)
		}
	}

	opt := attention.BatchOptions{Scale: a.Scale, Softcap: a.Softcap, Causal: a.IsCausal}
	if in.NonpadKVSeqlen != nil {
		opt.ValidLen = make([]int, B)
		for b, n := range in.NonpadKVSeqlen.I64 {
			opt.ValidLen[b] = int(n)
		}
	}
	switch {
	case !a.IsCausal:
	case in.PastKey != nil: // offset P: j <= i + T − Sq + (Sq − Skv)
		opt.CausalShift = Sq - Skv
	case in.NonpadKVSeqlen != nil: // offset ValidLen[b] − Sq
		opt.CausalToValidLen = true
	default: // offset 0
		opt.CausalShift = Sq - T
	}
	if in.AttnMask != nil {
		bias, err := maskBias(in.AttnMask, d)
		if err != nil {
			return Outputs{}, err
		}
		opt.Bias = &bias
	}

	yData := make([]float32, B*Hq*Sq*Dv)
	y, err := view(yData, d.threeD, B, Hq, Sq, Dv)
	if err != nil {
		return Outputs{}, err
	}
	var qk attention.Tensor
	var qkData []float32
	if want.QKMatmulOutput {
		qkData = make([]float32, B*Hq*Sq*T)
		if qk, err = attention.NewTensor(qkData, B, Hq, Sq, T); err != nil {
			return Outputs{}, err
		}
		switch a.QKMatmulOutputMode {
		case 2:
			opt.Logits = &qk
		case 3:
			opt.Weights = &qk
		}
	}
	if err := e.Attend(y, q, k, v, &opt); err != nil {
		return Outputs{}, err
	}
	if want.QKMatmulOutput && a.QKMatmulOutputMode < 2 {
		// The scores before the mask: the same engine, without masks, and
		// without softcap for mode 0.
		raw := attention.BatchOptions{Scale: a.Scale, Logits: &qk}
		if a.QKMatmulOutputMode == 1 {
			raw.Softcap = a.Softcap
		}
		scratch, err := attention.NewTensor(make([]float32, B*Hq*Sq*Dv), B, Hq, Sq, Dv)
		if err != nil {
			return Outputs{}, err
		}
		if err := e.Attend(scratch, q, k, v, &raw); err != nil {
			return Outputs{}, err
		}
	}
	if d.threeD {
		out.Y = floatTensor(in.Q.DType, yData, B, Sq, Hq*Dv)
	} else {
		out.Y = floatTensor(in.Q.DType, yData, B, Hq, Sq, Dv)
	}
	if want.QKMatmulOutput {
		out.QKMatmulOutput = floatTensor(in.Q.DType, qkData, B, Hq, Sq, T)
	}
	return out, nil
}

// view returns data as a [B][H][S][hd] engine tensor: packed for 4D
// inputs, a strided view of [B][S][H·hd] for 3D ones.
func view(data []float32, threeD bool, B, H, S, hd int) (attention.Tensor, error) {
	if threeD {
		return attention.NewTensorStrided(data, B, H, S, hd, S*H*hd, hd, H*hd)
	}
	return attention.NewTensor(data, B, H, S, hd)
}

// concat returns past (packed [B][H][P][hd], nil if P = 0) followed by the
// rows of x along the sequence axis, as a packed tensor and its data.
func concat(past []float32, x attention.Tensor, B, H, P, S, hd int) (attention.Tensor, []float32) {
	T := P + S
	data := make([]float32, B*H*T*hd)
	for b := range B {
		for h := range H {
			dst := data[(b*H+h)*T*hd:]
			copy(dst[:P*hd], past[(b*H+h)*P*hd:])
			for s := range S {
				copy(dst[(P+s)*hd:(P+s+1)*hd], x.Row(b, h, s))
			}
		}
	}
	t, err := attention.NewTensor(data, B, H, T, hd)
	if err != nil {
		panic("onnxattn: concat: " + err.Error()) // sizes computed above
	}
	return t, data
}

// maskBias turns attn_mask into the engine's bias: right-aligned to
// [B][Hq][Sq][T], with size-1 dimensions left for the engine to broadcast;
// bool false and the columns a short mask lacks (opset 24) become −Inf.
func maskBias(m *Tensor, d dims) (attention.Tensor, error) {
	r := len(m.Shape)
	s4 := [4]int{1, 1, 1, 1}
	copy(s4[4-r:], m.Shape)
	n := s4[0] * s4[1] * s4[2]
	cols := s4[3]
	if m.DType == Float32 && cols == d.T {
		return attention.NewTensor(m.F32, s4[0], s4[1], s4[2], d.T)
	}
	bias := make([]float32, n*d.T)
	for row := range n {
		dst := bias[row*d.T : (row+1)*d.T]
		for j := range dst {
			switch {
			case j >= cols:
				dst[j] = negInf
			case m.DType == Bool:
				if !m.Bool[row*cols+j] {
					dst[j] = negInf
				}
			case m.DType == Float16:
				dst[j] = Float16ToFloat32(m.F16[row*cols+j])
			default:
				dst[j] = m.F32[row*cols+j]
			}
		}
	}
	return attention.NewTensor(bias, s4[0], s4[1], s4[2], d.T)
}

// check validates the attributes and every input's type and shape, and
// returns the sizes of the call.
func check(a Attributes, in Inputs) (dims, error) {
	var d dims
	switch {
	case a.QKMatmulOutputMode < 0 || a.QKMatmulOutputMode > 3:
		return d, argErr("qk_matmul_output_mode %d not in 0..3", a.QKMatmulOutputMode)
	case !(a.Softcap >= 0) || math.IsInf(float64(a.Softcap), 0):
		return d, argErr("softcap %v is not a finite value >= 0", a.Softcap)
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
		if K[2] != kvh*d.D {
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
	d.T = d.P + d.Skv

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
	return d, nil
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
	if n := t.dataLen(); n != t.Len() {
		return shapeErr(name, t.Shape, "%d elements to match the shape, got %d", t.Len(), n)
	}
	return nil
}
