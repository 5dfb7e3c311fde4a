package onnxattn

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// gqaCase is one case of testdata/ort/gqa.json.gz (see gqa.js there):
// ONNX Runtime's CPU GroupQueryAttention, its inputs and what it returned.
type gqaCase struct {
	Name                             string
	F16                              bool // inputs float16 (each value one float16 holds), and ONNX Runtime's float16 results
	B, S, H, Hkv, D, P, Total        int
	Seqlens                          []int32
	Packed, Rotary, Interleaved      bool
	Scale, Softcap                   float32
	Window                           int
	Smooth                           bool
	Query, Key, Value                []float32
	PastKey, PastValue               []float32
	Cos, Sin, HeadSink, Bias         []float32
	BiasShape                        []int
	RotaryDim                        int
	PresentShape                     []int
	Output                           []float32
	PresentNewKeys, PresentNewValues []float32
}

func loadGQACases(t *testing.T) []gqaCase {
	t.Helper()
	f, err := os.Open("testdata/ort/gqa.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Cases []gqaCase }
	if err := json.NewDecoder(z).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) != 20 {
		t.Fatalf("%d cases, want 20", len(doc.Cases))
	}
	return doc.Cases
}

// inputs builds the case's inputs, float16 in a float16 case; the past is
// copied, so that a shared buffer can be written.
func (c *gqaCase) inputs() (GQAAttributes, GQAInputs) {
	a, in := c.inputs32()
	if c.F16 {
		in = in.mapFloats(toFloat16)
	}
	return a, in
}

// toFloat16 returns a float16 tensor of x's values rounded; nil for nil.
func toFloat16(x *Tensor) *Tensor {
	if x == nil {
		return nil
	}
	return floatTensor(Float16, x.F32, x.Shape...)
}

// mapFloats returns in with f applied to each of its float tensors.
func (in GQAInputs) mapFloats(f func(*Tensor) *Tensor) GQAInputs {
	return GQAInputs{Query: f(in.Query), Key: f(in.Key), Value: f(in.Value), PastKey: f(in.PastKey), PastValue: f(in.PastValue),
		SeqlensK: in.SeqlensK, TotalSequenceLength: in.TotalSequenceLength, CosCache: f(in.CosCache), SinCache: f(in.SinCache),
		AttentionBias: f(in.AttentionBias), HeadSink: f(in.HeadSink)}
}

// inputs32 builds the case's inputs as float32 tensors.
func (c *gqaCase) inputs32() (GQAAttributes, GQAInputs) {
	a := GQAAttributes{NumHeads: c.H, KVNumHeads: c.Hkv, Scale: c.Scale, Softcap: c.Softcap, LocalWindowSize: c.Window,
		DoRotary: c.Rotary, RotaryInterleaved: c.Interleaved, SmoothSoftmax: c.Smooth}
	qw := c.H * c.D
	if c.Packed {
		qw = (c.H + 2*c.Hkv) * c.D
	}
	in := GQAInputs{
		Query:               NewFloat32(c.Query, c.B, c.S, qw),
		SeqlensK:            NewInt32(c.Seqlens, c.B),
		TotalSequenceLength: NewInt32([]int32{int32(c.Total)}),
	}
	if !c.Packed {
		in.Key = NewFloat32(c.Key, c.B, c.S, c.Hkv*c.D)
		in.Value = NewFloat32(c.Value, c.B, c.S, c.Hkv*c.D)
	}
	if c.P > 0 {
		in.PastKey = NewFloat32(append([]float32(nil), c.PastKey...), c.B, c.Hkv, c.P, c.D)
		in.PastValue = NewFloat32(append([]float32(nil), c.PastValue...), c.B, c.Hkv, c.P, c.D)
	}
	if c.Rotary {
		in.CosCache = NewFloat32(c.Cos, len(c.Cos)/(c.RotaryDim/2), c.RotaryDim/2)
		in.SinCache = NewFloat32(c.Sin, len(c.Sin)/(c.RotaryDim/2), c.RotaryDim/2)
	}
	if c.HeadSink != nil {
		in.HeadSink = NewFloat32(c.HeadSink, c.H)
	}
	if c.Bias != nil {
		in.AttentionBias = NewFloat32(c.Bias, c.BiasShape...)
	}
	return a, in
}

