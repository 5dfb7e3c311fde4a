package onnxattn

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
)

// FuzzRun decodes an Attention call from the fuzzer's bytes (see
// decodeRun) and runs it under an implementation and on an engine the
// bytes choose: one shared engine with two workers, or nil. It fails on
//
//   - a panic, or a call that does not return within runDeadline;
//   - an error that is neither a *ShapeError naming an input by its own
//     shape nor one wrapping attention.ErrArgument;
//   - outputs of the wrong type or shape, or present_key/present_value
//     other than the cache followed by the new keys/values;
//   - an output with more than 2·maxUnbacked elements per element of its
//     backed dimensions (the 2 for the total length, a sum);
//   - more bytes allocated during the call (runtime.MemStats.TotalAlloc)
//     than 4 × (the bytes of the inputs, of the outputs and of a mask's
//     float32 bias) + the engine's scratch for the backed head sizes and
//     total length + 256 KiB, or, for a refused call, than 64 KiB;
//   - for small calls with finite data, Y or qk_matmul_output away from
//     the float64 reference naive beyond the tolerances of
//     TestMatchesNaive.
//
// Calls that may be valid but are too large to fuzz quickly are skipped
// (see tooBig): their dimensions are ones data backs, so Run accepts them
// by design, and the unit tests cover that.
func FuzzRun(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	shared := attention.NewBatched(2)
	f.Cleanup(shared.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := decodeRun(data)
		if c.tooBig() {
			return
		}
		names := impl.List()
		impl.Select(names[c.impl%len(names)])
		defer impl.Reset()
		e := shared
		if c.nilEngine {
			e = nil
		}
		out, alloc, err := runTimed(t, c, e)
		if err != nil {
			checkRefusal(t, c, err)
			if alloc > 64<<10 {
				t.Fatalf("%v: refusing the call (%v) allocated %d bytes", c, err, alloc)
			}
			return
		}
		dm, ok := callDims(c.a, c.in)
		if !ok {
			t.Fatalf("%v: accepted, but the shapes do not make a call", c)
		}
		checkOutputs(t, c, dm, out)
		if bound := allocBound(c, dm, out); alloc > bound {
			t.Fatalf("%v: allocated %d bytes, more than %d", c, alloc, bound)
		}
		switch {
		case dm.work() > 1<<14:
		case c.finite:
			y, qk := naive(c.a, c.in)
			near(t, c.randomCase, "Y", out.Y, y)
			if c.want.QKMatmulOutput {
				near(t, c.randomCase, "qk_matmul_output", out.QKMatmulOutput, qk)
			}
		default:
			checkFullyMasked(t, c, dm, out)
		}
	})
}

// checkFullyMasked checks that a fully masked row is zero, with zero
// weights in mode 3, even when V or past_value hold values that are not
// finite (the ONNX 1.23 errata). naive, on the call with those values
// made 0 and mode 3, says which rows are fully masked: all their weights
// are 0. Non-finite scores would make rows NaN instead, so Q, K,
// past_key and attn_mask must hold moderate values (a mask may hold −Inf).
func checkFullyMasked(t *testing.T, c fuzzCase, dm callSizes, out Outputs) {
	t.Helper()
	in := c.in
	for _, x := range []*Tensor{in.Q, in.K, in.PastKey, in.AttnMask} {
		if x == nil || x.DType == Bool {
			continue
		}
		maskInf := x == in.AttnMask
		if slices.ContainsFunc(x.Floats(), func(v float32) bool { return !(math.Abs(float64(v)) <= 2 || maskInf && v == negInf) }) {
			return
		}
	}
	tame := func(x *Tensor) *Tensor {
		if x == nil {
			return nil
		}
		v := slices.Clone(x.Floats())
		for i := range v {
			if math.IsNaN(float64(v[i])) || math.IsInf(float64(v[i]), 0) {
				v[i] = 0
			}
		}
		return floatTensor(x.DType, v, x.Shape...)
	}
	in.V, in.PastValue = tame(in.V), tame(in.PastValue)
	a := c.a
	a.QKMatmulOutputMode = 3
	_, w := naive(a, in)
	y := out.Y.Floats()
	var qk []float32
	if c.want.QKMatmulOutput && c.a.QKMatmulOutputMode == 3 {
		qk = out.QKMatmulOutput.Floats()
	}
	for b := range dm.B {
		for h := range dm.Hq {
			for i := range dm.Sq {
				row := (b*dm.Hq+h)*dm.Sq + i
				if slices.ContainsFunc(w[row*dm.T:(row+1)*dm.T], func(x float64) bool { return x != 0 }) {
					continue
				}
				o := row * dm.Dv
				if len(in.Q.Shape) == 3 {
					o = (b*dm.Sq+i)*dm.Hq*dm.Dv + h*dm.Dv
				}
				if yr := y[o : o+dm.Dv]; slices.ContainsFunc(yr, func(x float32) bool { return x != 0 }) {
					t.Fatalf("%v: fully masked row (%d, %d, %d): Y %v, want zeros", c, b, h, i, yr)
				}
				if qk != nil && slices.ContainsFunc(qk[row*dm.T:(row+1)*dm.T], func(x float32) bool { return x != 0 }) {
					t.Fatalf("%v: fully masked row (%d, %d, %d): weights %v, want zeros", c, b, h, i, qk[row*dm.T:(row+1)*dm.T])
				}
			}
		}
	}
}

