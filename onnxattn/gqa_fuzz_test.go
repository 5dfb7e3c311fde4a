package onnxattn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/testutil"
)

// FuzzGroupQueryAttention decodes a GroupQueryAttention call from the
// fuzzer's bytes (see decodeGQA): shapes, attributes, past lengths and
// total lengths that may or may not fit, and data that may hold special
// values, run under an implementation the bytes choose. It fails on
//
//   - a panic, or a call that does not return within runDeadline;
//   - an error that is neither a *ShapeError nor one wrapping
//     attention.ErrArgument, or a refused call that wrote into the past;
//   - outputs of the wrong type or shape, or shared presents that are not
//     the past tensors;
//   - for calls with finite data, an output or a present row away from
//     gqaNaive (the float64 reference of the documented semantics) by
//     more than 1e-4·(1 + |want|) for float32, 1e-3·(1 + |want|) for
//     float16 (its rounding of the outputs and of the turned rows), or a
//     kept past row changed.
func FuzzGroupQueryAttention(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{37, 200, 3, 17, 255, 1, 0, 9, 64, 128, 99, 5, 42, 7, 3, 1, 120, 130, 140})
	f.Add([]byte{2, 7, 1, 6, 9, 130, 3, 0, 0, 4, 1, 2, 8, 200, 17, 33, 90, 91, 92, 93})
	f.Add([]byte{11, 3, 5, 2, 0, 66, 1, 3, 2, 255, 128, 0, 1, 2, 3})
	f.Add([]byte{5, 2, 4, 1, 1, 0, 0, 2, 5, 6, 7, 8, 9, 120, 121, 122, 123, 124, 125})
	shared := attention.NewBatched(2)
	f.Cleanup(shared.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := decodeGQA(data)
		names := impl.List()
		impl.Select(names[c.impl%len(names)])
		defer impl.Reset()
		var pastK, pastV []float32
		if c.in.PastKey != nil {
			pastK, pastV = slices.Clone(c.in.PastKey.Floats()), slices.Clone(c.in.PastValue.Floats())
		}
		e := shared
		if c.nilEngine {
			e = nil
		}
		var out GQAOutputs
		var err error
		timed(t, c, func() { out, err = RunGroupQueryAttention(e, c.a, c.in, c.want) })
		if err != nil {
			var se *ShapeError
			if !(errors.As(err, &se) && errors.Is(err, attention.ErrShape)) && !errors.Is(err, attention.ErrArgument) {
				t.Fatalf("%v: error %v is neither a *ShapeError nor ErrArgument", c, err)
			}
			if pastK != nil && (!slices.EqualFunc(pastK, c.in.PastKey.Floats(), sameFloat) || !slices.EqualFunc(pastV, c.in.PastValue.Floats(), sameFloat)) {
				t.Fatalf("%v: refused (%v) after writing into the past", c, err)
			}
			return
		}
		checkGQAOutputs(t, c, out)
		if c.finite {
			want, wantK, wantV := gqaNaive(c, pastK, pastV)
			tol := 1e-4 // float32: the float32 bounds, far below
			if c.dt == Float16 {
				tol = 1e-3 // the outputs rounded to float16, and the turned rows
			}
			nearGQA(t, c, "output", out.Output.Floats(), want, tol)
			nearGQA(t, c, "present_key", out.PresentKey.Floats(), wantK, tol)
			nearGQA(t, c, "present_value", out.PresentValue.Floats(), wantV, tol)
		}
	})
}

// gqaFuzz is a decoded call.
type gqaFuzz struct {
	a                   GQAAttributes
	in                  GQAInputs
	want                GQAWant
	dt                  DType
	B, S, H, Hkv, D, P  int
	total               int
	seqlens             []int32
	impl                int
	nilEngine, finite   bool
	packed              bool
	rotaryDim, mutation int
}

func (c gqaFuzz) String() string {
	return fmt.Sprintf("gqa{B %d S %d H %d/%d D %d P %d total %d seqlens %v %v packed %v rotary %v/%d window %d softcap %v smooth %v sink %v bias %v shared %v mutation %d}",
		c.B, c.S, c.H, c.Hkv, c.D, c.P, c.total, c.seqlens, c.dt, c.packed, c.a.DoRotary, c.rotaryDim, c.a.LocalWindowSize,
		c.a.Softcap, c.a.SmoothSoftmax, c.in.HeadSink != nil, c.in.AttentionBias != nil, c.want.SharedBuffer, c.mutation)
}

