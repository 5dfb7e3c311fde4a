package onnxattn

import (
	"math"
	"slices"

	"github.com/glancelab/attention"
)

// GQAAttributes are the attributes of ONNX Runtime's contrib operator
// com.microsoft.GroupQueryAttention, as its CPU provider reads them.
type GQAAttributes struct {
	NumHeads, KVNumHeads int     // num_heads, kv_num_heads: required, NumHeads a multiple of KVNumHeads
	Scale                float32 // scale: 0 means 1/√head_size
	Softcap              float32 // softcap: scores capped at c·tanh(s/c) before the softmax; 0 off
	// LocalWindowSize is local_window_size: each query attends the last
	// LocalWindowSize keys up to its own position, itself included (ONNX
	// Runtime 1.31's CPU provider; its documentation and older code say
	// one more). 0 or less is none (the operator's default, −1).
	LocalWindowSize   int
	DoRotary          bool // do_rotary: turn the query and the new keys by their positions (cos_cache, sin_cache)
	RotaryInterleaved bool // rotary_interleaved: pairs (2i, 2i+1), else rotate-half
	SmoothSoftmax     bool // smooth_softmax: a logit of 0 added to every softmax's denominator
}

// GQAInputs are the operator's inputs; nil means absent. Query, Key,
// Value, PastKey, PastValue, CosCache, SinCache and HeadSink are float32
// or float16, all of one type; SeqlensK and TotalSequenceLength int32.
// Query is [batch][seq][num_heads·head_size], or the packed
// [batch][seq][(num_heads+2·kv_num_heads)·head_size] with Key and Value
// nil; Key and Value [batch][seq][kv_num_heads·head_size]; the past
// [batch][kv_num_heads][past][head_size]; SeqlensK [batch], each entry's
// total length less one; TotalSequenceLength a scalar; the caches
// [positions][rotary_dim/2]; AttentionBias [batch or 1][num_heads or
// 1][seq][total_sequence_length], added to the scores after softcap;
// HeadSink [num_heads], a logit per head added to its softmax's
// denominator.
type GQAInputs struct {
	Query, Key, Value             *Tensor
	PastKey, PastValue            *Tensor
	SeqlensK, TotalSequenceLength *Tensor
	CosCache, SinCache            *Tensor
	AttentionBias                 *Tensor
	HeadSink                      *Tensor
}

// GQAWant selects how the outputs are made.
type GQAWant struct {
	// SharedBuffer writes the new key and value rows into PastKey and
	// PastValue themselves and returns them as PresentKey and
	// PresentValue: ONNX Runtime's past and present sharing one buffer of
	// the maximum length (a static cache, TotalSequenceLength at most the
	// past's length), so that no call copies the past. It needs a past.
	SharedBuffer bool
}

// GQAOutputs are the operator's outputs: the attention output
// [batch][seq][num_heads·head_size] and present_key, present_value
// [batch][kv_num_heads][present][head_size].
type GQAOutputs struct {
	Output, PresentKey, PresentValue *Tensor
}

