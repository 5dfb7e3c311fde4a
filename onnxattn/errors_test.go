package onnxattn

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/glancelab/attention"
)

func zeros(shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return NewFloat32(make([]float32, n), shape...)
}

// Inputs that do not fit return a *ShapeError naming the input and its
// shape, or an ErrArgument error for attributes and values; none panics.
func TestShapeErrors(t *testing.T) {
	q4, k4, v4 := zeros(2, 4, 3, 8), zeros(2, 2, 5, 8), zeros(2, 2, 5, 6)
	q3, k3, v3 := zeros(2, 3, 32), zeros(2, 5, 16), zeros(2, 5, 12)
	a3 := Attributes{QNumHeads: 4, KVNumHeads: 2}
	shape := []struct {
		name  string
		a     Attributes
		in    Inputs
		input string // the input the error must name
		dims  string // and its shape
	}{
		{"Q rank 2", Attributes{}, Inputs{Q: zeros(3, 8), K: k4, V: v4}, "Q", "[3 8]"},
		{"Q rank 5", Attributes{}, Inputs{Q: zeros(1, 2, 4, 3, 8), K: k4, V: v4}, "Q", "[1 2 4 3 8]"},
		{"K rank", Attributes{}, Inputs{Q: q4, K: k3, V: v4}, "K", "[2 5 16]"},
		{"V rank", Attributes{}, Inputs{Q: q4, K: k4, V: v3}, "V", "[2 5 12]"},
		{"heads not dividing", Attributes{}, Inputs{Q: zeros(2, 3, 3, 8), K: k4, V: v4}, "Q", "[2 3 3 8]"},
		{"K head size", Attributes{}, Inputs{Q: q4, K: zeros(2, 2, 5, 7), V: v4}, "K", "[2 2 5 7]"},
		{"K batch", Attributes{}, Inputs{Q: q4, K: zeros(1, 2, 5, 8), V: v4}, "K", "[1 2 5 8]"},
		{"V length", Attributes{}, Inputs{Q: q4, K: k4, V: zeros(2, 2, 4, 6)}, "V", "[2 2 4 6]"},
		{"V heads", Attributes{}, Inputs{Q: q4, K: k4, V: zeros(2, 1, 5, 6)}, "V", "[2 1 5 6]"},
		{"4D q_num_heads", Attributes{QNumHeads: 2}, Inputs{Q: q4, K: k4, V: v4}, "Q", "[2 4 3 8]"},
		{"3D hidden", Attributes{QNumHeads: 5, KVNumHeads: 2}, Inputs{Q: q3, K: k3, V: v3}, "Q", "[2 3 32]"},
		{"3D K hidden", a3, Inputs{Q: q3, K: zeros(2, 5, 12), V: v3}, "K", "[2 5 12]"},
		{"3D V hidden", Attributes{QNumHeads: 4, KVNumHeads: 2}, Inputs{Q: q3, K: k3, V: zeros(2, 5, 13)}, "V", "[2 5 13]"},
		{"3D K batch", a3, Inputs{Q: q3, K: zeros(1, 5, 16), V: v3}, "K", "[1 5 16]"},
		{"3D V batch", a3, Inputs{Q: q3, K: k3, V: zeros(1, 5, 12)}, "V", "[1 5 12]"},
		{"3D V length", a3, Inputs{Q: q3, K: k3, V: zeros(2, 4, 12)}, "V", "[2 4 12]"},
		{"3D heads not dividing", Attributes{QNumHeads: 4, KVNumHeads: 3}, Inputs{Q: q3, K: zeros(2, 5, 24), V: zeros(2, 5, 9)}, "Q", "[2 3 32]"},
		{"data length", Attributes{}, Inputs{Q: NewFloat32(make([]float32, 10), 2, 4, 3, 8), K: k4, V: v4}, "Q", "[2 4 3 8]"},
		{"mask rank 5", Attributes{}, Inputs{Q: q4, K: k4, V: v4, AttnMask: zeros(1, 2, 4, 3, 5)}, "attn_mask", "[1 2 4 3 5]"},
		{"mask heads", Attributes{}, Inputs{Q: q4, K: k4, V: v4, AttnMask: zeros(2, 3, 3, 5)}, "attn_mask", "[2 3 3 5]"},
		{"mask rows", Attributes{}, Inputs{Q: q4, K: k4, V: v4, AttnMask: zeros(2, 5)}, "attn_mask", "[2 5]"},
		{"mask too long", Attributes{}, Inputs{Q: q4, K: k4, V: v4, AttnMask: zeros(3, 6)}, "attn_mask", "[3 6]"},
		{"mask shorter than nonpad", Attributes{}, Inputs{Q: q4, K: k4, V: v4, AttnMask: zeros(3, 3), NonpadKVSeqlen: NewInt64([]int64{4, 2}, 2)}, "attn_mask", "[3 3]"},
		{"past_key shape", Attributes{}, Inputs{Q: q4, K: k4, V: v4, PastKey: zeros(2, 2, 4, 7), PastValue: zeros(2, 2, 4, 6)}, "past_key", "[2 2 4 7]"},
		{"past_key rank", Attributes{}, Inputs{Q: q4, K: k4, V: v4, PastKey: zeros(2, 4, 16), PastValue: zeros(2, 2, 4, 6)}, "past_key", "[2 4 16]"},
		{"past lengths differ", Attributes{}, Inputs{Q: q4, K: k4, V: v4, PastKey: zeros(2, 2, 4, 8), PastValue: zeros(2, 2, 3, 6)}, "past_value", "[2 2 3 6]"},
		{"past_value head size", Attributes{}, Inputs{Q: q4, K: k4, V: v4, PastKey: zeros(2, 2, 4, 8), PastValue: zeros(2, 2, 4, 8)}, "past_value", "[2 2 4 8]"},
		{"nonpad shape", Attributes{}, Inputs{Q: q4, K: k4, V: v4, NonpadKVSeqlen: NewInt64([]int64{1, 2, 3}, 3)}, "nonpad_kv_seqlen", "[3]"},
	}
	for _, c := range shape {
		_, err := Run(nil, c.a, c.in, Want{Present: true, QKMatmulOutput: true})
		var se *ShapeError
		if !errors.As(err, &se) || !errors.Is(err, attention.ErrShape) {
			t.Errorf("%s: err = %v, want a *ShapeError", c.name, err)
			continue
		}
		if se.Input != c.input || fmt.Sprint(se.Shape) != c.dims || !strings.Contains(err.Error(), c.dims) {
			t.Errorf("%s: %v names %s %v, want %s %s", c.name, err, se.Input, se.Shape, c.input, c.dims)
		}
	}

	arg := []struct {
		name string
		a    Attributes
		in   Inputs
	}{
		{"no Q", Attributes{}, Inputs{K: k4, V: v4}},
		{"3D without heads", Attributes{}, Inputs{Q: q3, K: k3, V: v3}},
		{"K type", Attributes{}, Inputs{Q: q4, K: NewFloat16(make([]uint16, 160), 2, 2, 5, 8), V: v4}},
		{"Q int64", Attributes{}, Inputs{Q: NewInt64(make([]int64, 192), 2, 4, 3, 8), K: k4, V: v4}},
		{"past_key alone", Attributes{}, Inputs{Q: q4, K: k4, V: v4, PastKey: zeros(2, 2, 4, 8)}},
		{"nonpad too long", Attributes{}, Inputs{Q: q4, K: k4, V: v4, NonpadKVSeqlen: NewInt64([]int64{6, 2}, 2)}},
		{"nonpad negative", Attributes{}, Inputs{Q: q4, K: k4, V: v4, NonpadKVSeqlen: NewInt64([]int64{-1, 2}, 2)}},
		{"mask int64", Attributes{}, Inputs{Q: q4, K: k4, V: v4, AttnMask: NewInt64(make([]int64, 15), 3, 5)}},
		{"mode 4", Attributes{QKMatmulOutputMode: 4}, Inputs{Q: q4, K: k4, V: v4}},
		{"softcap < 0", Attributes{Softcap: -1}, Inputs{Q: q4, K: k4, V: v4}},
		{"softmax_precision", Attributes{SoftmaxPrecision: 7}, Inputs{Q: q4, K: k4, V: v4}},
	}
	for _, c := range arg {
		_, err := Run(nil, c.a, c.in, Want{})
		if !errors.Is(err, attention.ErrArgument) {
			t.Errorf("%s: err = %v, want ErrArgument", c.name, err)
		}
	}
}
