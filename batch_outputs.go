package attention

import "math"

// BatchOutputs are what Batched.Attend writes: Out, and each further
// output that is not nil. No two of their elements may share memory, nor
// touch the memory span of an input (see Batched.Attend).
type BatchOutputs struct {
	// Out receives the attention output, shaped [batch][heads][Tq][dv].
	// It is required: its shape must match the call's, as the inputs' do.
	Out Tensor
	// Weights, if not nil, receives the attention weights, shaped
	// [batch][heads][Tq][Tk]. Without it (and without Logits) the Tq×Tk
	// grid is never formed.
	Weights *Tensor
	// Logits, if not nil, receives the softmax input, shaped
	// [batch][heads][Tq][Tk]: the scaled, softcapped and biased scores
	// with their ALiBi terms, −Inf at keys masked by Keep, ValidLen or
	// Causal (the sink is no key: it has no logit here).
	Logits *Tensor
	// LSE, if not nil, receives each row's log-sum-exp, B·H·Tq entries,
	// [batch][heads][Tq] row-major: the natural log of the softmax's
	// denominator, Σ_j e^{s_j} over the row's final scores (scaled,
	// softcapped, biased, with ALiBi, masked) plus e^{sink} with Sinks.
	// It is computed as m + log(l) from the online softmax's running max
	// m and sum l, combined with the sink, in float64 and rounded once.
	// A row with nothing attended gets −Inf (its sink with Sinks); a row
	// whose scores hold NaN or +Inf, or whose sink is NaN or +Inf, gets
	// NaN. With it, MergeAttention combines calls over disjoint keys.
	LSE []float32
}

// numOutputs is the number of outputs in a BatchOutputs.
const numOutputs = 4

// operands returns every output under the name errors give it, Out first;
// an absent output is an empty view, which overlaps nothing.
func (d *BatchOutputs) operands() [numOutputs]tensorOperand {
	return [numOutputs]tensorOperand{{"out", d.Out}, {"Weights", deref(d.Weights)}, {"Logits", deref(d.Logits)},
		{"LSE", floatsOperand(d.LSE)}}
}

// empty reports whether no output has an element.
func (d *BatchOutputs) empty() bool {
	for _, o := range d.operands() {
		if !o.t.empty() {
			return false
		}
	}
	return true
}

// checkOutputShapes checks the outputs other than Out (which checkShapes
// matches against the inputs) against the shapes of the call.
func checkOutputShapes(op string, dst *BatchOutputs, B, H, Tq, Tk int) error {
	for _, o := range [...]struct {
		name string
		t    *Tensor
	}{{"Weights", dst.Weights}, {"Logits", dst.Logits}} {
		x := o.t
		if x == nil {
			continue
		}
		// The first dimension that differs from [batch][heads][Tq][Tk].
		switch {
		case x.batch != B:
			return shapeErr(op, o.name+" batch", x.batch, B, "the batch")
		case x.heads != H:
			return shapeErr(op, o.name+" heads", x.heads, H, "the query heads")
		case x.rows != Tq:
			return shapeErr(op, o.name+" rows", x.rows, Tq, "Tq")
		case x.cols != Tk:
			return shapeErr(op, o.name+" cols", x.cols, Tk, "Tk")
		}
	}
	if n := elems(B, H, Tq); dst.LSE != nil && len(dst.LSE) != n {
		return shapeErr(op, "len(LSE)", len(dst.LSE), n, "batch·heads·Tq")
	}
	return nil
}

// blockOutputs finishes the weights and logits of a query block whose
// attended keys all went through the block kernels, [tk.lo, n): runBlock
// wrote the scores of those into the logits, or into the weights where no
// logits are wanted. Keys outside get logit -Inf and weight 0. The weights
// of keys [tk.lo, n) are exp(s - m)·f with each row's final max and factor
// (1/l, or with a sink 1/(l + e^{sink−m})), formed from those scores row by
// row while they are still in cache: forming the scores again in a second
// pass of the score kernel took a quarter of the time of a prefill asking
// for its weights (8 heads × 512 × 512 × 64, avx2). A NaN row (a NaN or +Inf score or sink) is redone by
// the row path, which sets its output, weights, logits and LSE as
// Memory.Attend does.
func (p rowPath) blockOutputs(tk *batchTask, n int) {
	b, R := tk.b, tk.R
	m, l := p.sc.m, p.sc.l
	if p.logits != nil {
		for r := range R {
			lg := p.logits.Row(b, tk.hs[r], tk.is[r])
			fillWith(lg[:tk.lo], float32(math.Inf(-1)))
			fillWith(lg[n:], float32(math.Inf(-1)))
		}
	}
	if p.w == nil {
		return
	}
	for r := range R {
		h, i := tk.hs[r], tk.is[r]
		w := p.w.Row(b, h, i)
		clear(w[:tk.lo])
		clear(w[n:])
		f, _ := p.rowFinish(h, m[r], l[r])
		if f != f {
			p.rowWithWeights(tk, r, w)
			continue
		}
		s := w
		if p.logits != nil {
			s = p.logits.Row(b, h, i)
		}
		// As blockExpSum's lanes, against 0 for a row that attended
		// nothing (its scores are all -Inf).
		mu := m[r]
		if math.IsInf(float64(mu), -1) {
			mu = 0
		}
		expSum(w[tk.lo:n], s[tk.lo:n], mu)
		scale(f, w[tk.lo:n])
	}
}