// RunGroupQueryAttention computes ONNX Runtime's GroupQueryAttention as
// its CPU provider does, on e (nil: a single-worker engine for this call).
// Entry b holds seqlens_k[b]+1 keys after the call: the first
// seqlens_k[b]+1−seq rows of its past and then its seq new rows (rotated
// first with DoRotary, as the queries, at positions from its past length
// on); query s attends the keys up to its own position past_b+s, the last
// LocalWindowSize of them with a window, under a causal mask, with
// Softcap, then AttentionBias, and the sinks of SmoothSoftmax or HeadSink
// (the order ONNX Runtime's CPU provider applies them); groups of
// num_heads/kv_num_heads query heads share a KV head. The cache is
// dynamic (TotalSequenceLength = past + seq, present holds that many rows)
// or static (TotalSequenceLength at most the past's rows, present as long
// as the past), as ONNX Runtime requires; in present, rows past an entry's
// length are left as they were (zero in a new buffer). Float16 inputs are
// computed in float32: the new rows widened, the rows DoRotary turns
// rounded to float16 (as ONNX Runtime holds them, and as the present keeps
// the keys), the past read in place as float16 (an F16 KVCache over the
// present's rows, attention.WithStorage16: never widened, so a step costs
// no more than its float32 twin), and the output rounded once.
//
// A first prompt (total_sequence_length = seq: no past row kept, even
// with a past buffer, as in ONNX Runtime) may be padded: entry b's rows
// past its seqlens_k[b]+1 are padding, stored in present (turned at their
// positions) as ONNX Runtime stores them, and each padding row attends
// the entry's keys (the last LocalWindowSize of them with a window). With
// a window, ONNX Runtime's own padding rows differ between its code paths
// (with attention_bias or head_sink they are these; without, the window
// ends at the padding row's own position, zero where that leaves no key):
// padding outputs are not meant to be read.
//
// Shapes that do not fit are a *ShapeError; attributes out of their
// domain, lengths that do not fit the buffers (ONNX Runtime's rules), or
// positions past the rotary caches ErrArgument. position_ids is not taken (positions follow
// from seqlens_k). Every check comes before anything is written; inputs are not written but with
// SharedBuffer, which writes only the new rows of PastKey and PastValue.
// With SharedBuffer nothing a call allocates grows with the past: it
// allocates the output and copies of the call's own rows (the queries and
// new keys, which the rotation turns), a few KiB a token.
func RunGroupQueryAttention(e *attention.Batched, a GQAAttributes, in GQAInputs, want GQAWant) (GQAOutputs, error) {
	g, err := checkGQA(a, in, want)
	if err != nil {
		return GQAOutputs{}, err
	}
	if e == nil {
		e = attention.NewBatched(1)
		defer e.Close()
	}
	return g.run(e)
}

// gqaCall is a checked call: its sizes, each entry's past and total
// lengths, and its inputs as float32.
type gqaCall struct {
	a                  GQAAttributes
	in                 GQAInputs
	want               GQAWant
	dt                 DType
	B, S, H, Hkv, D, P int
	T                  int   // present's rows
	qw                 int   // a query row's width: H·D, or (H+2·Hkv)·D packed
	pastLen, total     []int // per entry: the past rows it keeps, and its keys after the call
	padded             bool  // a first prompt (total_sequence_length = S) where some entry has fewer than S rows
	totalLen           int   // total_sequence_length: the keys a call may attend
	rot                *attention.Rotary
	posBase            int // the position of rot's first row
}

