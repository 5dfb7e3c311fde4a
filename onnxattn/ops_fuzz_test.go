package onnxattn

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/testutil"
)

// FuzzRotaryScatter decodes a RotaryEmbedding or a TensorScatter call
// (the first byte chooses) from the fuzzer's bytes: ranks, sizes,
// attributes, position ids and write indices that may or may not fit,
// under an implementation the bytes choose. It fails on a panic, a call
// that does not return within runDeadline, an error that is neither a
// *ShapeError nor one wrapping attention.ErrArgument, a refused
// TensorScatterInPlace that wrote into the cache, an input written, or a
// result away from its reference: RotaryEmbedding's float32 turn against
// float64 within 2⁻²⁰·(1 + |the pair|), and TensorScatter's copy exactly
// (RunTensorScatter and TensorScatterInPlace alike).
func FuzzRotaryScatter(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{16, 7, 200, 3, 5, 1, 0, 66, 90, 130, 140, 250})
	f.Add([]byte{33, 2, 3, 1, 4, 255, 9, 17, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		names := impl.List()
		impl.Select(names[int(data[0]>>4)%len(names)])
		defer impl.Reset()
		r := opsReader{data: data[1:]}
		if data[0]&1 == 0 {
			fuzzRotary(t, &r)
		} else {
			fuzzScatter(t, &r)
		}
	})
}

// opsReader hands out the fuzzer's bytes, then zeros.
type opsReader struct {
	data []byte
	at   int
}

func (r *opsReader) next() int {
	if r.at < len(r.data) {
		r.at++
		return int(r.data[r.at-1])
	}
	return 0
}

// rest returns the bytes not read yet as values (see testutil.DecodeFloats).
func (r *opsReader) rest() []float32 { return testutil.DecodeFloats(r.data[min(r.at, len(r.data)):]) }

// values returns n values from vals, cycling (a ramp without any).
func values(vals []float32, n, seed int) []float32 {
	x := make([]float32, n)
	for i := range x {
		if len(vals) > 0 {
			x[i] = vals[(i+seed)%len(vals)]
		} else {
			x[i] = float32((i*7+seed)%23-11) / 8
		}
	}
	return x
}

// timed runs f in a goroutine and fails the test on a panic or a call
// that outlives runDeadline.
func timed(t *testing.T, what fmt.Stringer, f func()) {
	t.Helper()
	done := make(chan any, 1)
	var stack []byte
	go func() {
		defer func() {
			p := recover()
			if p != nil {
				stack = debug.Stack()
			}
			done <- p
		}()
		f()
	}()
	timer := time.NewTimer(runDeadline)
	defer timer.Stop()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%v: panic: %v\n%s", what, p, stack)
		}
	case <-timer.C:
		t.Fatalf("%v: did not return within %v", what, runDeadline)
	}
}

// typedErr fails unless err is a *ShapeError wrapping ErrShape or wraps
// ErrArgument.
func typedErr(t *testing.T, what fmt.Stringer, err error) {
	t.Helper()
	var se *ShapeError
	if !(errors.As(err, &se) && errors.Is(err, attention.ErrShape)) && !errors.Is(err, attention.ErrArgument) {
		t.Fatalf("%v: error %v is neither a *ShapeError nor ErrArgument", what, err)
	}
}

type rotaryFuzz struct {
	a       RotaryAttributes
	in      RotaryInputs
	f16     bool
	B, H, S int
	D       int
}

func (c rotaryFuzz) String() string {
	pos := "none"
	if c.in.PositionIDs != nil {
		pos = fmt.Sprint(c.in.PositionIDs.Shape, c.in.PositionIDs.I64)
	}
	return fmt.Sprintf("rotary{X %v f16 %v attrs %+v cos %v position_ids %v}", c.in.X.Shape, c.f16, c.a, c.in.CosCache.Shape, pos)
}

