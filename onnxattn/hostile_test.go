package onnxattn

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"testing"

	"github.com/glancelab/attention"
)

// Dimensions whose products wrap an int around to 0, written so that they
// compile where int has 32 bits: wrapDim·4 and halfDim·halfDim are 2^64
// (2^32 on 32-bit platforms).
const (
	wrapDim = 1 << (bits.UintSize - 2)
	halfDim = 1 << (bits.UintSize / 2)
)

// bigDim is 2^36 where an int holds it, else the largest int: a dimension
// no slice can have.
const bigDim = int(min(int64(1)<<36, math.MaxInt))

// Len counts the elements exactly or says -1: a product that overflows
// must not wrap around to a small count.
func TestLenOverflow(t *testing.T) {
	for _, c := range []struct {
		shape []int
		want  int
	}{
		{nil, 1},
		{[]int{3, 0, 5}, 0},
		{[]int{2, 3, 4}, 24},
		{[]int{math.MaxInt}, math.MaxInt},
		{[]int{1, 1, wrapDim, 4}, -1},
		{[]int{halfDim, halfDim}, -1},
		{[]int{wrapDim, 4, 0}, 0},
		{[]int{math.MaxInt, 2}, -1},
		{[]int{3, -1}, -1},
		{[]int{0, -1}, -1},
	} {
		if got := NewFloat32(nil, c.shape...).Len(); got != c.want {
			t.Errorf("Len of %v = %d, want %d", c.shape, got, c.want)
		}
	}
}

// runHostile runs one call and returns its error; a panic fails the test
// with the call named.
func runHostile(t *testing.T, name string, a Attributes, in Inputs, want Want) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: panic: %v", name, p)
		}
	}()
	_, err = Run(nil, a, in, want)
	return err
}

// wantShapeError fails unless err is a *ShapeError naming input.
func wantShapeError(t *testing.T, name string, err error, input string) {
	t.Helper()
	var se *ShapeError
	if !errors.As(err, &se) || !errors.Is(err, attention.ErrShape) {
		t.Errorf("%s: err = %v (%T), want a *onnxattn.ShapeError", name, err, err)
		return
	}
	if se.Input != input {
		t.Errorf("%s: %v names %s, want %s", name, err, se.Input, input)
	}
}

// A past_key whose element count wraps around to 0 is refused, not
// concatenated.
func TestPastKeyLengthOverflow(t *testing.T) {
	for _, want := range []Want{{}, {Present: true}, {Present: true, QKMatmulOutput: true}} {
		in := Inputs{Q: zeros(1, 1, 1, 4), K: zeros(1, 1, 1, 4), V: zeros(1, 1, 1, 4),
			PastKey: NewFloat32(nil, 1, 1, wrapDim, 4), PastValue: NewFloat32(nil, 1, 1, wrapDim, 4)}
		err := runHostile(t, fmt.Sprint(want), Attributes{}, in, want)
		wantShapeError(t, fmt.Sprint(want), err, "past_key")
	}
}

// A v_head_size that no element backs (V and past_value empty) may not
// size Y beyond maxUnbacked per backed row, nor overflow its strides.
func TestUnbackedValueHeadSize(t *testing.T) {
	// Batch 0: Y is empty, but [0, 2, 3, wrapDim] has no strides that fit.
	err := runHostile(t, "batch 0", Attributes{}, Inputs{Q: zeros(0, 2, 3, 4), K: zeros(0, 1, 5, 4), V: NewFloat32(nil, 0, 1, 5, wrapDim)}, Want{})
	wantShapeError(t, "batch 0", err, "V")

	// No keys: Y [1, 1, 1, 2^36] would be 256 GB of zeros.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = runHostile(t, "no keys", Attributes{}, Inputs{Q: zeros(1, 1, 1, 4), K: zeros(1, 1, 0, 4), V: NewFloat32(nil, 1, 1, 0, bigDim)}, Want{})
	runtime.ReadMemStats(&after)
	wantShapeError(t, "no keys", err, "V")
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing v_head_size %d allocated %d bytes", bigDim, n)
	}

	// At the bound, every backed row gets its zeros; one past it, refused.
	for _, Dv := range []int{maxUnbacked, maxUnbacked + 1} {
		in := Inputs{Q: zeros(2, 1, 3, 4), K: zeros(2, 1, 0, 4), V: NewFloat32(nil, 2, 1, 0, Dv)}
		out, err := Run(nil, Attributes{}, in, Want{Present: true})
		if Dv > maxUnbacked {
			wantShapeError(t, fmt.Sprint("v_head_size ", Dv), err, "V")
			continue
		}
		if err != nil || len(out.Y.F32) != 2*3*Dv || out.Y.F32[len(out.Y.F32)-1] != 0 {
			t.Fatalf("v_head_size %d: %v %v", Dv, out.Y, err)
		}
	}
}

