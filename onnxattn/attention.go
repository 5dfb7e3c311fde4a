// Package onnxattn implements the ONNX Attention operator (opsets 23 and
// 24, with the ONNX 1.23 errata) on the batched engine of package
// [github.com/glancelab/attention], so attention exported from ONNX models
// runs through the same kernels as everything else. It is for programs
// that run ONNX models (an inference runtime, say) and hold a node's
// inputs as ONNX tensors: [Run] evaluates one node from its [Attributes]
// and [Inputs], [RunCache] a node of a decode loop whose past the caller
// keeps in an [attention.KVCache]. Programs that call the engine directly
// use package attention instead.
//
// Everything the operator computes, [attention.Batched.Attend] computes:
// the attention mask becomes the Bias of [attention.BatchOptions] (bool
// false and the padded columns of a short mask become −Inf), is_causal
// its causal frontier with the operator's own offset (the past length
// with a KV cache, the valid length minus q_sequence_length with
// nonpad_kv_seqlen, 0 otherwise: top-left aligned, not bottom-right),
// nonpad_kv_seqlen its ValidLen, softcap its Softcap, and the
// qk_matmul_output modes the Logits (mode 2) and Weights (mode 3) of
// [attention.BatchOutputs]; modes 0 and 1 are the Logits of one more call
// without masks (and without softcap for mode 0). 3D inputs are strided
// views, never transposed copies; only past_key/past_value are
// concatenated (into present_key/present_value, which the engine then
// reads) and float16 inputs are widened.
//
// For a decode loop, RunCache keeps the past in an attention.KVCache
// instead: each call appends its K and V to the cache (widening only
// those rows, if float16) and attends over the rows held with
// [attention.Batched.AttendCache], read in place in the cache's type, so
// no call widens, copies or allocates anything that grows with the past.
// Its results are Run's for past_key/past_value holding the cache's rows
// (the bits of Run with a float32 cache); present_key/present_value are
// the cache itself.
//
// Numerics: everything is computed in float32, whatever the input type and
// softmax_precision (float32 is at least as precise as float16 and
// bfloat16; a float64 softmax_precision is accepted and computed in
// float32). Float16 outputs are rounded to nearest, ties to even. A query
// row with no key left (every bias −Inf) gets a zero output and zero
// weights, as the 1.23 errata require.
//
// Shapes come from model files, which a service may not control, so no
// shape can make Run panic or allocate what its data does not justify.
// Every product of dimensions is overflow-checked. A dimension is backed
// when an input that has it holds at least one element (it is then at
// most that input's length); in every buffer Run allocates (Y,
// present_key/present_value, qk_matmul_output, the bias of a bool,
// float16 or short mask), the dimensions that no element backs must
// multiply to at most 65536, so each buffer is a product of backed
// dimensions (which may be quadratic, as qk_matmul_output is) times at
// most 65536: a v_head_size with V and past_value empty, say, gives Y
// at most 65536 zeros per query row. Shapes beyond that, or whose nonzero
// dimensions multiply beyond an int, return a *ShapeError naming the
// input; attribute and value problems return errors wrapping
// attention.ErrArgument; a closed engine returns attention.ErrClosed.
// Nothing else is returned.
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

// Run evaluates the Attention operator on e (nil: a single-worker engine
// for this call). Inputs that do not fit return a *ShapeError naming the
// input and its shape (errors.Is attention.ErrShape), bad attributes or
// values an error wrapping attention.ErrArgument; a closed e returns
// attention.ErrClosed once it has something to compute. No other error is
// returned, and no shape panics.
//
// Shapes are checked before anything is allocated: every product of
// dimensions must fit in an int, and in every buffer Run allocates (the
// outputs, present_key/present_value, the bias of a bool, float16 or
// short mask) the dimensions that no element of an input backs must
// multiply to at most 65536 (see the package documentation). The engine
// runs only when Y or qk_matmul_output has an element to compute and
// there is a key: without keys every row is fully masked and Y is zero.
//
// Float16 tensors are widened to float32, computed and rounded once,
// except in the decode pattern TensorScatter serves (4D float16 K and V
// with nonpad_kv_seqlen, no past_key, no attn_mask, no optional output):
// there K and V are read in place as float16 (see runHeld16), which
// neither widens nor copies them.
func Run(e *attention.Batched, a Attributes, in Inputs, want Want) (Outputs, error) {
	d, err := check(a, in, want, nil)
	if err != nil {
		return Outputs{}, err
	}
	if heldF16(in, d, want) {
		return runHeld16(e, a, in, d)
	}
	c := &call{a: a, in: in, d: d}
	if err := c.viewInputs(); err != nil {
		return Outputs{}, err
	}
	var out Outputs
	if in.PastKey != nil || want.Present {
		kData, vData, err := c.appendPast()
		if err != nil {
			return Outputs{}, err
		}
		if want.Present {
			out.PresentKey = floatTensor(in.K.DType, kData, d.B, d.Hkv, d.T, d.D)
			out.PresentValue = floatTensor(in.V.DType, vData, d.B, d.Hkv, d.T, d.Dv)
		}
	}
	if err := c.results(e, &out, want.QKMatmulOutput); err != nil {
		return Outputs{}, err
	}
	return out, nil
}