// runDeadline bounds one call: every call the fuzzer runs holds a few
// thousand elements at most (see tooBig), a millisecond's work.
const runDeadline = 5 * time.Second

// runTimed runs the call in a goroutine, fails the test on a panic or a
// call that outlives runDeadline, and returns the outputs, the bytes
// allocated meanwhile and the error.
func runTimed(t *testing.T, c fuzzCase, e *attention.Batched) (Outputs, uint64, error) {
	t.Helper()
	type result struct {
		out   Outputs
		err   error
		panic any
		stack []byte
	}
	done := make(chan result, 1)
	timer := time.NewTimer(runDeadline)
	defer timer.Stop()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		var r result
		defer func() {
			if r.panic = recover(); r.panic != nil {
				r.stack = debug.Stack()
			}
			done <- r
		}()
		r.out, r.err = Run(e, c.a, c.in, c.want)
	}()
	var r result
	select {
	case r = <-done:
	case <-timer.C:
		t.Fatalf("%v: Run did not return within %v", c, runDeadline)
	}
	runtime.ReadMemStats(&after)
	if r.panic != nil {
		t.Fatalf("%v: panic: %v\n%s", c, r.panic, r.stack)
	}
	return r.out, after.TotalAlloc - before.TotalAlloc, r.err
}

// checkRefusal fails unless err is a *ShapeError naming an input of the
// call by its shape, or wraps attention.ErrArgument.
func checkRefusal(t *testing.T, c fuzzCase, err error) {
	t.Helper()
	var se *ShapeError
	switch {
	case errors.As(err, &se):
		shape, ok := c.inputShape(se.Input)
		if !ok || !errors.Is(err, attention.ErrShape) || !slices.Equal(shape, se.Shape) {
			t.Fatalf("%v: %v names %q %v, not an input of the call by its shape", c, err, se.Input, se.Shape)
		}
	case errors.Is(err, attention.ErrArgument):
	default:
		t.Fatalf("%v: error %v (%T) is neither a *ShapeError nor an ErrArgument", c, err, err)
	}
}

// inputShape returns the shape of the named input, and false if the call
// has no such input.
func (c fuzzCase) inputShape(name string) ([]int, bool) {
	in := c.in
	t := map[string]*Tensor{"Q": in.Q, "K": in.K, "V": in.V, "attn_mask": in.AttnMask,
		"past_key": in.PastKey, "past_value": in.PastValue, "nonpad_kv_seqlen": in.NonpadKVSeqlen}[name]
	if t == nil {
		return nil, false
	}
	return t.Shape, true
}