// TestGQAAgainstORT runs the twenty ONNX Runtime cases on every
// implementation, with and without a shared buffer where the cache is
// static: the output within ONNX's tolerance of ONNX Runtime's (float16
// cases against ONNX Runtime's float16 run), and a float32 one within
// 1e-5 + 1e-4·|want|, the new present rows ONNX Runtime's
// (exactly, or close where both turned them), the past rows each entry
// keeps copied.
func TestGQAAgainstORT(t *testing.T) {
	cases := loadGQACases(t)
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := attention.NewBatched(2)
		defer e.Close()
		for _, c := range cases {
			for _, shared := range []bool{false, true} {
				if shared && c.Total > c.P {
					continue
				}
				t.Run(fmt.Sprintf("%s/shared=%v", c.Name, shared), func(t *testing.T) {
					a, in := c.inputs()
					out, err := RunGroupQueryAttention(e, a, in, GQAWant{SharedBuffer: shared})
					if err != nil {
						t.Fatal(err)
					}
					want := NewFloat32(c.Output, c.B, c.S, c.H*c.D)
					if c.F16 {
						want = toFloat16(want)
					}
					got := out.Output
					if c.Total == c.S && c.Window > 0 {
						// A padded prompt's padding rows under a window:
						// ONNX Runtime's differ between its own code
						// paths (see RunGroupQueryAttention); the rest
						// is compared.
						got, want = c.withoutPadding(got), c.withoutPadding(want)
					}
					compare(t, "output", got, want, false)
					if shared && (out.PresentKey != in.PastKey || out.PresentValue != in.PastValue) {
						t.Fatal("a shared buffer's presents are not the past tensors")
					}
					if fmt.Sprint(out.PresentKey.Shape) != fmt.Sprint(c.PresentShape) {
						t.Fatalf("present shape %v, want %v", out.PresentKey.Shape, c.PresentShape)
					}
					checkPresent(t, c, "present_key", out.PresentKey.Floats(), c.PresentNewKeys, c.PastKey)
					checkPresent(t, c, "present_value", out.PresentValue.Floats(), c.PresentNewValues, c.PastValue)
				})
			}
		}
	})
}

// withoutPadding returns a copy of output x ([B][S][H·D]) with the rows
// past each entry's length (a padded first prompt's padding) zero.
func (c *gqaCase) withoutPadding(x *Tensor) *Tensor {
	y := &Tensor{DType: x.DType, Shape: x.Shape, F32: slices.Clone(x.F32), F16: slices.Clone(x.F16)}
	w := c.H * c.D
	for b := range c.B {
		for s := int(c.Seqlens[b]) + 1; s < c.S; s++ {
			at := (b*c.S + s) * w
			if y.F32 != nil {
				clear(y.F32[at : at+w])
			}
			if y.F16 != nil {
				clear(y.F16[at : at+w])
			}
		}
	}
	return y
}

func checkPresent(t *testing.T, c gqaCase, name string, got, fresh, past []float32) {
	t.Helper()
	T := c.PresentShape[2]
	i := 0
	for b := range c.B {
		pb := int(c.Seqlens[b]) + 1 - c.S
		if c.Total == c.S {
			pb = 0 // a first prompt: every row, padding too
		}
		for h := range c.Hkv {
			for r := range pb + c.S {
				want := fresh[i : i+c.D]
				if r < pb {
					want = past[((b*c.Hkv+h)*c.P+r)*c.D:][:c.D]
				} else {
					i += c.D
				}
				// A turned row: within 2⁻²² of the row's largest element
				// (ONNX Runtime's rotation may fuse a product with the
				// sum); any other row exactly.
				tol := 0.0
				if c.Rotary && r >= pb {
					for _, w := range want {
						tol = max(tol, math.Abs(float64(w))*0x1p-22)
					}
				}
				for d, w := range want {
					g := got[((b*c.Hkv+h)*T+r)*c.D+d]
					if math.Abs(float64(g)-float64(w)) > tol {
						t.Fatalf("%s (%d,%d,%d)[%d] = %v, want %v", name, b, h, r, d, g, w)
					}
				}
			}
		}
	}
}