// heldF16 reports whether a call is the in-place decode pattern over
// float16 that runHeld16 serves: 4D float16 K and V holding a cache of
// max_sequence_length rows, nonpad_kv_seqlen the rows each entry has, no
// past, no attn_mask and no optional output.
func heldF16(in Inputs, d dims, want Want) bool {
	return in.K.DType == Float16 && !d.threeD && in.NonpadKVSeqlen != nil && in.PastKey == nil &&
		in.AttnMask == nil && !want.Present && !want.QKMatmulOutput
}

// runHeld16 is Run for heldF16's calls: K and V are read in place as
// float16 through an F16 KVCache over their elements, entry b holding its
// first nonpad_kv_seqlen[b] rows, so that a decode step neither widens nor
// copies the cache. AttendCache's rules are the operator's here: keys from
// nonpad_kv_seqlen[b] on are masked, and query i's causal frontier is key
// nonpad_kv_seqlen[b] − q_sequence_length + i.
func runHeld16(e *attention.Batched, a Attributes, in Inputs, d dims) (Outputs, error) {
	kv, err := attention.NewKVCache(d.B, d.Hkv, d.Skv, d.D, d.Dv, attention.F16, attention.WithStorage16(in.K.F16, in.V.F16))
	if err != nil {
		return Outputs{}, err
	}
	for b, n := range in.NonpadKVSeqlen.I64 {
		if err := kv.Hold(b, int(n)); err != nil {
			return Outputs{}, err
		}
	}
	q, err := view(in.Q.Floats(), false, d.B, d.Hq, d.Sq, d.D)
	if err != nil {
		return Outputs{}, viewErr(err, "Q", in.Q)
	}
	yData := make([]float32, d.nY)
	y, err := view(yData, false, d.B, d.Hq, d.Sq, d.Dv)
	if err != nil {
		return Outputs{}, viewErr(err, "Q", in.Q)
	}
	if len(yData) > 0 {
		if e == nil {
			e = attention.NewBatched(1)
			defer e.Close()
		}
		opt := attention.BatchOptions{Scale: a.Scale, Softcap: a.Softcap, Causal: a.IsCausal}
		if err := engineErr(e.AttendCache(attention.BatchOutputs{Out: y}, q, kv, &opt), in); err != nil {
			return Outputs{}, err
		}
	}
	return Outputs{Y: floatTensor(in.Q.DType, yData, d.B, d.Hq, d.Sq, d.Dv)}, nil
}

// call is one checked call: its attributes, inputs and sizes, and the
// engine's views of Q and of the keys and values it reads (with past_key,
// or with present_key/present_value wanted, those outputs' data; with a
// cache, the new rows, which it appends).
type call struct {
	a       Attributes
	in      Inputs
	d       dims
	q, k, v attention.Tensor
	kf, vf  []float32          // the data of K and V, widened if float16
	cache   *attention.KVCache // RunCache's: the engine reads the keys and values there
}

// results computes Y and, if withQK is set, qk_matmul_output into out.
// The engine runs only when one of them has an element and there is a
// key.
func (c *call) results(e *attention.Batched, out *Outputs, withQK bool) error {
	d, in := c.d, c.in
	yData := make([]float32, d.nY)
	var qkData []float32
	if withQK {
		qkData = make([]float32, d.nQK)
	}
	if d.T > 0 && (len(yData) > 0 || len(qkData) > 0) {
		if err := c.compute(e, yData, qkData); err != nil {
			return err
		}
	}
	if d.threeD {
		out.Y = floatTensor(in.Q.DType, yData, d.B, d.Sq, d.Hq*d.Dv)
	} else {
		out.Y = floatTensor(in.Q.DType, yData, d.B, d.Hq, d.Sq, d.Dv)
	}
	if withQK {
		out.QKMatmulOutput = floatTensor(in.Q.DType, qkData, d.B, d.Hq, d.Sq, d.T)
	}
	return nil
}