func checkGQA(a GQAAttributes, in GQAInputs, want GQAWant) (*gqaCall, error) {
	if a.NumHeads <= 0 || a.KVNumHeads <= 0 || a.NumHeads%a.KVNumHeads != 0 {
		return nil, argErr("num_heads = %d, kv_num_heads = %d: want positive, num_heads a multiple of kv_num_heads", a.NumHeads, a.KVNumHeads)
	}
	if a.Softcap < 0 || a.Softcap != a.Softcap || a.Scale != a.Scale {
		return nil, argErr("softcap = %v, scale = %v", a.Softcap, a.Scale)
	}
	q := in.Query
	if q == nil || in.SeqlensK == nil || in.TotalSequenceLength == nil {
		return nil, argErr("GroupQueryAttention needs query, seqlens_k and total_sequence_length")
	}
	if err := checkData("query", q, Float32, Float16); err != nil {
		return nil, err
	}
	g := &gqaCall{a: a, in: in, want: want, dt: q.DType, H: a.NumHeads, Hkv: a.KVNumHeads}
	for _, t := range []struct {
		name string
		t    *Tensor
	}{{"key", in.Key}, {"value", in.Value}, {"past_key", in.PastKey}, {"past_value", in.PastValue},
		{"cos_cache", in.CosCache}, {"sin_cache", in.SinCache}, {"attention_bias", in.AttentionBias}, {"head_sink", in.HeadSink}} {
		if t.t != nil {
			if err := checkData(t.name, t.t, g.dt); err != nil {
				return nil, err
			}
		}
	}
	if len(q.Shape) != 3 {
		return nil, shapeErr("query", q.Shape, "rank 3 ([batch seq hidden])")
	}
	g.B, g.S, g.qw = q.Shape[0], q.Shape[1], q.Shape[2]
	packed := in.Key == nil && in.Value == nil
	heads := g.H
	if packed {
		heads += 2 * g.Hkv
	} else if in.Key == nil || in.Value == nil {
		return nil, argErr("key and value: give both, or neither with a packed query")
	}
	if g.qw%heads != 0 || g.qw == 0 {
		return nil, shapeErr("query", q.Shape, "a hidden size that %d heads divide", heads)
	}
	g.D = g.qw / heads
	if !packed {
		for _, t := range []struct {
			name string
			t    *Tensor
		}{{"key", in.Key}, {"value", in.Value}} {
			if s := t.t.Shape; len(s) != 3 || s[0] != g.B || s[1] != g.S || s[2] != g.Hkv*g.D {
				return nil, shapeErr(t.name, s, "[%d %d %d] ([batch seq kv_num_heads·head_size])", g.B, g.S, g.Hkv*g.D)
			}
		}
	}
	if (in.PastKey == nil) != (in.PastValue == nil) {
		return nil, argErr("past_key and past_value: give both or neither")
	}
	if in.PastKey != nil {
		s := in.PastKey.Shape
		if len(s) != 4 || s[0] != g.B || s[1] != g.Hkv || s[3] != g.D {
			return nil, shapeErr("past_key", s, "[%d %d past %d]", g.B, g.Hkv, g.D)
		}
		if !slices.Equal(in.PastValue.Shape, s) {
			return nil, shapeErr("past_value", in.PastValue.Shape, "past_key's shape %v", s)
		}
		g.P = s[2]
	} else if want.SharedBuffer {
		return nil, argErr("SharedBuffer needs past_key and past_value")
	}
	if err := checkData("seqlens_k", in.SeqlensK, Int32); err != nil {
		return nil, err
	}
	if s := in.SeqlensK.Shape; len(s) != 1 || s[0] != g.B {
		return nil, shapeErr("seqlens_k", s, "[%d] ([batch])", g.B)
	}
	if err := checkData("total_sequence_length", in.TotalSequenceLength, Int32); err != nil {
		return nil, err
	}
	if in.TotalSequenceLength.Len() != 1 {
		return nil, shapeErr("total_sequence_length", in.TotalSequenceLength.Shape, "one element")
	}
	total := int(in.TotalSequenceLength.I32[0])
	switch {
	case total == g.P+g.S: // a dynamic cache
		g.T = total
	case g.P > 0 && total >= 1 && total <= g.P: // a static cache
		g.T = g.P
	default:
		return nil, argErr("total_sequence_length = %d: want past + seq = %d (a dynamic cache) or at most the past's %d rows (a static one)", total, g.P+g.S, g.P)
	}
	if want.SharedBuffer && g.T != g.P {
		return nil, argErr("SharedBuffer needs a static cache: total_sequence_length %d past the past's %d rows", total, g.P)
	}
	g.pastLen, g.total = make([]int, g.B), make([]int, g.B)
	for b, k := range in.SeqlensK.I32 {
		n := int(k) + 1
		p := n - g.S
		switch {
		case n > total || n < 1:
			return nil, argErr("seqlens_k[%d] = %d: want 0 to total_sequence_length−1 = %d", b, k, total-1)
		case p < 0 && total == g.S: // a first prompt padded past its n rows
			p, g.padded = 0, true
		case p < 0 || p > g.P:
			return nil, argErr("seqlens_k[%d] = %d: %d past rows, want 0 to the past's %d", b, k, p, g.P)
		}
		g.pastLen[b], g.total[b] = p, n
	}
	if t := in.AttentionBias; t != nil {
		s := t.Shape
		if len(s) != 4 || (s[0] != g.B && s[0] != 1) || (s[1] != g.H && s[1] != 1) || s[2] != g.S || s[3] != total {
			return nil, shapeErr("attention_bias", s, "[%d or 1, %d or 1, %d, %d] ([batch heads seq total_sequence_length])", g.B, g.H, g.S, total)
		}
	}
	g.totalLen = total
	if s := in.HeadSink; s != nil && (len(s.Shape) != 1 || s.Shape[0] != g.H) {
		return nil, shapeErr("head_sink", s.Shape, "[%d] ([num_heads])", g.H)
	}
	if !a.DoRotary {
		return g, nil
	}
	c, s := in.CosCache, in.SinCache
	if c == nil || s == nil {
		return nil, argErr("do_rotary needs cos_cache and sin_cache")
	}
	if len(c.Shape) != 2 || c.Shape[1] == 0 || 2*c.Shape[1] > g.D {
		return nil, shapeErr("cos_cache", c.Shape, "[positions rotary_dim/2], rotary_dim at most head_size %d", g.D)
	}
	if !slices.Equal(s.Shape, c.Shape) {
		return nil, shapeErr("sin_cache", s.Shape, "cos_cache's shape %v", c.Shape)
	}
	for b := range g.B {
		if last := g.pastLen[b] + g.S - 1; last >= c.Shape[0] {
			return nil, argErr("entry %d's positions reach %d, past the rotary caches' %d", b, last, c.Shape[0])
		}
	}
	layout := attention.RotateHalf
	if a.RotaryInterleaved {
		layout = attention.RotateInterleaved
	}
	cos, sin := c.F32, s.F32
	if g.dt == Float16 {
		// Only the rows of the positions the call turns, widened: a
		// table of positions posBase on.
		half, hi := c.Shape[1], 0
		g.posBase = math.MaxInt
		for b := range g.B {
			g.posBase, hi = min(g.posBase, g.pastLen[b]), max(hi, g.pastLen[b]+g.S)
		}
		cos, sin = widen16(c.F16[g.posBase*half:hi*half]), widen16(s.F16[g.posBase*half:hi*half])
	}
	var err error
	g.rot, err = attention.NewRotaryTable(cos, sin, 2*c.Shape[1], layout)
	return g, err
}