// Heads and query lengths that no element backs (head_size 0, so Q holds
// nothing) are bounded in the same way, together.
func TestUnbackedQueryShape(t *testing.T) {
	for _, c := range []struct {
		Hq, Sq int
		ok     bool
	}{{256, 256, true}, {256, 257, false}, {1 << 16, 1 << 16, false}, {wrapDim, 1, false}} {
		name := fmt.Sprintf("Q [1 %d %d 0]", c.Hq, c.Sq)
		in := Inputs{Q: NewFloat32(nil, 1, c.Hq, c.Sq, 0), K: zeros(1, 1, 3, 0), V: NewFloat32([]float32{1, 2, 3, 4, 5, 6}, 1, 1, 3, 2)}
		if !c.ok {
			wantShapeError(t, name, runHostile(t, name, Attributes{}, in, Want{}), "Q")
			continue
		}
		// Every score is 0: each row is the mean of the value rows.
		out, err := Run(nil, Attributes{}, in, Want{})
		if err != nil || len(out.Y.F32) != c.Hq*c.Sq*2 {
			t.Fatalf("%s: %v", name, err)
		}
		for i := 0; i < len(out.Y.F32); i += 2 {
			if y := out.Y.F32[i : i+2]; math.Abs(float64(y[0])-3) > 1e-5 || math.Abs(float64(y[1])-4) > 1e-5 {
				t.Fatalf("%s: Y row %d = %v, want [3 4]", name, i/2, y)
			}
		}
	}
}

// An empty batch of realistic sizes is no problem: every output empty,
// of the right shape.
func TestEmptyBatch(t *testing.T) {
	in := Inputs{Q: zeros(0, 32, 4096, 128), K: zeros(0, 8, 4096, 128), V: zeros(0, 8, 4096, 64),
		PastKey: zeros(0, 8, 4096, 128), PastValue: zeros(0, 8, 4096, 64), AttnMask: NewBool(nil, 0, 32, 4096, 8192),
		NonpadKVSeqlen: NewInt64(nil, 0)}
	out, err := Run(attention.NewBatched(2), Attributes{}, in, Want{Present: true, QKMatmulOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(out.Y.Shape, out.PresentKey.Shape, out.PresentValue.Shape, out.QKMatmulOutput.Shape)
	if want := "[0 32 4096 64] [0 8 8192 128] [0 8 8192 64] [0 32 4096 8192]"; got != want {
		t.Fatalf("shapes %s, want %s", got, want)
	}
}

// Shapes whose sizes do not fit in an int, in every input and through
// every derived size, return a *ShapeError naming the input.
func TestHugeShapes(t *testing.T) {
	q, k, v := zeros(1, 1, 1, 4), zeros(1, 1, 1, 4), zeros(1, 1, 1, 4)
	all := Want{Present: true, QKMatmulOutput: true}
	for _, c := range []struct {
		name  string
		a     Attributes
		in    Inputs
		want  Want
		input string
	}{
		{"Q count wraps to 0", Attributes{}, Inputs{Q: NewFloat32(nil, 1, 1, halfDim, halfDim), K: NewFloat32(nil, 1, 1, 0, halfDim), V: zeros(1, 1, 0, 1)}, Want{}, "Q"},
		{"Q heads wrap to 0", Attributes{}, Inputs{Q: NewFloat32(nil, 1, halfDim, halfDim, 4), K: k, V: v}, Want{}, "Q"},
		{"K count wraps to 0", Attributes{}, Inputs{Q: q, K: NewFloat32(nil, 1, 1, wrapDim, 4), V: NewFloat32(nil, 1, 1, wrapDim, 4)}, Want{}, "K"},
		{"mask count wraps to 0", Attributes{}, Inputs{Q: q, K: k, V: v, AttnMask: NewBool(nil, halfDim, halfDim)}, Want{}, "attn_mask"},
		{"empty Q beyond an int", Attributes{}, Inputs{Q: NewFloat32(nil, 0, halfDim, halfDim, 4), K: zeros(0, 1, 1, 4), V: zeros(0, 1, 1, 4)}, Want{}, "Q"},
		{"total length overflows", Attributes{}, Inputs{Q: zeros(0, 1, 1, 1), K: NewFloat32(nil, 0, 1, math.MaxInt, 1), V: NewFloat32(nil, 0, 1, math.MaxInt, 1),
			PastKey: NewFloat32(nil, 0, 1, math.MaxInt, 1), PastValue: NewFloat32(nil, 0, 1, math.MaxInt, 1)}, all, "K"},
		{"3D kv_num_heads·head_size overflows", Attributes{QNumHeads: 1, KVNumHeads: wrapDim}, Inputs{Q: zeros(0, 1, 4), K: zeros(0, 1, 0), V: zeros(0, 1, 0)}, Want{}, "K"},
		{"3D q_num_heads no element backs", Attributes{QNumHeads: wrapDim, KVNumHeads: 1}, Inputs{Q: zeros(1, 1, 0), K: zeros(1, 1, 0), V: zeros(1, 1, 0)}, all, "Q"},
		{"qk_matmul_output overflows", Attributes{}, Inputs{Q: zeros(1, 1, 3, 0), K: NewFloat32(nil, 1, 1, wrapDim, 0), V: NewFloat32(nil, 1, 1, wrapDim, 0)}, all, "K"},
		{"short mask bias overflows", Attributes{}, Inputs{Q: zeros(1, 1, 3, 0), K: NewFloat32(nil, 1, 1, wrapDim, 0), V: NewFloat32(nil, 1, 1, wrapDim, 0),
			AttnMask: NewBool(nil, 3, 0)}, Want{}, "K"},
		{"qk_matmul_output unbacked", Attributes{}, Inputs{Q: zeros(1, 1, 3, 0), K: NewFloat32(nil, 1, 1, bigDim, 0), V: NewFloat32(nil, 1, 1, bigDim, 0)}, Want{QKMatmulOutput: true}, "K"},
	} {
		err := runHostile(t, c.name, c.a, c.in, c.want)
		wantShapeError(t, c.name, err, c.input)
	}
}