// compute runs attend on e, or on an engine of its own when e is nil.
func (c *call) compute(e *attention.Batched, yData, qkData []float32) error {
	if e == nil {
		e = attention.NewBatched(1)
		defer e.Close()
	}
	return c.attend(e, yData, qkData)
}

// attend computes Y into yData and, if qkData is not nil, the
// qk_matmul_output: modes 2 and 3 come from the call that computes Y, with
// every mask; modes 0 and 1 from a call before it without masks (and
// without softcap for mode 0), with Y as its scratch.
func (c *call) attend(e *attention.Batched, yData, qkData []float32) error {
	d, in := c.d, c.in
	y, err := view(yData, d.threeD, d.B, d.Hq, d.Sq, d.Dv)
	if err != nil {
		return viewErr(err, "Q", in.Q)
	}
	var qk attention.Tensor
	if qkData != nil {
		if qk, err = attention.NewTensor(d.B, d.Hq, d.Sq, d.T, qkData); err != nil {
			return viewErr(err, "Q", in.Q)
		}
	}
	mode := c.a.QKMatmulOutputMode
	if len(qkData) > 0 && mode < 2 {
		if err := c.rawScores(e, y, qk); err != nil {
			return err
		}
	}
	if len(yData) == 0 && (mode < 2 || len(qkData) == 0) {
		return nil
	}
	return c.masked(e, y, qk, qkData != nil)
}

// rawScores computes qk_matmul_output modes 0 and 1 into qk's data, on a
// call without masks, and without softcap for mode 0.
func (c *call) rawScores(e *attention.Batched, y, qk attention.Tensor) error {
	a := c.a
	raw := attention.BatchOptions{Scale: a.Scale}
	if a.QKMatmulOutputMode == 1 {
		raw.Softcap = a.Softcap
	}
	return c.run(e, attention.BatchOutputs{Out: y, Logits: &qk}, &raw)
}

// run is one call of the engine: Attend over K and V, or AttendCache over
// the cache.
func (c *call) run(e *attention.Batched, dst attention.BatchOutputs, opt *attention.BatchOptions) error {
	if c.cache != nil {
		return engineErr(e.AttendCache(dst, c.q, c.cache, opt), c.in)
	}
	return engineErr(e.Attend(dst, c.q, c.k, c.v, opt), c.in)
}

// masked computes Y with every mask and, if withQK is set, modes 2 and 3
// of qk_matmul_output into qk's data.
func (c *call) masked(e *attention.Batched, y, qk attention.Tensor, withQK bool) error {
	a, in, d := c.a, c.in, c.d
	opt, err := options(a, in, d)
	if err != nil {
		return err
	}
	dst := attention.BatchOutputs{Out: y}
	if withQK {
		switch a.QKMatmulOutputMode {
		case 2:
			dst.Logits = &qk
		case 3:
			dst.Weights = &qk
		}
	}
	return c.run(e, dst, &opt)
}

// options translates the masks and attributes into the engine's options.
func options(a Attributes, in Inputs, d dims) (attention.BatchOptions, error) {
	opt := attention.BatchOptions{Scale: a.Scale, Softcap: a.Softcap, Causal: a.IsCausal}
	if in.NonpadKVSeqlen != nil {
		opt.ValidLen = make([]int, d.B)
		for b, n := range in.NonpadKVSeqlen.I64 {
			opt.ValidLen[b] = int(n)
		}
	}
	switch {
	case !a.IsCausal:
	case in.PastKey != nil || d.cached: // offset P: j <= i + T − Sq + (Sq − Skv)
		opt.CausalShift = d.Sq - d.Skv
	case in.NonpadKVSeqlen != nil: // offset ValidLen[b] − Sq
		opt.CausalToValidLen = true
	default: // offset 0
		opt.CausalShift = d.Sq - d.T
	}
	if in.AttnMask != nil {
		bias, err := maskBias(in.AttnMask, d)
		if err != nil {
			return opt, viewErr(err, "attn_mask", in.AttnMask)
		}
		opt.Bias = &bias
	}
	return opt, nil
}
