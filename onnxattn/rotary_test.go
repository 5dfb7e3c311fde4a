package onnxattn

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// TestRotaryConformance runs ONNX's 8 RotaryEmbedding cases on every
// implementation: the outputs are the expected ones bit for bit (the
// operator's float32 arithmetic, which the vectors reproduce exactly).
func TestRotaryConformance(t *testing.T) {
	cases := loadVectors(t, "testdata/onnx-rotary", 8)
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				var a RotaryAttributes
				for k, raw := range c.Attributes {
					var v int
					if err := json.Unmarshal(raw, &v); err != nil {
						t.Fatal(err)
					}
					switch k {
					case "interleaved":
						a.Interleaved = v != 0
					case "rotary_embedding_dim":
						a.RotaryEmbeddingDim = v
					case "num_heads":
						a.NumHeads = v
					default:
						t.Fatalf("attribute %q", k)
					}
				}
				ts, want := c.vectors(t, 4)
				got, err := RunRotaryEmbedding(a, RotaryInputs{X: ts[0], CosCache: ts[1], SinCache: ts[2], PositionIDs: ts[3]})
				if err != nil {
					t.Fatal(err)
				}
				compare(t, "Y", got, want, true)
			})
		}
	})
}

// TestRotaryErrors checks RunRotaryEmbedding's refusals.
func TestRotaryErrors(t *testing.T) {
	x := NewFloat32(make([]float32, 2*3*8), 1, 2, 3, 8)
	cos := NewFloat32(make([]float32, 10*4), 10, 4)
	pos := NewInt64([]int64{0, 1, 2}, 1, 3)
	for _, tc := range []struct {
		name string
		a    RotaryAttributes
		in   RotaryInputs
		want error
	}{
		{"no X", RotaryAttributes{}, RotaryInputs{CosCache: cos, SinCache: cos}, attention.ErrArgument},
		{"rank 2", RotaryAttributes{}, RotaryInputs{X: NewFloat32(make([]float32, 8), 1, 8), CosCache: cos, SinCache: cos, PositionIDs: pos}, attention.ErrShape},
		{"3D without num_heads", RotaryAttributes{}, RotaryInputs{X: NewFloat32(make([]float32, 48), 1, 3, 16), CosCache: cos, SinCache: cos, PositionIDs: pos}, attention.ErrArgument},
		{"odd rd", RotaryAttributes{RotaryEmbeddingDim: 3}, RotaryInputs{X: x, CosCache: cos, SinCache: cos, PositionIDs: pos}, attention.ErrArgument},
		{"rd over head", RotaryAttributes{RotaryEmbeddingDim: 10}, RotaryInputs{X: x, CosCache: cos, SinCache: cos, PositionIDs: pos}, attention.ErrArgument},
		{"cache width", RotaryAttributes{}, RotaryInputs{X: x, CosCache: NewFloat32(make([]float32, 30), 10, 3), SinCache: cos, PositionIDs: pos}, attention.ErrShape},
		{"position out", RotaryAttributes{}, RotaryInputs{X: x, CosCache: cos, SinCache: cos, PositionIDs: NewInt64([]int64{0, 10, 1}, 1, 3)}, attention.ErrArgument},
		{"negative position", RotaryAttributes{}, RotaryInputs{X: x, CosCache: cos, SinCache: cos, PositionIDs: NewInt64([]int64{-1, 0, 1}, 1, 3)}, attention.ErrArgument},
		{"positions shape", RotaryAttributes{}, RotaryInputs{X: x, CosCache: cos, SinCache: cos, PositionIDs: NewInt64([]int64{0, 1}, 1, 2)}, attention.ErrShape},
		{"no positions, 2D cache", RotaryAttributes{}, RotaryInputs{X: x, CosCache: cos, SinCache: cos}, attention.ErrShape},
		{"sin shape", RotaryAttributes{}, RotaryInputs{X: x, CosCache: cos, SinCache: NewFloat32(make([]float32, 36), 9, 4), PositionIDs: pos}, attention.ErrShape},
		{"mixed types", RotaryAttributes{}, RotaryInputs{X: x, CosCache: NewFloat16(make([]uint16, 40), 10, 4), SinCache: cos, PositionIDs: pos}, attention.ErrArgument},
		{"short data", RotaryAttributes{}, RotaryInputs{X: NewFloat32(make([]float32, 5), 1, 2, 3, 8), CosCache: cos, SinCache: cos, PositionIDs: pos}, attention.ErrShape},
	} {
		if _, err := RunRotaryEmbedding(tc.a, tc.in); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestRotaryFloat16 turns float16 inputs as the float32 ones widened from
// them, rounded once.
func TestRotaryFloat16(t *testing.T) {
	r := testutil.Rand(3)
	xs, cs, ss := testutil.Floats(r, 2*2*3*8, 2), testutil.Floats(r, 5*4, 1), testutil.Floats(r, 5*4, 1)
	h := func(x []float32) []uint16 {
		out := make([]uint16, len(x))
		for i, v := range x {
			out[i] = Float32ToFloat16(v)
		}
		return out
	}
	w := func(x []uint16) []float32 { return NewFloat16(x, len(x)).Floats() }
	pos := NewInt64([]int64{4, 0, 1, 3, 3, 2}, 2, 3)
	x16, c16, s16 := h(xs), h(cs), h(ss)
	got, err := RunRotaryEmbedding(RotaryAttributes{}, RotaryInputs{X: NewFloat16(x16, 2, 2, 3, 8), CosCache: NewFloat16(c16, 5, 4), SinCache: NewFloat16(s16, 5, 4), PositionIDs: pos})
	if err != nil {
		t.Fatal(err)
	}
	want, err := RunRotaryEmbedding(RotaryAttributes{}, RotaryInputs{X: NewFloat32(w(x16), 2, 2, 3, 8), CosCache: NewFloat32(w(c16), 5, 4), SinCache: NewFloat32(w(s16), 5, 4), PositionIDs: pos})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range want.F32 {
		if got.F16[i] != Float32ToFloat16(v) {
			t.Fatalf("element %d: %#04x, want %#04x", i, got.F16[i], Float32ToFloat16(v))
		}
	}
}