// decodeGQA reads a call from data: the first bytes choose the sizes and
// options (mostly ones that fit, sometimes not: a past length or total
// out of range, and one mutation of a shape or type in eight calls), the
// rest the values (see testutil.DecodeFloats; none but moderate values
// where the first byte says so).
func decodeGQA(data []byte) gqaFuzz {
	at := 0
	next := func() int {
		if at < len(data) {
			at++
			return int(data[at-1])
		}
		return 0
	}
	var c gqaFuzz
	b0 := next()
	c.impl, c.nilEngine = b0>>4, b0&1 != 0
	tame := b0&2 == 0
	c.B, c.S = 1+next()%3, 1+next()%4
	c.Hkv = 1 + next()%3
	c.H = c.Hkv * (1 + next()%3)
	c.D = 2 * (1 + next()%8)
	c.P = next() % 9
	opts := next()
	c.packed = opts&1 != 0
	c.dt = Float32
	if opts&2 != 0 {
		c.dt = Float16
	}
	c.want.SharedBuffer = opts&4 != 0
	c.a = GQAAttributes{NumHeads: c.H, KVNumHeads: c.Hkv}
	if opts&8 != 0 {
		c.a.Softcap = 1.5
	}
	if opts&16 != 0 {
		c.a.SmoothSoftmax = true
	}
	if opts&32 != 0 {
		c.a.Scale = 0.3
	}
	rot := next()
	c.a.DoRotary = rot&1 != 0
	c.a.RotaryInterleaved = rot&2 != 0
	c.rotaryDim = c.D
	if rot&4 != 0 && c.D >= 4 {
		c.rotaryDim = c.D / 2 &^ 1
	}
	c.a.LocalWindowSize = next()%5 - 1
	// The total: past + seq (dynamic), at most the past (static), seq
	// (a first prompt), or anything.
	tb := next()
	switch tb % 4 {
	case 0:
		c.total = c.P + c.S
	case 1:
		c.total = 1 + tb/4%max(1, c.P)
	case 2:
		c.total = c.S
	default:
		c.total = tb/4%12 - 1
	}
	c.seqlens = make([]int32, c.B)
	for b := range c.B {
		v := next()
		switch {
		case v < 200: // a length that fits: past rows kept and the new ones
			c.seqlens[b] = int32(min(c.total, max(1, c.S+v%max(1, c.total-c.S+1)))) - 1
		default:
			c.seqlens[b] = int32(v%16) - 2
		}
	}
	flags := next()
	vals := testutil.DecodeFloats(data[min(at, len(data)):])
	c.finite = true
	i := 0
	fill := func(n int, amp float32) []float32 {
		x := make([]float32, n)
		for j := range x {
			v := float32(((j*7+i*13)%29)-14) / 16
			if len(vals) > 0 {
				v = vals[i%len(vals)]
			}
			i++
			if tame && !(math.Abs(float64(v)) <= 3) {
				v = float32(i%5) / 4
			}
			if !(math.Abs(float64(v)) <= 3) {
				c.finite = false
			}
			x[j] = v * amp
		}
		return x
	}
	mk := func(x []float32, shape ...int) *Tensor { return floatTensor(c.dt, x, shape...) }
	qw := c.H * c.D
	if c.packed {
		qw = (c.H + 2*c.Hkv) * c.D
	}
	c.in.Query = mk(fill(c.B*c.S*qw, 1), c.B, c.S, qw)
	if !c.packed {
		c.in.Key = mk(fill(c.B*c.S*c.Hkv*c.D, 1), c.B, c.S, c.Hkv*c.D)
		c.in.Value = mk(fill(c.B*c.S*c.Hkv*c.D, 1), c.B, c.S, c.Hkv*c.D)
	}
	if c.P > 0 {
		c.in.PastKey = mk(fill(c.B*c.Hkv*c.P*c.D, 1), c.B, c.Hkv, c.P, c.D)
		c.in.PastValue = mk(fill(c.B*c.Hkv*c.P*c.D, 1), c.B, c.Hkv, c.P, c.D)
	}
	c.in.SeqlensK = NewInt32(c.seqlens, c.B)
	c.in.TotalSequenceLength = NewInt32([]int32{int32(c.total)})
	if c.a.DoRotary {
		positions := c.P + c.S + 1
		half := c.rotaryDim / 2
		cos, sin := make([]float32, positions*half), make([]float32, positions*half)
		for p := range positions {
			for j := range half {
				a := float64(p) * math.Pow(10000, -2*float64(j)/float64(c.rotaryDim))
				cos[p*half+j], sin[p*half+j] = float32(math.Cos(a)), float32(math.Sin(a))
			}
		}
		c.in.CosCache, c.in.SinCache = mk(cos, positions, half), mk(sin, positions, half)
	}
	if flags&1 != 0 {
		c.in.HeadSink = mk(fill(c.H, 1), c.H)
	}
	if flags&2 != 0 && c.total > 0 {
		bb, bh := 1, 1
		if flags&4 != 0 {
			bb = c.B
		}
		if flags&8 != 0 {
			bh = c.H
		}
		c.in.AttentionBias = mk(fill(bb*bh*c.S*c.total, 1), bb, bh, c.S, c.total)
	}
	// One call in eight has one thing wrong with it.
	if flags>>4 == 15 {
		c.mutation = 1 + next()%6
		switch c.mutation {
		case 1:
			c.in.Value = nil
		case 2:
			c.in.Query = mk(fill(c.B*c.S*qw+1, 1), c.B*c.S*qw+1)
		case 3:
			// Not a multiple of the KV heads; over one KV head every
			// count is, and a packed query's width then only fixes
			// another head size, which is no mistake.
			c.a.NumHeads = c.Hkv*2 + 1
			if c.Hkv == 1 {
				c.a.NumHeads = 0
			}
		case 4:
			c.in.TotalSequenceLength = NewInt64([]int64{int64(c.total)})
		case 5:
			c.a.Softcap = float32(math.NaN())
		case 6:
			if c.in.PastKey != nil {
				c.in.PastValue = mk(fill(c.B*c.Hkv*c.P*c.D, 1), c.B, c.Hkv, c.P+1, c.D/2)
			}
		}
	}
	return c
}