func (g *gqaCall) run(e *attention.Batched) (GQAOutputs, error) {
	nr, err := g.newRows()
	if err != nil {
		return GQAOutputs{}, err
	}
	opt := g.options()
	if g.dt == Float16 && !g.padded {
		return g.run16(e, nr, opt)
	}
	B, S, H, Hkv, D, T := g.B, g.S, g.H, g.Hkv, g.D, g.T
	pk, pv := g.present(nr.k, nr.v)
	// The first total_sequence_length rows of the present, the keys the
	// bias has columns for.
	n := g.totalLen
	kt, _ := attention.NewTensorStrided(B, Hkv, n, D, Hkv*T*D, T*D, D, pk)
	vt, _ := attention.NewTensorStrided(B, Hkv, n, D, Hkv*T*D, T*D, D, pv)
	out := make([]float32, B*S*H*D)
	ov, _ := attention.NewTensorStrided(B, H, S, D, S*H*D, D, H*D, out)
	// A first prompt's rows see keys up to their own row, of the entry's
	// (padding rows: all of them); a later call's, up to their position.
	opt.CausalToValidLen, opt.ValidLen = !g.padded, g.total
	if t := g.in.AttentionBias; t != nil {
		bias, _ := attention.NewTensor(t.Shape[0], t.Shape[1], t.Shape[2], t.Shape[3], t.Floats())
		opt.Bias = &bias
	}
	if err := e.Attend(attention.BatchOutputs{Out: ov}, nr.q, kt, vt, &opt); err != nil {
		return GQAOutputs{}, err
	}
	res := GQAOutputs{Output: floatTensor(g.dt, out, B, S, H*D)}
	if g.want.SharedBuffer {
		res.PresentKey, res.PresentValue = g.in.PastKey, g.in.PastValue
		if g.dt == Float16 {
			g.narrowNew(g.in.PastKey, pk)
			g.narrowNew(g.in.PastValue, pv)
		}
	} else {
		res.PresentKey = floatTensor(g.dt, pk, B, Hkv, T, D)
		res.PresentValue = floatTensor(g.dt, pv, B, Hkv, T, D)
	}
	return res, nil
}