// checkOutputs checks the types and shapes of the outputs, the present
// outputs' contents, and that no output is larger than data justifies.
func checkOutputs(t *testing.T, c fuzzCase, dm callSizes, out Outputs) {
	t.Helper()
	y := []int{dm.B, dm.Hq, dm.Sq, dm.Dv}
	if len(c.in.Q.Shape) == 3 {
		y = []int{dm.B, dm.Sq, dm.Hq * dm.Dv}
	}
	type output struct {
		name  string
		got   *Tensor
		want  bool
		dtype DType
		shape []int
		axes  []int // of backed
	}
	outs := []output{
		{"Y", out.Y, true, c.in.Q.DType, y, []int{sB, sHq, sSq, sDv}},
		{"present_key", out.PresentKey, c.want.Present, c.in.K.DType, []int{dm.B, dm.Hkv, dm.T, dm.D}, []int{sB, sHkv, sT, sD}},
		{"present_value", out.PresentValue, c.want.Present, c.in.V.DType, []int{dm.B, dm.Hkv, dm.T, dm.Dv}, []int{sB, sHkv, sT, sDv}},
		{"qk_matmul_output", out.QKMatmulOutput, c.want.QKMatmulOutput, c.in.Q.DType, []int{dm.B, dm.Hq, dm.Sq, dm.T}, []int{sB, sHq, sSq, sT}},
	}
	backed := dm.backed(c.in)
	for _, o := range outs {
		switch {
		case o.got == nil && !o.want:
			continue
		case o.got == nil || !o.want:
			t.Fatalf("%v: %s is %v, wanted: %v", c, o.name, o.got, o.want)
		case o.got.DType != o.dtype || !slices.Equal(o.got.Shape, o.shape) || o.got.dataLen() != o.got.Len():
			t.Fatalf("%v: %s is %v %v with %d elements, want %v %v", c, o.name, o.got.DType, o.got.Shape, o.got.dataLen(), o.dtype, o.shape)
		}
		justified := 2.0 * maxUnbacked
		for _, a := range o.axes {
			if n := dm.n(a); backed[a] && n > 0 {
				justified *= float64(n)
			}
		}
		if float64(o.got.Len()) > justified {
			t.Fatalf("%v: %s holds %d elements, more than %g for the dimensions data backs", c, o.name, o.got.Len(), justified)
		}
	}
	if c.want.Present && out.PresentKey.Len()+out.PresentValue.Len() > 0 { // else B·Hkv may be vast
		for _, p := range []struct {
			name      string
			got       *Tensor
			past, new *Tensor
		}{{"present_key", out.PresentKey, c.in.PastKey, c.in.K}, {"present_value", out.PresentValue, c.in.PastValue, c.in.V}} {
			want, got := concatRef(p.past, p.new, dm.Hkv), p.got.Floats()
			for i, w := range want {
				if g := float64(got[i]); g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Fatalf("%v: %s[%d] = %v, want %v", c, p.name, i, g, w)
				}
			}
		}
	}
}

// allocBound is what a call may allocate (see FuzzRun).
func allocBound(c fuzzCase, dm callSizes, out Outputs) uint64 {
	bytes := func(ts ...*Tensor) uint64 {
		var n uint64
		for _, t := range ts {
			if t != nil {
				n += uint64(t.dataLen()) * map[DType]uint64{Float32: 4, Float16: 2, Bool: 1, Int64: 8}[t.DType]
			}
		}
		return n
	}
	in := c.in
	n := bytes(in.Q, in.K, in.V, in.AttnMask, in.PastKey, in.PastValue, in.NonpadKVSeqlen) +
		bytes(out.Y, out.PresentKey, out.PresentValue, out.QKMatmulOutput)
	if m := in.AttnMask; m != nil {
		rows := 1
		for _, x := range m.Shape[:len(m.Shape)-1] {
			rows *= x
		}
		n += 4 * uint64(rows) * uint64(dm.T)
	}
	backed := dm.backed(in)
	only := func(a int) uint64 {
		if backed[a] {
			return uint64(dm.n(a))
		}
		return 0
	}
	scratch := 2 * 4 * (32*(only(sD)+only(sDv)) + 2*only(sT) + 16384)
	return 4*n + scratch + 256<<10
}

// callSizes are the sizes of a call, derived from its shapes as naive
// derives them.
type callSizes struct{ B, Hq, Hkv, Sq, Skv, P, T, D, Dv int }

// The axes of callSizes, for backed and n.
const (
	sB = iota
	sHq
	sHkv
	sSq
	sSkv
	sP
	sT
	sD
	sDv
)

func (dm callSizes) n(a int) int {
	return [...]int{dm.B, dm.Hq, dm.Hkv, dm.Sq, dm.Skv, dm.P, dm.T, dm.D, dm.Dv}[a]
}