// checkGQAOutputs checks the outputs' types and shapes, and that shared
// presents are the past tensors.
func checkGQAOutputs(t *testing.T, c gqaFuzz, out GQAOutputs) {
	t.Helper()
	T := c.total
	if T != c.P+c.S {
		T = c.P // a static cache: the present is as long as the past
	}
	for _, o := range []struct {
		name  string
		x     *Tensor
		shape []int
	}{
		{"output", out.Output, []int{c.B, c.S, c.H * c.D}},
		{"present_key", out.PresentKey, []int{c.B, c.Hkv, T, c.D}},
		{"present_value", out.PresentValue, []int{c.B, c.Hkv, T, c.D}},
	} {
		if o.x == nil || o.x.DType != c.dt || !slices.Equal(o.x.Shape, o.shape) || o.x.Len() != len(o.x.Floats()) {
			t.Fatalf("%v: %s %v, want %v %v", c, o.name, o.x, c.dt, o.shape)
		}
	}
	if c.want.SharedBuffer && (out.PresentKey != c.in.PastKey || out.PresentValue != c.in.PastValue) {
		t.Fatalf("%v: shared presents are not the past tensors", c)
	}
}

// nearGQA fails unless got is want within tol·(1 + |want|), element by
// element.
func nearGQA(t *testing.T, c gqaFuzz, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%v: %s has %d elements, want %d", c, name, len(got), len(want))
	}
	for i, w := range want {
		if g := float64(got[i]); !(math.Abs(g-w) <= tol*(1+math.Abs(w))) {
			t.Fatalf("%v: %s[%d] = %v, want %v", c, name, i, g, w)
		}
	}
}