// rows are a call's queries and new key and value rows as float32 views
// ([B][heads][S][D]), turned by the rotary embedding.
type rows struct{ q, k, v attention.Tensor }

// newRows returns the queries and the new key and value rows as float32
// copies (the rotation turns them in place), turned with DoRotary at each
// entry's positions from its past length on.
func (g *gqaCall) newRows() (rows, error) {
	B, S, H, Hkv, D := g.B, g.S, g.H, g.Hkv, g.D
	q := append([]float32(nil), g.in.Query.Floats()...)
	var k, v []float32
	var kOff, vOff, rowW int // where a token's key and value rows start, and a token's width
	if g.in.Key == nil {
		k, v, kOff, vOff, rowW = q, q, H*D, (H+Hkv)*D, g.qw
	} else {
		k = append([]float32(nil), g.in.Key.Floats()...)
		v = g.in.Value.Floats()
		rowW = Hkv * D
	}
	var r rows
	r.q, _ = attention.NewTensorStrided(B, H, S, D, S*g.qw, D, g.qw, q)
	r.k, _ = attention.NewTensorStrided(B, Hkv, S, D, S*rowW, D, rowW, k[kOff:])
	r.v, _ = attention.NewTensorStrided(B, Hkv, S, D, S*rowW, D, rowW, v[vOff:])
	if g.rot == nil {
		return r, nil
	}
	pos := make([]int, B*S)
	for b := range B {
		for s := range S {
			pos[b*S+s] = g.pastLen[b] + s - g.posBase
		}
	}
	if err := g.rot.Apply(r.q, pos); err != nil {
		return rows{}, err
	}
	if err := g.rot.Apply(r.k, pos); err != nil {
		return rows{}, err
	}
	if g.dt == Float16 {
		// The turned rows are float16 tensors in ONNX Runtime, the keys
		// those the present holds: rounded before attention.
		roundFloat16(q)
		if g.in.Key != nil {
			roundFloat16(k)
		}
	}
	return r, nil
}

// options returns the attention options the attributes and the sinks
// give, the same on both paths.
func (g *gqaCall) options() attention.BatchOptions {
	opt := attention.BatchOptions{Scale: g.a.Scale, Softcap: g.a.Softcap, Causal: true}
	if g.a.LocalWindowSize > 0 {
		opt.Window = g.a.LocalWindowSize
	}
	switch {
	case g.in.HeadSink != nil:
		opt.Sinks = g.in.HeadSink.Floats()
	case g.a.SmoothSoftmax:
		opt.Sinks = make([]float32, g.H)
	}
	return opt
}