// callDims returns the sizes of the call, and false if its shapes are too
// broken to have any.
func callDims(a Attributes, in Inputs) (callSizes, bool) {
	var dm callSizes
	if in.Q == nil || in.K == nil || in.V == nil {
		return dm, false
	}
	Q, K, V := in.Q.Shape, in.K.Shape, in.V.Shape
	switch {
	case len(Q) == 3 && len(K) == 3 && len(V) == 3 && a.QNumHeads > 0 && a.KVNumHeads > 0:
		dm = callSizes{B: Q[0], Sq: Q[1], Hq: a.QNumHeads, D: Q[2] / a.QNumHeads, Hkv: a.KVNumHeads, Skv: K[1], Dv: V[2] / a.KVNumHeads}
	case len(Q) == 4 && len(K) == 4 && len(V) == 4:
		dm = callSizes{B: Q[0], Hq: Q[1], Sq: Q[2], D: Q[3], Hkv: K[1], Skv: K[2], Dv: V[3]}
	default:
		return dm, false
	}
	if p := in.PastKey; p != nil && len(p.Shape) == 4 {
		dm.P = p.Shape[2]
	}
	dm.T = dm.P + dm.Skv
	return dm, true
}

// work bounds the loops and buffers of naive: the score grid times the
// head sizes, every factor at least 1 (its loops run over the batch and
// heads even when there are no rows).
func (dm callSizes) work() float64 {
	w := 1.0
	for _, x := range []int{dm.B, dm.Hq, dm.Sq, dm.T, dm.D + dm.Dv + 1} {
		w *= float64(max(1, x))
	}
	return w
}

// backed says which axes an element of an input backs: an input that has
// the axis holds an element. The total length counts as backed when a
// full-width mask backs it, or when both its parts are backed or at most 1.
func (dm callSizes) backed(in Inputs) [9]bool {
	var b [9]bool
	has := func(t *Tensor, axes ...int) {
		if t != nil && t.dataLen() > 0 {
			for _, a := range axes {
				b[a] = true
			}
		}
	}
	has(in.Q, sB, sHq, sSq, sD)
	has(in.K, sB, sHkv, sSkv, sD)
	has(in.V, sB, sHkv, sSkv, sDv)
	has(in.PastKey, sB, sHkv, sP, sD)
	has(in.PastValue, sB, sHkv, sP, sDv)
	has(in.NonpadKVSeqlen, sB)
	if m := in.AttnMask; m != nil && m.dataLen() > 0 {
		r := len(m.Shape)
		for i, x := range m.Shape[:r-1] {
			if x != 1 {
				b[[3]int{sB, sHq, sSq}[4-r+i]] = true
			}
		}
		b[sT] = b[sT] || m.Shape[r-1] == dm.T
	}
	b[sT] = b[sT] || (b[sP] || dm.P <= 1) && (b[sSkv] || dm.Skv <= 1)
	return b
}

// fuzzCase is one decoded call.
type fuzzCase struct {
	randomCase
	want      Want
	impl      int  // index into impl.List
	nilEngine bool // a fresh single-worker engine instead of the shared one
	finite    bool // every value finite: the reference applies
}

// tooBig reports whether the call may be valid but too large to fuzz
// quickly: its outputs without a zero or huge dimension hold over 2^21
// elements, or its score grid times the head sizes exceeds 2^25. Data
// backs every dimension of such a call (a tensor with a huge dimension
// has no data), so Run accepts it by design.
func (c fuzzCase) tooBig() bool {
	dm, ok := callDims(c.a, c.in)
	if !ok {
		return false
	}
	bufs := [][]int{{dm.B, dm.Hq, dm.Sq, dm.Dv}, {dm.B, dm.Hq, dm.Sq, dm.T}, {dm.B, dm.Hkv, dm.T, dm.D + dm.Dv}}
	if m := c.in.AttnMask; m != nil {
		bufs = append(bufs, append(slices.Clone(m.Shape[:len(m.Shape)-1]), dm.T))
	}
	total := 0.0
	for _, b := range append(bufs, []int{dm.B, dm.Hq, dm.Sq, dm.T, dm.D + dm.Dv + 1}) {
		p := 1.0
		for _, x := range b {
			if x <= 0 || x >= 1<<20 {
				p = 0
				break
			}
			p *= float64(x)
		}
		total += p
	}
	return total > 1<<21
}

