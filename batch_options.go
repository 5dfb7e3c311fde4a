package attention

import (
	"math"
	"math/bits"
)

// BatchOptions configure Batched.Attend; what it writes is in
// BatchOutputs. The zero value is plain scaled dot-product attention with
// scale 1/√d and no mask.
type BatchOptions struct {
	// Scale multiplies every score; 0 means 1/√d with d the key dimension.
	Scale float32
	// Causal masks keys after each query's position, aligned bottom-right:
	// query i (of Tq) sees keys j <= i + Tk − Tq + CausalShift, computed
	// without overflow for any CausalShift (math.MaxInt unmasks every key,
	// math.MinInt masks every key).
	Causal      bool
	CausalShift int
	// ValidLen, if not nil, has one entry per batch entry: keys at or past
	// ValidLen[b] are masked (padding).
	ValidLen []int
	// Keep, if not nil, is a [Tq][Tk] row-major keep-mask (true = attend)
	// shared by every batch entry and head.
	Keep []bool
	// Softcap, if positive, bounds every scaled score s to (−Softcap,
	// Softcap) through Softcap·tanh(s/Softcap), before Bias is added (so a
	// −Inf bias still masks). The tanh is the package's own float32 tanh
	// (absolute error below 2^-22), its exponentials computed by the Exp
	// kernel of the implementation in use. 0 means off. A Softcap below
	// 1/math.MaxFloat32 (about 2.9e-39) is refused with ErrArgument: the
	// scores are multiplied by its reciprocal, which would not be a
	// float32.
	Softcap float32
	// Bias, if not nil, is added to the (softcapped) scores before the
	// softmax: an additive mask (−Inf masks a key), a position bias, an
	// attention mask imported from another framework. It is shaped
	// [batch][heads][Tq][Tk], except that each of its first three
	// dimensions may be 1 instead, which broadcasts (numpy-style): a
	// [1][1][Tq][Tk] bias serves every batch entry and head. Keys masked by
	// Bias alone are scored (then get weight exactly 0); a row whose every
	// biased score is −Inf is fully masked (zero output).
	Bias *Tensor
	// CausalToValidLen aligns the causal frontier of batch entry b to its
	// valid length instead of Tk: query i sees keys
	// j <= i + ValidLen[b] − Tq + CausalShift, as when a batch of ragged
	// sequences, right-padded to Tk keys, is decoded together. Without
	// ValidLen it changes nothing.
	CausalToValidLen bool
	// Window, if positive, is a sliding window: each query row attends
	// only the last Window keys before its end (its valid length and,
	// with Causal, its causal frontier), keys end−Window <= j < end. Keys
	// before a row's window are masked like keys past its end: never
	// read, tiles of them skipped. 0 means no window.
	Window int
	// ALiBi, if not nil, holds one slope per query head (finite, else
	// ErrArgument): query row i of head h adds ALiBi[h]·(j − pos_i) to its
	// score of key j, after Softcap and Bias and before the masks.
	// pos_i is the row's position in key coordinates, the causal
	// frontier's, i + Tk − Tq + CausalShift (with CausalToValidLen,
	// i + ValidLen[b] − Tq + CausalShift), saturated to the range of int,
	// whether Causal is set or not; keys after it (j > pos_i, seen without
	// a causal mask) get a positive term for a positive slope. The term
	// is computed in float32 as fl(slope·float32(j − pos_i)), the distance
	// saturated to the range of int, and added with one rounding; it is
	// formed tile by tile in the score stage, never as a [Tq][Tk] tensor.
	ALiBi []float32
	// Sinks, if not nil, holds one logit per query head, an attention
	// sink: it joins each row's softmax denominator and weighs no value,
	// w_j = e^{s_j−M}/(Σ_k e^{s_k−M} + e^{sink−M}) with
	// M = max(max_k s_k, sink), so the weights sum to less than 1. A row
	// with nothing attended still gets a zero output; a −Inf sink is no
	// sink; a NaN or +Inf sink makes its rows NaN (output, weights at the
	// attended keys, LSE), as a +Inf score does, even a row with nothing
	// attended.
	Sinks []float32
}

