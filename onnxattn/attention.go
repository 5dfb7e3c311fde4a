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

import "github.com/glancelab/attention"

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