// gqaNaive computes an accepted call in float64 as RunGroupQueryAttention
// documents it, from the past as it was before the call (as float32
// values): the output and both presents. In a float16 call the rows the
// rotary embedding turns are rounded to float16, as the call rounds them.
func gqaNaive(c gqaFuzz, pastK, pastV []float32) (out, presK, presV []float64) {
	B, S, H, Hkv, D, P := c.B, c.S, c.H, c.Hkv, c.D, c.P
	T := c.total
	static := !(c.total == P+S)
	if static {
		T = P
	}
	first := c.total == S
	qw := H * D
	if c.packed {
		qw = (H + 2*Hkv) * D
	}
	q := c.in.Query.Floats()
	var keys32, vals32 []float32
	if !c.packed {
		keys32, vals32 = c.in.Key.Floats(), c.in.Value.Floats()
	}
	key := func(b, s, g int) []float32 {
		if c.packed {
			return q[(b*S+s)*qw+(H+g)*D:][:D]
		}
		return keys32[(b*S+s)*Hkv*D+g*D:][:D]
	}
	value := func(b, s, g int) []float32 {
		if c.packed {
			return q[(b*S+s)*qw+(H+Hkv+g)*D:][:D]
		}
		return vals32[(b*S+s)*Hkv*D+g*D:][:D]
	}
	var cosT, sinT, sinkT, biasT []float32
	if c.a.DoRotary {
		cosT, sinT = c.in.CosCache.Floats(), c.in.SinCache.Floats()
	}
	if c.in.HeadSink != nil {
		sinkT = c.in.HeadSink.Floats()
	}
	if c.in.AttentionBias != nil {
		biasT = c.in.AttentionBias.Floats()
	}
	wide := func(x []float32) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = float64(v)
		}
		return y
	}
	turn := func(x []float32, p int) []float64 {
		y := wide(x)
		if !c.a.DoRotary {
			return y
		}
		half := c.rotaryDim / 2
		for j := range half {
			co, si := float64(cosT[p*half+j]), float64(sinT[p*half+j])
			a, b := j, j+half
			if c.a.RotaryInterleaved {
				a, b = 2*j, 2*j+1
			}
			xa, xb := y[a], y[b]
			y[a], y[b] = co*xa-si*xb, si*xa+co*xb
		}
		if c.dt == Float16 {
			for i, v := range y {
				y[i] = float64(Float16ToFloat32(Float32ToFloat16(float32(v))))
			}
		}
		return y
	}
	presK, presV = make([]float64, B*Hkv*T*D), make([]float64, B*Hkv*T*D)
	out = make([]float64, B*S*H*D)
	scale := float64(c.a.Scale)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(D))
	}
	for b := range B {
		n := int(c.seqlens[b]) + 1
		past := n - S
		if first {
			past = 0
		}
		keys := make([][][]float64, Hkv) // [g][row]
		vals := make([][][]float64, Hkv)
		for g := range Hkv {
			for r := range past + S {
				var k, v []float64
				if r < past {
					k, v = make([]float64, D), make([]float64, D)
					for d := range D {
						k[d], v[d] = float64(pastK[((b*Hkv+g)*P+r)*D+d]), float64(pastV[((b*Hkv+g)*P+r)*D+d])
					}
				} else {
					k, v = turn(key(b, r-past, g), r), wide(value(b, r-past, g))
				}
				keys[g], vals[g] = append(keys[g], k), append(vals[g], v)
				copy(presK[((b*Hkv+g)*T+r)*D:][:D], k)
				copy(presV[((b*Hkv+g)*T+r)*D:][:D], v)
			}
			// The rows after the entry's: as they were, the past's in a
			// shared buffer, zero in a new one.
			for r := past + S; r < T; r++ {
				for d := range D {
					k, v := 0.0, 0.0
					if c.want.SharedBuffer {
						k, v = float64(pastK[((b*Hkv+g)*P+r)*D+d]), float64(pastV[((b*Hkv+g)*P+r)*D+d])
					}
					presK[((b*Hkv+g)*T+r)*D+d], presV[((b*Hkv+g)*T+r)*D+d] = k, v
				}
			}
		}
		for h := range H {
			g := h / (H / Hkv)
			for s := range S {
				p := past + s
				qr := turn(q[(b*S+s)*qw+h*D:][:D], p)
				end := min(p, n-1) + 1
				lo := 0
				if w := c.a.LocalWindowSize; w > 0 {
					lo = max(0, end-w)
				}
				m := math.Inf(-1)
				sc := make([]float64, end)
				for j := lo; j < end; j++ {
					var dot float64
					for d := range D {
						dot += qr[d] * keys[g][j][d]
					}
					x := dot * scale
					if cap := float64(c.a.Softcap); cap > 0 {
						x = cap * math.Tanh(x/cap)
					}
					if bt := c.in.AttentionBias; bt != nil {
						bb, bh := min(b, bt.Shape[0]-1), min(h, bt.Shape[1]-1)
						x += float64(biasT[((bb*bt.Shape[1]+bh)*S+s)*c.total+j])
					}
					sc[j] = x
					m = max(m, x)
				}
				sink, hasSink := 0.0, c.a.SmoothSoftmax
				if c.in.HeadSink != nil {
					sink, hasSink = float64(sinkT[h]), true
				}
				if hasSink {
					m = max(m, sink)
				}
				var l float64
				o := out[(b*S+s)*H*D+h*D:][:D]
				for j := lo; j < end; j++ {
					e := math.Exp(sc[j] - m)
					l += e
					for d := range D {
						o[d] += e * vals[g][j][d]
					}
				}
				if hasSink {
					l += math.Exp(sink - m)
				}
				for d := range D {
					if l > 0 {
						o[d] /= l
					}
				}
			}
		}
	}
	return out, presK, presV
}