// The attribute values the bytes choose from: the defaults most often,
// and the values just outside the domain.
var (
	fuzzSoftcaps = []float32{0, 0, 0, 0.75, 4, 0.75, 1e-45, -1}
	fuzzScales   = []float32{0, 0, 0, 0.3, -1.5, 0.3, float32(math.NaN()), float32(math.Inf(1))}
	fuzzPrec     = []int{0, 1, 10, 11, 16, 7}
)

// The dimensions the bytes choose from: most byte values give small sizes,
// around the engine's blocks of 8 and 16 query rows; the top 16 give sizes
// no slice of the fuzzer can back, from the bound on unbacked dimensions
// to 2^62 (the largest int stands in for those beyond it where int has 32
// bits), and -1.
var (
	smallDims = []int{1, 2, 3, 0, 4, 1, 2, 5, 8, 9, 16, 17, 6, 7, 3, 2}
	hugeDims  = []int{maxUnbacked, maxUnbacked + 1, clampInt(1 << 20), clampInt(1<<31 - 1), clampInt(1 << 31), clampInt(1 << 32),
		clampInt(1<<32 + 1), clampInt(1 << 36), clampInt(1 << 40), clampInt(1 << 48), clampInt(1 << 61), clampInt(1 << 62),
		clampInt(1<<62 + 1), clampInt(math.MaxInt64), -1, 255}
)

func clampInt(x int64) int { return int(min(x, math.MaxInt)) }

func dimOf(b byte) int {
	if b >= 256-16 {
		return hugeDims[b-(256-16)]
	}
	return smallDims[int(b)%len(smallDims)]
}

// byteReader hands out the header bytes, zeros past the end.
type byteReader struct{ b []byte }