// TestGQAErrors checks RunGroupQueryAttention's refusals: none changes
// the past.
func TestGQAErrors(t *testing.T) {
	const B, S, H, Hkv, D, P = 1, 1, 4, 2, 8, 6
	q := NewFloat32(make([]float32, B*S*H*D), B, S, H*D)
	k := NewFloat32(make([]float32, B*S*Hkv*D), B, S, Hkv*D)
	past := NewFloat32(make([]float32, B*Hkv*P*D), B, Hkv, P, D)
	seq := NewInt32([]int32{5}, 1)
	tot := NewInt32([]int32{6})
	ok := GQAInputs{Query: q, Key: k, Value: k, PastKey: past, PastValue: past, SeqlensK: seq, TotalSequenceLength: tot}
	base := GQAAttributes{NumHeads: H, KVNumHeads: Hkv}
	if _, err := RunGroupQueryAttention(nil, base, ok, GQAWant{}); err != nil {
		t.Fatalf("the valid call: %v", err)
	}
	with := func(f func(*GQAInputs)) GQAInputs { in := ok; f(&in); return in }
	for _, tc := range []struct {
		name string
		a    GQAAttributes
		in   GQAInputs
		want GQAWant
		err  error
	}{
		{"heads", GQAAttributes{NumHeads: 3, KVNumHeads: 2}, ok, GQAWant{}, attention.ErrArgument},
		{"no seqlens", base, with(func(in *GQAInputs) { in.SeqlensK = nil }), GQAWant{}, attention.ErrArgument},
		{"key alone", base, with(func(in *GQAInputs) { in.Value = nil }), GQAWant{}, attention.ErrArgument},
		{"query rank", base, with(func(in *GQAInputs) { in.Query = NewFloat32(make([]float32, 32), 1, 32) }), GQAWant{}, attention.ErrShape},
		{"key width", base, with(func(in *GQAInputs) { in.Key = NewFloat32(make([]float32, 8), 1, 1, 8) }), GQAWant{}, attention.ErrShape},
		{"total", base, with(func(in *GQAInputs) { in.TotalSequenceLength = NewInt32([]int32{9}) }), GQAWant{}, attention.ErrArgument},
		{"seqlens past total", base, with(func(in *GQAInputs) { in.SeqlensK = NewInt32([]int32{6}, 1) }), GQAWant{}, attention.ErrArgument},
		{"seqlens type", base, with(func(in *GQAInputs) { in.SeqlensK = NewInt64([]int64{5}, 1) }), GQAWant{}, attention.ErrArgument},
		{"rotary without caches", GQAAttributes{NumHeads: H, KVNumHeads: Hkv, DoRotary: true}, ok, GQAWant{}, attention.ErrArgument},
		{"rotary caches short", GQAAttributes{NumHeads: H, KVNumHeads: Hkv, DoRotary: true}, with(func(in *GQAInputs) {
			in.CosCache, in.SinCache = NewFloat32(make([]float32, 8), 4, 2), NewFloat32(make([]float32, 8), 4, 2)
		}), GQAWant{}, attention.ErrArgument},
		{"shared without past", base, with(func(in *GQAInputs) {
			in.PastKey, in.PastValue, in.TotalSequenceLength, in.SeqlensK = nil, nil, NewInt32([]int32{1}), NewInt32([]int32{0}, 1)
		}), GQAWant{SharedBuffer: true}, attention.ErrArgument},
		{"bias shape", base, with(func(in *GQAInputs) { in.AttentionBias = NewFloat32(make([]float32, 4*5), 1, 4, 1, 5) }), GQAWant{}, attention.ErrShape},
		{"head sink shape", base, with(func(in *GQAInputs) { in.HeadSink = NewFloat32(make([]float32, 3), 3) }), GQAWant{}, attention.ErrShape},
		{"mixed types", base, with(func(in *GQAInputs) { in.Key = NewFloat16(make([]uint16, B*S*Hkv*D), B, S, Hkv*D) }), GQAWant{}, attention.ErrArgument},
	} {
		if _, err := RunGroupQueryAttention(nil, tc.a, tc.in, tc.want); !errors.Is(err, tc.err) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
		}
	}
}

// TestGQAFloat16 runs the ONNX Runtime cases with a past in a static cache
// with their inputs rounded to float16, on every implementation: the new
// present rows are those of the float32 call on the widened inputs,
// rounded once, where DoRotary's turned rows are rounded to float16 first
// (turned here, and given to the float32 call with DoRotary off), and a
// shared float16 buffer takes them; the output is that call's within a
// float16 unit (the float16 call reads the past as float16 rows, in
// kernels whose sums may round the last float32 bit otherwise, and a
// value near a float16 midpoint may then round either way).
func TestGQAFloat16(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) { gqaFloat16(t) })
}

