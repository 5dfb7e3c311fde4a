package onnxattn

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// loadVectors reads the JSON cases of dir, each checked against the
// sha256 its README lists; want is how many there must be.
func loadVectors(t *testing.T, dir string, want int) []*jsonCase {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sums := regexp.MustCompile(`(?m)^([0-9a-f]{64})  (\S+\.json)$`).FindAllStringSubmatch(string(readme), -1)
	if len(sums) != want {
		t.Fatalf("%s: README lists %d cases, want %d", dir, len(sums), want)
	}
	var cases []*jsonCase
	for _, s := range sums {
		raw, err := os.ReadFile(filepath.Join(dir, s[2]))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(raw); hex.EncodeToString(h[:]) != s[1] {
			t.Fatalf("%s: sha256 %x, want %s", s[2], h, s[1])
		}
		c := new(jsonCase)
		if err := json.Unmarshal(raw, c); err != nil {
			t.Fatalf("%s: %v", s[2], err)
		}
		cases = append(cases, c)
	}
	return cases
}

// vectors decodes a vector case's n inputs (nil where absent) and its
// first output.
func (c *jsonCase) vectors(t *testing.T, n int) ([]*Tensor, *Tensor) {
	t.Helper()
	ts := make([]*Tensor, n)
	for i, j := range c.Inputs {
		x, err := j.tensor()
		if err != nil {
			t.Fatal(err)
		}
		ts[i] = x
	}
	want, err := c.Outputs[0].tensor()
	if err != nil {
		t.Fatal(err)
	}
	return ts, want
}