func (r *byteReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

func (r *byteReader) dim() int { return dimOf(r.next()) }

// decodeRun decodes a call. The header:
//
//	byte 0  bit 0 3D, 1 float16, 2 is_causal, 3 past_key/past_value,
//	        4 attn_mask, 5 a bool mask (else of Q's type), 6
//	        nonpad_kv_seqlen, 7 a nil engine
//	byte 1  bits 0-1 qk_matmul_output_mode, 2 want present, 3 want
//	        qk_matmul_output, 4-5 spoil an input (see corrupt), 6-7 the
//	        implementation
//	byte 2  bits 0-2 softcap, 3-5 scale, 6-7 attributes: 1 q_num_heads and
//	        kv_num_heads set in 4D, 2 both from two more dimension bytes,
//	        3 softmax_precision from one more byte
//	then    batch, kv_num_heads, heads per kv head, q_sequence_length,
//	        kv_sequence_length, past_sequence_length, head_size,
//	        v_head_size (a byte each, see dimOf); the attribute bytes; for
//	        a mask its rank, a byte per leading dimension (1, full, or a
//	        dimension byte after it) and one for the last (full, short
//	        with a byte for its width, or a dimension byte); two bytes for
//	        a spoilt input
//
// The rest are the values of the tensors, in order Q, K, V, past_key,
// past_value, attn_mask, nonpad_kv_seqlen (see fuzzData). A tensor of
// more than maxFuzzData elements gets no data.
func decodeRun(b []byte) fuzzCase {
	r := &byteReader{b: b}
	var c fuzzCase
	f1, f2, f3 := r.next(), r.next(), r.next()
	threeD := f1&1 != 0
	c.f = Float32
	if f1&2 != 0 {
		c.f = Float16
	}
	c.a.IsCausal = f1&4 != 0
	c.nilEngine = f1&128 != 0
	c.a.QKMatmulOutputMode = int(f2 & 3)
	c.want = Want{Present: f2&4 != 0, QKMatmulOutput: f2&8 != 0}
	c.impl = int(f2 >> 6)
	c.a.Softcap, c.a.Scale = fuzzSoftcaps[f3&7], fuzzScales[f3>>3&7]
	B, Hkv, G, Sq, Skv, P, D, Dv := r.dim(), r.dim(), r.dim(), r.dim(), r.dim(), r.dim(), r.dim(), r.dim()
	Hq, T := Hkv*G, P+Skv // either may wrap around: one more hostile shape
	if threeD {
		c.a.QNumHeads, c.a.KVNumHeads = Hq, Hkv
	}
	switch f3 >> 6 {
	case 1:
		c.a.QNumHeads, c.a.KVNumHeads = Hq, Hkv
	case 2:
		c.a.QNumHeads, c.a.KVNumHeads = r.dim(), r.dim()
	case 3:
		c.a.SoftmaxPrecision = fuzzPrec[int(r.next())%len(fuzzPrec)]
	}
	var mask []int
	if f1&16 != 0 {
		full := []int{B, Hq, Sq, T}
		mask = make([]int, 1+int(r.next())%4)
		last := len(mask) - 1
		for i := range last {
			switch r.next() % 4 {
			case 0:
				mask[i] = 1
			case 3:
				mask[i] = r.dim()
			default:
				mask[i] = full[4-len(mask)+i]
			}
		}
		switch x := r.next() % 4; {
		case x == 2 && T >= 0 && T < math.MaxInt:
			mask[last] = int(r.next()) % (T + 1)
		case x == 3:
			mask[last] = r.dim()
		default:
			mask[last] = T
		}
	}
	spoil, which, dim := f2>>4&3, byte(0), 0
	if spoil != 0 {
		which, dim = r.next(), r.dim()
	}

	d := &fuzzData{b: r.b}
	if threeD {
		c.in.Q, c.in.K, c.in.V = d.floats(c.f, B, Sq, Hq*D), d.floats(c.f, B, Skv, Hkv*D), d.floats(c.f, B, Skv, Hkv*Dv)
	} else {
		c.in.Q, c.in.K, c.in.V = d.floats(c.f, B, Hq, Sq, D), d.floats(c.f, B, Hkv, Skv, D), d.floats(c.f, B, Hkv, Skv, Dv)
	}
	if f1&8 != 0 {
		c.in.PastKey, c.in.PastValue = d.floats(c.f, B, Hkv, P, D), d.floats(c.f, B, Hkv, P, Dv)
	}
	if mask != nil {
		c.in.AttnMask = d.mask(f1&32 != 0, c.f, mask...)
	}
	if f1&64 != 0 {
		c.in.NonpadKVSeqlen = d.lengths(T, B)
	}
	if spoil != 0 {
		c.corrupt(spoil, which, dim)
	}
	c.finite = !d.special
	return c
}

// corrupt spoils the input which chooses: kind 1 makes its data one
// element short (or long, if it has none), 2 sets one of its dimensions to
// dim, 3 changes its type.
func (c *fuzzCase) corrupt(kind, which byte, dim int) {
	var ts []*Tensor
	for _, t := range []*Tensor{c.in.Q, c.in.K, c.in.V, c.in.AttnMask, c.in.PastKey, c.in.PastValue, c.in.NonpadKVSeqlen} {
		if t != nil {
			ts = append(ts, t)
		}
	}
	t := ts[int(which)%len(ts)]
	switch kind {
	case 1:
		if t.dataLen() > 0 {
			t.F32, t.F16, t.Bool, t.I64 = shorter(t.F32), shorter(t.F16), shorter(t.Bool), shorter(t.I64)
		} else {
			t.F32, t.F16, t.Bool, t.I64 = []float32{1}, []uint16{0x3c00}, []bool{true}, []int64{1}
		}
	case 2:
		if len(t.Shape) > 0 {
			t.Shape = slices.Clone(t.Shape)
			t.Shape[int(which/8)%len(t.Shape)] = dim
		}
	case 3:
		t.DType = DType((int(t.DType) + 1 + int(which/8)%4) % 5)
	}
}

func shorter[E any](x []E) []E {
	if len(x) == 0 {
		return x
	}
	return x[:len(x)-1]
}

// maxFuzzData is the most elements a tensor of the fuzzer holds.
const maxFuzzData = 4096

// fuzzData hands out the values of the tensors from the bytes after the
// header, cycled, or from a fixed pattern of finite values if there are
// none.
type fuzzData struct {
	b       []byte
	i       int
	special bool // a value that is not finite (or huge) was handed out
}

// fuzzSpecials are the values of the top byte values.
var fuzzSpecials = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 65504, 3e38,
	float32(math.Copysign(0, -1)), 1e-40}

func (d *fuzzData) byte() byte {
	defer func() { d.i++ }()
	if len(d.b) == 0 {
		return byte((d.i*37 + 11) % (256 - len(fuzzSpecials)))
	}
	return d.b[d.i%len(d.b)]
}