func fuzzRotary(t *testing.T, r *opsReader) {
	var c rotaryFuzz
	c.B, c.H, c.S, c.D = 1+r.next()%2, 1+r.next()%3, 1+r.next()%3, 1+r.next()%16
	o := r.next()
	c.f16 = o&1 != 0
	c.a.Interleaved = o&2 != 0
	rank3 := o&4 != 0
	c.a.RotaryEmbeddingDim = []int{0, 0, 2, 4, c.D, c.D - 1, -2, c.D + 2}[o>>3%8]
	if rank3 {
		c.a.NumHeads = []int{c.H, c.H, 0, c.H + 1}[o>>6]
	}
	rd := c.D
	if c.a.RotaryEmbeddingDim != 0 {
		rd = c.a.RotaryEmbeddingDim
	}
	half := max(0, rd/2)
	p := r.next()
	positions := 1 + p%6
	withIDs := p&64 == 0
	vals := r.rest()
	dt := Float32
	if c.f16 {
		dt = Float16
	}
	mk := func(x []float32, shape ...int) *Tensor { return floatTensor(dt, x, shape...) }
	x := values(vals, c.B*c.H*c.S*c.D, 0)
	if rank3 {
		c.in.X = mk(x, c.B, c.S, c.H*c.D)
	} else {
		c.in.X = mk(x, c.B, c.H, c.S, c.D)
	}
	angles := func(n int) (cos, sin []float32) {
		cos, sin = make([]float32, n), make([]float32, n)
		for i := range n {
			th := float64(values(vals, 1, 3*i+1)[0])
			cos[i], sin[i] = float32(math.Cos(th)), float32(math.Sin(th))
		}
		return
	}
	if withIDs {
		cos, sin := angles(positions * half)
		c.in.CosCache, c.in.SinCache = mk(cos, positions, half), mk(sin, positions, half)
		ids := make([]int64, c.B*c.S)
		for i := range ids {
			ids[i] = int64(r.next()%(positions+2)) - 1 // −1 and positions: outside
		}
		c.in.PositionIDs = NewInt64(ids, c.B, c.S)
	} else {
		cos, sin := angles(c.B * c.S * half)
		c.in.CosCache, c.in.SinCache = mk(cos, c.B, c.S, half), mk(sin, c.B, c.S, half)
	}
	if p&128 != 0 { // a mismatch
		c.in.SinCache = mk(make([]float32, half+1), half+1)
	}
	before := slices.Clone(c.in.X.Floats())
	var y *Tensor
	var err error
	timed(t, c, func() { y, err = RunRotaryEmbedding(c.a, c.in) })
	if !slices.EqualFunc(before, c.in.X.Floats(), sameFloat) {
		t.Fatalf("%v: X written", c)
	}
	if err != nil {
		typedErr(t, c, err)
		return
	}
	if y == nil || y.DType != c.in.X.DType || !slices.Equal(y.Shape, c.in.X.Shape) {
		t.Fatalf("%v: Y %v, want X's type and shape", c, y)
	}
	if c.f16 {
		return
	}
	if rank3 { // the heads the call split X into
		c.H = c.a.NumHeads
		c.D = c.in.X.Shape[2] / c.H
	}
	// The reference: each head's pair turned in float64 at its position.
	got, xs := y.F32, c.in.X.F32
	cos, sin := c.in.CosCache.F32, c.in.SinCache.F32
	half = c.in.CosCache.Shape[len(c.in.CosCache.Shape)-1]
	for b := range c.B {
		for s := range c.S {
			row := b*c.S + s
			if c.in.PositionIDs != nil {
				row = int(c.in.PositionIDs.I64[b*c.S+s])
			}
			for h := range c.H {
				at := ((b*c.H+h)*c.S + s) * c.D
				if rank3 {
					at = (b*c.S+s)*c.H*c.D + h*c.D
				}
				want := make([]float64, c.D)
				for i := range c.D {
					want[i] = float64(xs[at+i])
				}
				for i := range half {
					i0, i1 := i, i+half
					if c.a.Interleaved {
						i0, i1 = 2*i, 2*i+1
					}
					co, si := float64(cos[row*half+i]), float64(sin[row*half+i])
					x0, x1 := want[i0], want[i1]
					want[i0], want[i1] = co*x0-si*x1, si*x0+co*x1
				}
				for i, w := range want {
					g := float64(got[at+i])
					if !(math.Abs(w) < 0.99*math.MaxFloat32) {
						continue // NaN, Inf, or past float32's range: not what is checked
					}
					if !(math.Abs(g-w) <= 0x1p-20*(1+math.Abs(float64(xs[at+i]))+pairMag(xs, at, i, half, c.a.Interleaved))) {
						t.Fatalf("%v: Y[%d] = %v, want %v", c, at+i, g, w)
					}
				}
			}
		}
	}
}

// pairMag returns |x| of element i's partner in its pair, 0 past the
// turned components.
func pairMag(x []float32, at, i, half int, interleaved bool) float64 {
	switch {
	case i >= 2*half:
		return 0
	case interleaved:
		return math.Abs(float64(x[at+(i^1)]))
	case i < half:
		return math.Abs(float64(x[at+i+half]))
	default:
		return math.Abs(float64(x[at+i-half]))
	}
}

// sameFloat is == with NaN equal to NaN.
func sameFloat(a, b float32) bool { return a == b || a != a && b != b }

type scatterFuzz struct {
	a             ScatterAttributes
	cache, update *Tensor
	wi            *Tensor
}

func (c scatterFuzz) String() string {
	wi := "none"
	if c.wi != nil {
		wi = fmt.Sprint(c.wi.I64)
	}
	return fmt.Sprintf("scatter{%+v cache %v %v update %v write_indices %v}", c.a, c.cache.DType, c.cache.Shape, c.update.Shape, wi)
}