// TestScatterConformance runs ONNX's 3 TensorScatter cases: the outputs
// exactly (the operator only moves values).
func TestScatterConformance(t *testing.T) {
	for _, c := range loadVectors(t, "testdata/onnx-tensorscatter", 3) {
		t.Run(c.Name, func(t *testing.T) {
			var a ScatterAttributes
			for k, raw := range c.Attributes {
				var err error
				switch k {
				case "mode":
					err = json.Unmarshal(raw, &a.Mode)
				case "axis":
					err = json.Unmarshal(raw, &a.Axis)
				default:
					t.Fatalf("attribute %q", k)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			ts, want := c.vectors(t, 3)
			got, err := RunTensorScatter(a, ScatterInputs{PastCache: ts[0], Update: ts[1], WriteIndices: ts[2]})
			if err != nil {
				t.Fatal(err)
			}
			compare(t, "present_cache", got, want, true)
		})
	}
}

// TestScatterErrors checks TensorScatter's refusals, and that a refused
// in-place call writes nothing.
func TestScatterErrors(t *testing.T) {
	cache := NewFloat32(make([]float32, 2*4*3), 2, 4, 3)
	upd := NewFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 1, 3)
	for _, tc := range []struct {
		name string
		a    ScatterAttributes
		upd  *Tensor
		wi   *Tensor
		want error
	}{
		{"axis 2 of 3 ok shape but index past", ScatterAttributes{Axis: -2}, upd, NewInt64([]int64{4, 0}, 2), attention.ErrArgument},
		{"negative index", ScatterAttributes{}, upd, NewInt64([]int64{-1, 0}, 2), attention.ErrArgument},
		{"circular index past", ScatterAttributes{Mode: "circular"}, upd, NewInt64([]int64{4, 0}, 2), attention.ErrArgument},
		{"mode", ScatterAttributes{Mode: "ring"}, upd, nil, attention.ErrArgument},
		{"batch axis", ScatterAttributes{Axis: -3}, upd, nil, attention.ErrArgument},
		{"axis out", ScatterAttributes{Axis: 3}, upd, nil, attention.ErrArgument},
		{"update rank", ScatterAttributes{}, NewFloat32(make([]float32, 6), 2, 3), nil, attention.ErrShape},
		{"update width", ScatterAttributes{}, NewFloat32(make([]float32, 8), 2, 1, 4), nil, attention.ErrShape},
		{"update too long", ScatterAttributes{}, NewFloat32(make([]float32, 30), 2, 5, 3), nil, attention.ErrShape},
		{"indices shape", ScatterAttributes{}, upd, NewInt64([]int64{0}, 1), attention.ErrShape},
		{"indices type", ScatterAttributes{}, upd, NewFloat32([]float32{0, 0}, 2), attention.ErrArgument},
		{"update type", ScatterAttributes{}, NewInt64(make([]int64, 6), 2, 1, 3), nil, attention.ErrArgument},
	} {
		if err := TensorScatterInPlace(tc.a, cache, tc.upd, tc.wi); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		for _, v := range cache.F32 {
			if v != 0 {
				t.Fatalf("%s: a refused call wrote %v", tc.name, cache.F32)
			}
		}
	}
}

// TestScatterDecode runs the decode pattern TensorScatter exists for: one
// key and one value buffer of the maximum length, each step's rows
// scattered in place at each entry's own length, then Attention-24 over
// the whole buffers with nonpad_kv_seqlen, which reads only the valid
// rows. It must give what Run gives over the past and the new rows as
// past_key/past_value (the same rows): the buffers are never copied.
func TestScatterDecode(t *testing.T) {
	r := testutil.Rand(4)
	const B, H, Hkv, maxS, D = 2, 4, 2, 12, 16
	kbuf := NewFloat32(make([]float32, B*Hkv*maxS*D), B, Hkv, maxS, D)
	vbuf := NewFloat32(make([]float32, B*Hkv*maxS*D), B, Hkv, maxS, D)
	lens := []int64{3, 5} // ragged: each entry's valid rows so far
	for b := range B {
		for h := range Hkv {
			for s := range int(lens[b]) {
				copy(kbuf.F32[((b*Hkv+h)*maxS+s)*D:][:D], testutil.Floats(r, D, 1))
				copy(vbuf.F32[((b*Hkv+h)*maxS+s)*D:][:D], testutil.Floats(r, D, 1))
			}
		}
	}
	e := attention.NewBatched(1)
	defer e.Close()
	for step := range 4 {
		k := NewFloat32(testutil.Floats(r, B*Hkv*D, 1), B, Hkv, 1, D)
		v := NewFloat32(testutil.Floats(r, B*Hkv*D, 1), B, Hkv, 1, D)
		q := NewFloat32(testutil.Floats(r, B*H*D, 1), B, H, 1, D)
		wi := NewInt64(append([]int64(nil), lens...), B)
		if err := TensorScatterInPlace(ScatterAttributes{}, kbuf, k, wi); err != nil {
			t.Fatal(err)
		}
		if err := TensorScatterInPlace(ScatterAttributes{}, vbuf, v, wi); err != nil {
			t.Fatal(err)
		}
		nonpad := make([]int64, B)
		for b := range B {
			nonpad[b] = lens[b] + 1
		}
		got, err := Run(e, Attributes{IsCausal: true}, Inputs{Q: q, K: kbuf, V: vbuf, NonpadKVSeqlen: NewInt64(nonpad, B)}, Want{})
		if err != nil {
			t.Fatal(err)
		}
		// The reference: each entry alone, its valid rows as K and V.
		for b := range B {
			n := int(nonpad[b])
			kb := make([]float32, 0, Hkv*n*D)
			vb := make([]float32, 0, Hkv*n*D)
			for h := range Hkv {
				kb = append(kb, kbuf.F32[((b*Hkv+h)*maxS)*D:][:n*D]...)
				vb = append(vb, vbuf.F32[((b*Hkv+h)*maxS)*D:][:n*D]...)
			}
			qb := NewFloat32(q.F32[b*H*D:(b+1)*H*D], 1, H, 1, D)
			// One query row, no past: it sees every row either way.
			want, err := Run(e, Attributes{}, Inputs{Q: qb, K: NewFloat32(kb, 1, Hkv, n, D), V: NewFloat32(vb, 1, Hkv, n, D)}, Want{})
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range want.Y.F32 {
				if g := got.Y.F32[b*H*D+i]; g != x {
					t.Fatalf("step %d entry %d element %d: %v, want %v", step, b, i, g, x)
				}
			}
		}
		for b := range B {
			lens[b]++
		}
	}
}

// TestScatterDecodeFloat16 runs Attention-24's decode pattern over float16
// buffers, which Run reads in place (runHeld16): on every implementation,
// over ragged lengths, grouped heads, one to three query rows, causal or
// not, softcap and scale, Y is within a float16 unit of Run's over the
// same call in float32 on the widened values (the path that widens): the
// two are within the float32 bounds of each other, and a value near a
// float16 midpoint may round either way. With attn_mask, past_key or an
// optional output the call takes the widening path itself.
func TestScatterDecodeFloat16(t *testing.T) {
	const B, Hkv, maxS, D = 3, 2, 40, 24
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := attention.NewBatched(2)
		defer e.Close()
		r := testutil.Rand(8)
		for _, tc := range []struct {
			H, Sq   int
			nonpad  []int64
			a       Attributes
			present bool
		}{
			{H: 4, Sq: 1, nonpad: []int64{1, 17, 40}, a: Attributes{IsCausal: true}},
			{H: 2, Sq: 3, nonpad: []int64{3, 9, 33}, a: Attributes{IsCausal: true, Softcap: 2}},
			{H: 6, Sq: 2, nonpad: []int64{0, 12, 40}, a: Attributes{Scale: 0.3}},
			{H: 4, Sq: 2, nonpad: []int64{5, 6, 7}, a: Attributes{IsCausal: true}, present: true},
		} {
			k32 := NewFloat32(testutil.Floats(r, B*Hkv*maxS*D, 1), B, Hkv, maxS, D)
			v32 := NewFloat32(testutil.Floats(r, B*Hkv*maxS*D, 1), B, Hkv, maxS, D)
			q32 := NewFloat32(testutil.Floats(r, B*tc.H*tc.Sq*D, 1), B, tc.H, tc.Sq, D)
			in16 := Inputs{Q: toFloat16(q32), K: toFloat16(k32), V: toFloat16(v32), NonpadKVSeqlen: NewInt64(tc.nonpad, B)}
			widen := func(x *Tensor) *Tensor { return NewFloat32(x.Floats(), x.Shape...) }
			in32 := Inputs{Q: widen(in16.Q), K: widen(in16.K), V: widen(in16.V), NonpadKVSeqlen: in16.NonpadKVSeqlen}
			want, err := Run(e, tc.a, in32, Want{Present: tc.present})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Run(e, tc.a, in16, Want{Present: tc.present})
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range want.Y.F32 {
				g := float64(Float16ToFloat32(got.Y.F16[i]))
				if w := float64(x); !(math.Abs(g-w) <= 0x1p-10*math.Abs(w)+0x1p-24) {
					t.Fatalf("%+v: Y[%d] = %v, want %v within a float16 unit", tc.a, i, g, w)
				}
			}
			if tc.present && !slices.Equal(got.PresentKey.F16, in16.K.F16) {
				t.Fatalf("%+v: present_key is not K", tc.a)
			}
		}
	})
}

// BenchmarkScatterDecode times Attention-24's decode step over a cache
// buffer of 4096 rows (32 query heads on 8 KV heads, d 128, 4091 rows
// valid, causal) in float32 and in float16: the float16 buffers are read
// in place, not widened (see runHeld16).
func BenchmarkScatterDecode(b *testing.B) {
	const H, Hkv, D, T = 32, 8, 128, 4096
	r := testutil.Rand(1)
	q := NewFloat32(testutil.Floats(r, H*D, 1), 1, H, 1, D)
	k := NewFloat32(testutil.Floats(r, Hkv*T*D, 1), 1, Hkv, T, D)
	v := NewFloat32(testutil.Floats(r, Hkv*T*D, 1), 1, Hkv, T, D)
	e := attention.NewBatched(1)
	defer e.Close()
	for _, f16 := range []bool{false, true} {
		in := Inputs{Q: q, K: k, V: v, NonpadKVSeqlen: NewInt64([]int64{T - 5}, 1)}
		name := "float32"
		if f16 {
			in.Q, in.K, in.V, name = toFloat16(q), toFloat16(k), toFloat16(v), "float16"
		}
		b.Run("type="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(e, Attributes{IsCausal: true}, in, Want{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