// value is a multiple of 1/64 in [-1, 1] (exact in float16), or one of
// fuzzSpecials.
func (d *fuzzData) value() float32 {
	b := d.byte()
	if k := int(b) - (256 - len(fuzzSpecials)); k >= 0 {
		d.special = true
		return fuzzSpecials[k]
	}
	return float32(int(b)%129-64) / 64
}

// maskValue is −Inf for one byte value in 8, else a multiple of 1/32 in
// [−1.5, 1.5], or one of fuzzSpecials.
func (d *fuzzData) maskValue() float32 {
	b := d.byte()
	switch k := int(b) - (256 - len(fuzzSpecials)); {
	case k >= 0:
		d.special = true
		return fuzzSpecials[k]
	case b%8 == 0:
		return negInf
	}
	return float32(int(b)%97-48) / 32
}

// fuzzCount is the element count of shape if it is at most maxFuzzData,
// else false.
func fuzzCount(shape []int) (int, bool) {
	p, n := 1.0, 1
	for _, x := range shape {
		if x < 0 {
			return 0, false
		}
		p, n = p*float64(x), n*x
	}
	return n, p <= maxFuzzData
}

func (d *fuzzData) floats(f DType, shape ...int) *Tensor {
	n, ok := fuzzCount(shape)
	if !ok {
		return &Tensor{DType: f, Shape: shape}
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = d.value()
	}
	return floatTensor(f, x, shape...)
}

// mask is a bool mask (three keys in four kept) or a float one of type f.
func (d *fuzzData) mask(isBool bool, f DType, shape ...int) *Tensor {
	n, ok := fuzzCount(shape)
	switch {
	case !ok && isBool:
		return &Tensor{DType: Bool, Shape: shape}
	case !ok:
		return &Tensor{DType: f, Shape: shape}
	case isBool:
		keep := make([]bool, n)
		for i := range keep {
			keep[i] = d.byte()&3 != 0
		}
		return NewBool(keep, shape...)
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = d.maskValue()
	}
	return floatTensor(f, x, shape...)
}

// lengths is nonpad_kv_seqlen: values in [0, T+1] (T+1 is one too many),
// or -1 for the top byte value.
func (d *fuzzData) lengths(T int, shape ...int) *Tensor {
	n, ok := fuzzCount(shape)
	if !ok {
		return &Tensor{DType: Int64, Shape: shape}
	}
	x := make([]int64, n)
	for i := range x {
		b := int64(d.byte())
		switch {
		case b == 255:
			x[i] = -1
		case T >= 0 && T < 1<<20:
			x[i] = b % int64(T+2)
		default:
			x[i] = b
		}
	}
	return NewInt64(x, shape...)
}

// seedCall encodes a header: the three flag bytes, then the eight
// dimensions (each must be in smallDims or hugeDims), then more header
// bytes and the values, as they are.
func seedCall(f1, f2, f3 byte, dims [8]int, rest ...byte) []byte {
	b := []byte{f1, f2, f3}
	for _, x := range dims {
		b = append(b, dimByte(x))
	}
	return append(b, rest...)
}

func dimByte(x int) byte {
	if i := slices.Index(smallDims, x); i >= 0 {
		return byte(i)
	}
	if i := slices.Index(hugeDims, x); i >= 0 {
		return byte(256 - 16 + i)
	}
	panic(fmt.Sprintf("dimension %d is in no menu", x))
}

// fuzzSeeds are ordinary calls of every feature; testdata/fuzz/FuzzRun
// holds the hostile ones.
func fuzzSeeds() [][]byte {
	const (
		threeD, f16, causal, past, mask, boolMask, nonpad = 1, 2, 4, 8, 16, 32, 64
		present, qk                                       = 4, 8
	)
	return [][]byte{
		seedCall(0, 0, 0, [8]int{1, 1, 1, 2, 3, 0, 4, 4}),
		seedCall(causal|past|mask|boolMask, 3|present|qk, 1<<3|3, [8]int{2, 1, 2, 9, 3, 2, 4, 3}, 2, 1, 1, 0),
		seedCall(threeD|f16|causal|mask|nonpad, 2|qk, 3|4<<3, [8]int{2, 2, 2, 4, 5, 0, 3, 2}, 1, 0),
		seedCall(mask, 1|qk, 4, [8]int{1, 2, 1, 17, 5, 0, 2, 2}, 3, 0, 1, 2, 2, 3),
	}
}