// checkBatch validates a call of Batched.Attend, in the order its errors
// are reported: shapes (out's, then the other outputs'), then options, then
// aliasing, then the scale.
func checkBatch(op string, dst *BatchOutputs, q, k, v Tensor, opt *BatchOptions) error {
	if err := checkShapes(op, dst.Out, q, k, v); err != nil {
		return err
	}
	if err := checkOutputShapes(op, dst, q.batch, q.heads, q.rows, k.rows); err != nil {
		return err
	}
	if err := checkOptions(op, opt, q.batch, q.heads, q.rows, k.rows); err != nil {
		return err
	}
	if err := checkOutputs(op, dst, q, k, v, opt); err != nil {
		return err
	}
	if scale := opt.Scale; math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) {
		return argErr(op, "scale %v is not finite", scale)
	}
	return nil
}

// checkShapes matches the shapes of out, k and v against q's.
func checkShapes(op string, out, q, k, v Tensor) error {
	B, H, Tq, dk := q.Shape()
	Tk := k.rows
	switch {
	case k.batch != B:
		return shapeErr(op, "k batch", k.batch, B, "q batch")
	case v.batch != B:
		return shapeErr(op, "v batch", v.batch, B, "q batch")
	case out.batch != B:
		return shapeErr(op, "out batch", out.batch, B, "q batch")
	case k.cols != dk:
		return shapeErr(op, "k dim", k.cols, dk, "q dim")
	case v.heads != k.heads:
		return shapeErr(op, "v heads", v.heads, k.heads, "k heads")
	case v.rows != Tk:
		return shapeErr(op, "v rows", v.rows, Tk, "k rows")
	case out.heads != H:
		return shapeErr(op, "out heads", out.heads, H, "q heads")
	case out.rows != Tq:
		return shapeErr(op, "out rows", out.rows, Tq, "q rows")
	case out.cols != v.cols:
		return shapeErr(op, "out dim", out.cols, v.cols, "v dim")
	case k.heads == 0 && H > 0, k.heads > 0 && H%k.heads != 0:
		return shapeErr(op, "q heads", H, k.heads, "a multiple of the key/value heads")
	}
	return nil
}

// checkOptions checks the masks and the score options against the shapes
// of the call.
func checkOptions(op string, opt *BatchOptions, B, H, Tq, Tk int) error {
	if opt.ValidLen != nil {
		if len(opt.ValidLen) != B {
			return shapeErr(op, "len(ValidLen)", len(opt.ValidLen), B, "batch")
		}
		for b, n := range opt.ValidLen {
			if n < 0 || n > Tk {
				return argErr(op, "ValidLen[%d] = %d outside [0, %d]", b, n, Tk)
			}
		}
	}
	if opt.Keep != nil {
		if n, ok := mulInt(Tq, Tk); !ok || len(opt.Keep) != n {
			return shapeErr(op, "len(Keep)", len(opt.Keep), n, "Tq·Tk")
		}
	}
	if opt.Window < 0 {
		return argErr(op, "Window %d is negative", opt.Window)
	}
	return checkScoreOptions(op, opt, B, H, Tq, Tk)
}

// tensorOperand is one tensor of a call, for the aliasing checks.
type tensorOperand struct {
	name string
	t    Tensor
}

// checkOutputs enforces the aliasing rule of Batched.Attend: no two
// elements of the outputs (out, Weights, Logits, LSE) share memory, and none of
// them touches the span of another operand. The inputs may overlap one
// another freely (views into one fused QKV buffer); an output that
// overlaps an input would be read after it was written, by this task or
// another.
func checkOutputs(op string, dst *BatchOutputs, q, k, v Tensor, opt *BatchOptions) error {
	// Absent outputs and options are empty views, which overlap nothing.
	outs := dst.operands()
	ins := [...]tensorOperand{{"q", q}, {"k", k}, {"v", v}, {"Bias", deref(opt.Bias)},
		{"ALiBi", floatsOperand(opt.ALiBi)}, {"Sinks", floatsOperand(opt.Sinks)}}
	for i, o := range outs {
		if !o.t.distinctRows() {
			return argErr(op, "%s has elements that share memory (its strides overlap)", o.name)
		}
		for _, x := range outs[i+1:] {
			if overlaps(o.t.data, x.t.data) { // a view's data ends at its last element
				return argErr(op, "%s overlaps %s in memory", o.name, x.name)
			}
		}
		for _, x := range ins {
			if overlaps(o.t.data, x.t.data) {
				return argErr(op, "%s overlaps %s in memory", o.name, x.name)
			}
		}
	}
	return nil
}

// floatsOperand views x as a tensor of one row, for the aliasing checks.
func floatsOperand(x []float32) Tensor {
	if len(x) == 0 {
		return Tensor{}
	}
	return Tensor{data: x, batch: 1, heads: 1, rows: 1, cols: len(x)}
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