func gqaFloat16(t *testing.T) {
	for _, c := range loadGQACases(t) {
		if c.Packed || c.P == 0 || c.Total > c.P {
			continue // a static case with a past: the shared buffer too
		}
		a, in32 := c.inputs32()
		in16 := in32.mapFloats(toFloat16)
		inW := in16.mapFloats(func(x *Tensor) *Tensor {
			if x == nil {
				return nil
			}
			return NewFloat32(x.Floats(), x.Shape...)
		})
		aW := a
		if a.DoRotary {
			aW.DoRotary = false
			turnRounded(t, c, inW)
		}
		want, err := RunGroupQueryAttention(nil, aW, inW, GQAWant{})
		if err != nil {
			t.Fatal(err)
		}
		for _, shared := range []bool{false, true} {
			got, err := RunGroupQueryAttention(nil, a, in16, GQAWant{SharedBuffer: shared})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range want.Output.F32 {
				g, w := float64(Float16ToFloat32(got.Output.F16[i])), float64(v)
				if !(math.Abs(g-w) <= 0x1p-10*math.Abs(w)+0x1p-24) {
					t.Fatalf("%s shared=%v: output %d = %v, want %v within a float16 unit", c.Name, shared, i, g, w)
				}
			}
			for i, v := range want.PresentKey.F32 {
				b := i / (c.Hkv * c.PresentShape[2] * c.D)
				r := i / c.D % c.PresentShape[2]
				if pb := int(c.Seqlens[b]) + 1 - c.S; r >= pb+c.S {
					continue // past the entry's rows
				}
				if got.PresentKey.F16[i] != Float32ToFloat16(v) {
					t.Fatalf("%s shared=%v: present_key %d %#04x, want %#04x", c.Name, shared, i, got.PresentKey.F16[i], Float32ToFloat16(v))
				}
			}
		}
	}
}

// turnRounded turns in's query and key rows (float32 tensors) as DoRotary
// does, at each entry's positions from its past length on, and rounds them
// to float16.
func turnRounded(t *testing.T, c gqaCase, in GQAInputs) {
	t.Helper()
	layout := attention.RotateHalf
	if c.Interleaved {
		layout = attention.RotateInterleaved
	}
	rot, err := attention.NewRotaryTable(in.CosCache.F32, in.SinCache.F32, c.RotaryDim, layout)
	if err != nil {
		t.Fatal(err)
	}
	pos := make([]int, c.B*c.S)
	for b := range c.B {
		for s := range c.S {
			pos[b*c.S+s] = int(c.Seqlens[b]) + 1 - c.S + s
		}
	}
	for _, x := range []struct {
		t     *Tensor
		heads int
	}{{in.Query, c.H}, {in.Key, c.Hkv}} {
		w := x.heads * c.D
		v, err := attention.NewTensorStrided(c.B, x.heads, c.S, c.D, c.S*w, c.D, w, x.t.F32)
		if err != nil {
			t.Fatal(err)
		}
		if err := rot.Apply(v, pos); err != nil {
			t.Fatal(err)
		}
		for i, f := range x.t.F32 {
			x.t.F32[i] = Float16ToFloat32(Float32ToFloat16(f))
		}
	}
}

// A token phase over a shared buffer allocates as many objects and about
// as many bytes at 16 past keys as at 4096, for float32 and float16, with
// and without rotary: nothing a call makes grows with the past, which is
// read in place.
func TestGQAAllocsDoNotGrowWithPast(t *testing.T) {
	e := attention.NewBatched(1)
	defer e.Close()
	const H, Hkv, D = 8, 2, 64
	for _, f := range []DType{Float32, Float16} {
		for _, rotary := range []bool{false, true} {
			allocs, bytes := map[int]float64{}, map[int]uint64{}
			for _, P := range []int{16, 4096} {
				r := testutil.Rand(uint64(P))
				T := P + 1
				in := GQAInputs{
					Query: randomTensor(r, f, 1, 1, H*D), Key: randomTensor(r, f, 1, 1, Hkv*D), Value: randomTensor(r, f, 1, 1, Hkv*D),
					PastKey: randomTensor(r, f, 1, Hkv, T, D), PastValue: randomTensor(r, f, 1, Hkv, T, D),
					SeqlensK: NewInt32([]int32{int32(P)}, 1), TotalSequenceLength: NewInt32([]int32{int32(T)}),
				}
				a := GQAAttributes{NumHeads: H, KVNumHeads: Hkv}
				if rotary {
					a.DoRotary = true
					in.CosCache, in.SinCache = randomTensor(r, f, T, D/2), randomTensor(r, f, T, D/2)
				}
				call := func() {
					if _, err := RunGroupQueryAttention(e, a, in, GQAWant{SharedBuffer: true}); err != nil {
						t.Fatal(err)
					}
				}
				allocs[P] = testing.AllocsPerRun(20, call)
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for range 20 {
					call()
				}
				runtime.ReadMemStats(&m1)
				bytes[P] = (m1.TotalAlloc - m0.TotalAlloc) / 20
			}
			if allocs[16] != allocs[4096] || bytes[4096] > bytes[16]+1024 {
				t.Errorf("%v, rotary %v: %v allocations and %d bytes per call at P = 16, %v and %d at P = 4096",
					f, rotary, allocs[16], bytes[16], allocs[4096], bytes[4096])
			}
			t.Logf("%v, rotary %v: %v allocations and %d bytes per call", f, rotary, allocs[16], bytes[16])
		}
	}
}