func fuzzScatter(t *testing.T, r *opsReader) {
	var c scatterFuzz
	rank := 2 + r.next()%3
	shape := make([]int, rank)
	for i := range shape {
		shape[i] = 1 + r.next()%4
	}
	o := r.next()
	c.a.Axis = o%(2*rank+1) - rank // −rank to rank: some outside
	c.a.Mode = []string{"", "linear", "circular", "ring"}[o>>5%4]
	axis := c.a.Axis
	if axis == 0 {
		axis = -2
	}
	if axis < 0 {
		axis += rank
	}
	ushape := slices.Clone(shape)
	if axis > 0 && axis < rank {
		ushape[axis] = r.next() % (shape[axis] + 2) // up to one more than fits
	}
	if o&128 != 0 {
		ushape[0]++ // a mismatch
	}
	types := []DType{Float32, Float16, Bool, Int64, Int32}
	dt := types[r.next()%len(types)]
	n, un := 1, 1
	for i := range shape {
		n, un = n*shape[i], un*ushape[i]
	}
	mk := func(n, seed int, shape []int) *Tensor {
		x := &Tensor{DType: dt, Shape: shape}
		for i := range n {
			v := seed*1000 + i
			switch dt {
			case Float32:
				x.F32 = append(x.F32, float32(v))
			case Float16:
				x.F16 = append(x.F16, uint16(v))
			case Bool:
				x.Bool = append(x.Bool, v%3 == seed)
			case Int64:
				x.I64 = append(x.I64, int64(v))
			case Int32:
				x.I32 = append(x.I32, int32(v))
			}
		}
		return x
	}
	c.cache, c.update = mk(n, 1, shape), mk(un, 2, ushape)
	if w := r.next(); w&1 != 0 {
		wi := make([]int64, shape[0])
		for b := range wi {
			wi[b] = int64(r.next()%(shape[min(max(axis, 0), rank-1)]+3)) - 1
		}
		c.wi = NewInt64(wi, shape[0])
	}
	past := c.cache.clone()
	upd := c.update.clone()
	var got *Tensor
	var err error
	timed(t, c, func() {
		got, err = RunTensorScatter(c.a, ScatterInputs{PastCache: c.cache, Update: c.update, WriteIndices: c.wi})
	})
	var errIn error
	inPlace := c.cache.clone()
	timed(t, c, func() { errIn = TensorScatterInPlace(c.a, inPlace, c.update, c.wi) })
	if !equalTensor(past, c.cache) || !equalTensor(upd, c.update) {
		t.Fatalf("%v: an input written", c)
	}
	if (err == nil) != (errIn == nil) {
		t.Fatalf("%v: RunTensorScatter %v, TensorScatterInPlace %v", c, err, errIn)
	}
	if err != nil {
		typedErr(t, c, err)
		typedErr(t, c, errIn)
		if !equalTensor(past, inPlace) {
			t.Fatalf("%v: refused (%v) after writing into the cache", c, errIn)
		}
		return
	}
	// The reference: every slice of the update at its position.
	want := c.cache.clone()
	maxSeq, seq := shape[axis], ushape[axis]
	inner, outer := 1, 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	for _, d := range shape[1:axis] {
		outer *= d
	}
	for b := range shape[0] {
		w := 0
		if c.wi != nil {
			w = int(c.wi.I64[b])
		}
		for p := range outer {
			for s := range seq {
				pos := w + s
				if c.a.Mode == "circular" {
					pos %= maxSeq
				}
				for e := range inner {
					setElem(want, ((b*outer+p)*maxSeq+pos)*inner+e, c.update, ((b*outer+p)*seq+s)*inner+e)
				}
			}
		}
	}
	if !equalTensor(want, got) || !equalTensor(want, inPlace) {
		t.Fatalf("%v: present_cache differs from the reference", c)
	}
}

func equalTensor(a, b *Tensor) bool {
	return a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && slices.EqualFunc(a.F32, b.F32, sameFloat) &&
		slices.Equal(a.F16, b.F16) && slices.Equal(a.Bool, b.Bool) && slices.Equal(a.I64, b.I64) && slices.Equal(a.I32, b.I32)
}

// setElem sets element i of dst to element j of src (of one type).
func setElem(dst *Tensor, i int, src *Tensor, j int) {
	switch dst.DType {
	case Float32:
		dst.F32[i] = src.F32[j]
	case Float16:
		dst.F16[i] = src.F16[j]
	case Bool:
		dst.Bool[i] = src.Bool[j]
	case Int64:
		dst.I64[i] = src.I64[j]
	case Int32:
		dst.I32[i] = src.I32[j]
	}
}