// run16 is run for float16 inputs but a padded first prompt: the present
// is an F16 cache over float16 rows (the past tensors themselves with
// SharedBuffer, else a new buffer with each entry's past rows copied, as
// ONNX Runtime copies them), so that the past is read in place as float16
// rather than widened; the new rows are stored rounded once, and the
// cache attended as AttendCache does (each query's frontier at its
// position, Len(b) = seqlens_k[b]+1).
func (g *gqaCall) run16(e *attention.Batched, nr rows, opt attention.BatchOptions) (GQAOutputs, error) {
	B, S, H, Hkv, D, T := g.B, g.S, g.H, g.Hkv, g.D, g.T
	var pk, pv []uint16
	if g.want.SharedBuffer {
		pk, pv = g.in.PastKey.F16, g.in.PastValue.F16
	} else {
		pk, pv = make([]uint16, B*Hkv*T*D), make([]uint16, B*Hkv*T*D)
		if g.P > 0 {
			keepPast(g, pk, g.in.PastKey.F16)
			keepPast(g, pv, g.in.PastValue.F16)
		}
	}
	c, err := attention.NewKVCache(B, Hkv, T, D, D, attention.F16, attention.WithStorage16(pk, pv))
	if err != nil {
		return GQAOutputs{}, err
	}
	kr, vr := make([]float32, Hkv*S*D), make([]float32, Hkv*S*D) // an entry's new rows, [Hkv][S][D]
	for b := range B {
		if err := c.Hold(b, g.pastLen[b]); err != nil {
			return GQAOutputs{}, err
		}
		for h := range Hkv {
			for s := range S {
				copy(kr[(h*S+s)*D:][:D], nr.k.Row(b, h, s))
				copy(vr[(h*S+s)*D:][:D], nr.v.Row(b, h, s))
			}
		}
		if err := c.Append(b, kr, vr, S); err != nil {
			return GQAOutputs{}, err
		}
	}
	if t := g.in.AttentionBias; t != nil {
		// The columns of the keys the cache holds: the most any entry has.
		tk := 0
		for _, n := range g.total {
			tk = max(tk, n)
		}
		bb, bh := t.Shape[0], t.Shape[1]
		bias, _ := attention.NewTensorStrided(bb, bh, S, tk, bh*S*g.totalLen, S*g.totalLen, g.totalLen, t.Floats())
		opt.Bias = &bias
	}
	out := make([]float32, B*S*H*D)
	ov, _ := attention.NewTensorStrided(B, H, S, D, S*H*D, D, H*D, out)
	if err := e.AttendCache(attention.BatchOutputs{Out: ov}, nr.q, c, &opt); err != nil {
		return GQAOutputs{}, err
	}
	res := GQAOutputs{Output: floatTensor(Float16, out, B, S, H*D)}
	if g.want.SharedBuffer {
		res.PresentKey, res.PresentValue = g.in.PastKey, g.in.PastValue
	} else {
		res.PresentKey, res.PresentValue = NewFloat16(pk, B, Hkv, T, D), NewFloat16(pv, B, Hkv, T, D)
	}
	return res, nil
}

// present returns present_key's and present_value's rows as float32: the
// past buffer itself with SharedBuffer over float32 (the new rows written
// into it), else a buffer of T rows with each entry's past rows copied,
// then the new rows k and v (views [B][Hkv][S][D]) after them.
func (g *gqaCall) present(k, v attention.Tensor) (pk, pv []float32) {
	B, S, Hkv, D, T := g.B, g.S, g.Hkv, g.D, g.T
	switch {
	case g.want.SharedBuffer && g.dt == Float32:
		pk, pv = g.in.PastKey.F32, g.in.PastValue.F32
	case g.want.SharedBuffer:
		pk, pv = g.in.PastKey.Floats(), g.in.PastValue.Floats()
	default:
		pk, pv = make([]float32, B*Hkv*T*D), make([]float32, B*Hkv*T*D)
		if g.P > 0 {
			keepPast(g, pk, g.in.PastKey.Floats())
			keepPast(g, pv, g.in.PastValue.Floats())
		}
	}
	for b := range B {
		for h := range Hkv {
			for s := range S {
				at := ((b*Hkv+h)*T + g.pastLen[b] + s) * D
				copy(pk[at:at+D], k.Row(b, h, s))
				copy(pv[at:at+D], v.Row(b, h, s))
			}
		}
	}
	return pk, pv
}

// keepPast copies into a present buffer dst of T rows a head the past
// rows each entry keeps, from past (P rows a head).
func keepPast[E float32 | uint16](g *gqaCall, dst, past []E) {
	for b := range g.B {
		for h := range g.Hkv {
			n := g.pastLen[b] * g.D
			copy(dst[(b*g.Hkv+h)*g.T*g.D:][:n], past[(b*g.Hkv+h)*g.P*g.D:][:n])
		}
	}
}

// roundFloat16 rounds each element of x to float16's nearest.
func roundFloat16(x []float32) {
	for i, v := range x {
		x[i] = Float16ToFloat32(Float32ToFloat16(v))
	}
}

// narrowNew stores the new rows of float32 present rows x into the float16
// buffer t, the rest of which it leaves as it is.
func (g *gqaCall) narrowNew(t *Tensor, x []float32) {
	for b := range g.B {
		for h := range g.Hkv {
			at := ((b*g.Hkv+h)*g.T + g.pastLen[b]) * g.D
			for i := at; i < at+g.S*g.D; i++ {
				t.F16[i] = Float32ToFloat16(x[i])
			}
		}
	}
}
