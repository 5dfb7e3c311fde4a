package onnxattn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// cacheFromPast returns a cache of type typ holding the rows of past_key
// and past_value ([B][Hkv][P][d] each), with room for extra rows more.
func cacheFromPast(t testing.TB, pk, pv *Tensor, extra int, typ attention.KVType, opts ...attention.KVCacheOption) *attention.KVCache {
	t.Helper()
	B, H, P, D, Dv := pk.Shape[0], pk.Shape[1], pk.Shape[2], pk.Shape[3], pv.Shape[3]
	c, err := attention.NewKVCache(B, H, P+extra, D, Dv, typ, opts...)
	if err != nil {
		t.Fatal(err)
	}
	kf, vf := pk.Floats(), pv.Floats()
	for b := range B {
		if err := c.Append(b, kf[b*H*P*D:(b+1)*H*P*D], vf[b*H*P*Dv:(b+1)*H*P*Dv], P); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// held returns the keys (or values) c holds as a packed [B][Hkv][T][d]
// float32 slice, T the length of entry 0.
func held(c *attention.KVCache, values bool) []float32 {
	B, H, _, dk, dv := c.Shape()
	d, row := dk, c.Key
	if values {
		d, row = dv, c.Value
	}
	T := 0
	if B > 0 {
		T = c.Len(0)
	}
	out := make([]float32, B*H*T*d)
	for b := range B {
		for h := range H {
			for i := range T {
				row(out[((b*H+h)*T+i)*d:][:d], b, h, i)
			}
		}
	}
	return out
}

// withoutPast returns in without past_key and past_value.
func withoutPast(in Inputs) Inputs {
	in.PastKey, in.PastValue = nil, nil
	return in
}

// sameBits reports whether two float slices hold the same bits.
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// Every ONNX case with past_key/past_value also runs through RunCache, on
// a cache of the case's type (F16 for float16, exact since the values are
// float16 already) holding the past: Y and qk_matmul_output within the
// tolerances of TestConformance, and the cache afterwards holding
// present_key and present_value exactly.
func TestConformanceCache(t *testing.T) {
	var cases []*jsonCase
	for _, c := range loadCases(t) {
		if c.Inputs[4].DType != nil {
			cases = append(cases, c)
		}
	}
	if len(cases) != 20 {
		t.Fatalf("%d cases with past_key, want 20", len(cases))
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := attention.NewBatched(2)
		defer e.Close()
		for _, jc := range cases {
			t.Run(jc.Name, func(t *testing.T) {
				a, in, want := jc.decode(t)
				typ := attention.F32
				if in.K.DType == Float16 {
					typ = attention.F16
				}
				Skv := in.K.Shape[1]
				if len(in.K.Shape) == 4 {
					Skv = in.K.Shape[2]
				}
				c := cacheFromPast(t, in.PastKey, in.PastValue, Skv, typ)
				got, err := RunCache(e, c, a, withoutPast(in), Want{QKMatmulOutput: want[3] != nil})
				if err != nil {
					t.Fatal(err)
				}
				compare(t, "Y", got.Y, want[0], false)
				if want[3] != nil {
					compare(t, "qk_matmul_output", got.QKMatmulOutput, want[3], false)
				}
				for i, values := range []bool{false, true} {
					if w := want[1+i]; w != nil {
						compare(t, jc.Outputs[1+i].Name+" (the cache)", floatTensor(w.DType, held(c, values), w.Shape...), w, true)
					}
				}
			})
		}
	})
}

// pastCall is the shape of a node run step after step: each step's past is
// the present of the one before.
type pastCall struct {
	f                          DType
	threeD                     bool
	B, Hq, Hkv, Sq, Skv, D, Dv int
	maskRank                   int // 0: no attn_mask
	maskBool, maskShort        bool
	maskOnes                   [3]bool // leading mask dimensions of size 1
	a                          Attributes
}

func newPastCall(r *rand.Rand, big bool, mode int) pastCall {
	s := pastCall{f: []DType{Float32, Float16}[r.IntN(2)], threeD: r.IntN(2) == 0}
	s.B, s.Hkv = 1+r.IntN(2), 1+r.IntN(3)
	s.Hq = s.Hkv * (1 + r.IntN(3))
	s.Sq, s.Skv, s.D, s.Dv = 1+r.IntN(5), 1+r.IntN(6), 1+r.IntN(12), 1+r.IntN(12)
	if big { // the engine's block kernels (8 query rows and more per KV head) and split keys
		s.Sq, s.Skv, s.D, s.Dv = 1+r.IntN(20), 1+r.IntN(20), 8+r.IntN(40), 8+r.IntN(40)
	}
	if r.IntN(4) > 0 {
		s.maskRank = 1 + r.IntN(4)
		s.maskBool, s.maskShort = r.IntN(2) == 0, r.IntN(4) == 0
		for i := range s.maskOnes {
			s.maskOnes[i] = r.IntN(2) == 0
		}
	}
	s.a = Attributes{IsCausal: r.IntN(2) == 0, QKMatmulOutputMode: mode,
		Softcap: []float32{0, 0, 0.75, 4}[r.IntN(4)], Scale: []float32{0, 0, 0.3, -1.5}[r.IntN(4)]}
	if s.threeD {
		s.a.QNumHeads, s.a.KVNumHeads = s.Hq, s.Hkv
	}
	return s
}

func (s pastCall) String() string {
	return fmt.Sprintf("%v 3D=%v B%d Hq%d Hkv%d Sq%d Skv%d D%d Dv%d mask rank %d bool %v short %v ones %v %+v",
		s.f, s.threeD, s.B, s.Hq, s.Hkv, s.Sq, s.Skv, s.D, s.Dv, s.maskRank, s.maskBool, s.maskShort, s.maskOnes, s.a)
}

// inputs returns random Q, K, V and attn_mask of a step with a past of P
// rows.
func (s pastCall) inputs(r *rand.Rand, P int) Inputs {
	var in Inputs
	if s.threeD {
		in.Q, in.K, in.V = randomTensor(r, s.f, s.B, s.Sq, s.Hq*s.D), randomTensor(r, s.f, s.B, s.Skv, s.Hkv*s.D), randomTensor(r, s.f, s.B, s.Skv, s.Hkv*s.Dv)
	} else {
		in.Q, in.K, in.V = randomTensor(r, s.f, s.B, s.Hq, s.Sq, s.D), randomTensor(r, s.f, s.B, s.Hkv, s.Skv, s.D), randomTensor(r, s.f, s.B, s.Hkv, s.Skv, s.Dv)
	}
	if s.maskRank == 0 {
		return in
	}
	T := P + s.Skv
	full := []int{s.B, s.Hq, s.Sq, T}
	shape := slices.Clone(full[4-s.maskRank:])
	for i := range shape[:len(shape)-1] {
		if s.maskOnes[4-s.maskRank+i] {
			shape[i] = 1
		}
	}
	if s.maskShort {
		shape[len(shape)-1] = r.IntN(T + 1) // padded with −Inf
	}
	n := 1
	for _, x := range shape {
		n *= x
	}
	if s.maskBool {
		keep := make([]bool, n)
		for i := range keep {
			keep[i] = r.IntN(4) > 0
		}
		in.AttnMask = NewBool(keep, shape...)
		return in
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = 3 * (r.Float32() - 0.5)
		if r.IntN(6) == 0 {
			x[i] = negInf
		}
	}
	in.AttnMask = floatTensor(s.f, x, shape...)
	return in
}

// RunCache is Run with past tensors holding the cache's rows, step after
// step (a prefill, then decode steps), on random calls: 3D and 4D,
// grouped heads, causal with Sq ≠ Skv, masks of every rank, softcap,
// scale and modes 0 to 3. With an F32 cache, Y and qk_matmul_output are
// Run's bits (AttendCache reads the rows Attend reads in Run's
// concatenation, in the same order), and the cache holds present_key and
// present_value. With an F16 cache for float16 inputs, which stores them
// exactly, the 16-bit kernels may round differently: the results are
// within the reference's tolerances of naive.
func TestRunCacheMatchesRun(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 30
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(17)
		e := attention.NewBatched(2)
		defer e.Close()
		for i := range n {
			s := newPastCall(r, i%3 == 2, i%4)
			P0 := r.IntN(6)
			if i%3 == 2 {
				P0 = r.IntN(80)
			}
			const steps = 3
			typ := attention.F32
			if s.f == Float16 && i%2 == 1 {
				typ = attention.F16
			}
			pk, pv := randomTensor(r, s.f, s.B, s.Hkv, P0, s.D), randomTensor(r, s.f, s.B, s.Hkv, P0, s.Dv)
			c := cacheFromPast(t, pk, pv, steps*s.Skv, typ)
			for step := range steps {
				P := P0 + step*s.Skv
				in := s.inputs(r, P)
				in.PastKey, in.PastValue = pk, pv
				want, err := Run(e, s.a, in, Want{Present: true, QKMatmulOutput: true})
				if err != nil {
					t.Fatalf("%v step %d: Run: %v", s, step, err)
				}
				got, err := RunCache(e, c, s.a, withoutPast(in), Want{QKMatmulOutput: true})
				if err != nil {
					t.Fatalf("%v step %d: RunCache: %v", s, step, err)
				}
				if typ == attention.F32 {
					if !sameBits(got.Y.Floats(), want.Y.Floats()) || !sameBits(got.QKMatmulOutput.Floats(), want.QKMatmulOutput.Floats()) {
						t.Fatalf("%v P %d: RunCache's outputs are not Run's bits", s, P)
					}
				} else {
					rc := randomCase{a: s.a, in: in, f: s.f}
					y, qk := naive(s.a, in)
					near(t, rc, "Y", got.Y, y)
					near(t, rc, "qk_matmul_output", got.QKMatmulOutput, qk)
				}
				if !sameBits(held(c, false), want.PresentKey.Floats()) || !sameBits(held(c, true), want.PresentValue.Floats()) {
					t.Fatalf("%v P %d: the cache does not hold present_key and present_value", s, P)
				}
				pk, pv = want.PresentKey, want.PresentValue
			}
		}
	})
}

// cacheState is what a failed call must leave unchanged: every entry's
// position and length, and the rows held.
type cacheState struct {
	pos, n []int
	k, v   []float32
}

func stateOf(c *attention.KVCache) cacheState {
	B, _, _, _, _ := c.Shape()
	var s cacheState
	for b := range B {
		s.pos, s.n = append(s.pos, c.Pos(b)), append(s.n, c.Len(b))
	}
	if B > 0 && slices.Min(s.n) == slices.Max(s.n) {
		s.k, s.v = held(c, false), held(c, true)
	}
	return s
}

func (s cacheState) equal(o cacheState) bool {
	return slices.Equal(s.pos, o.pos) && slices.Equal(s.n, o.n) && sameBits(s.k, o.k) && sameBits(s.v, o.v)
}

// RunCache's errors: its own arguments, the cache's shape against K and V,
// unequal lengths, a full cache (a ring too), errors of the checks and of
// the engine; after each, the cache is unchanged.
func TestRunCacheErrors(t *testing.T) {
	q4, k4, v4 := zeros(2, 4, 3, 8), zeros(2, 2, 5, 8), zeros(2, 2, 5, 6)
	in := Inputs{Q: q4, K: k4, V: v4}
	newCache := func(batch, heads, capacity, dk, dv int, opts ...attention.KVCacheOption) *attention.KVCache {
		c, err := attention.NewKVCache(batch, heads, capacity, dk, dv, attention.F16, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for b := range batch {
			if err := c.Append(b, testutil.Floats(testutil.Rand(uint64(b)), heads*3*dk, 1), testutil.Floats(testutil.Rand(9), heads*3*dv, 1), 3); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	good := func() *attention.KVCache { return newCache(2, 2, 16, 8, 6) }
	unequal := good()
	if err := unequal.Truncate(1, 2); err != nil {
		t.Fatal(err)
	}
	closed := attention.NewBatched(1)
	closed.Close()
	shared := attention.NewBatched(2)
	defer shared.Close()
	for _, c := range []struct {
		name  string
		e     *attention.Batched
		c     *attention.KVCache
		in    Inputs
		want  Want
		is    error  // the sentinel the error must match
		input string // for a *ShapeError, the input it names
		a     Attributes
	}{
		{"nil cache", nil, nil, in, Want{}, attention.ErrArgument, "", Attributes{}},
		{"past_key given", nil, good(), Inputs{Q: q4, K: k4, V: v4, PastKey: zeros(2, 2, 3, 8), PastValue: zeros(2, 2, 3, 6)}, Want{}, attention.ErrArgument, "", Attributes{}},
		{"past_value given", nil, good(), Inputs{Q: q4, K: k4, V: v4, PastValue: zeros(2, 2, 3, 6)}, Want{}, attention.ErrArgument, "", Attributes{}},
		{"present wanted", nil, good(), in, Want{Present: true}, attention.ErrArgument, "", Attributes{}},
		{"nonpad_kv_seqlen", nil, good(), Inputs{Q: q4, K: k4, V: v4, NonpadKVSeqlen: NewInt64([]int64{8, 8}, 2)}, Want{}, attention.ErrArgument, "", Attributes{}},
		{"unequal lengths", nil, unequal, in, Want{}, attention.ErrArgument, "", Attributes{}},
		{"cache batch", nil, newCache(3, 2, 16, 8, 6), in, Want{}, attention.ErrShape, "K", Attributes{}},
		{"cache heads", nil, newCache(2, 1, 16, 8, 6), in, Want{}, attention.ErrShape, "K", Attributes{}},
		{"cache dk", nil, newCache(2, 2, 16, 4, 6), in, Want{}, attention.ErrShape, "K", Attributes{}},
		{"cache dv", nil, newCache(2, 2, 16, 8, 5), in, Want{}, attention.ErrShape, "V", Attributes{}},
		{"cache dk 3D", nil, newCache(2, 2, 16, 4, 6), Inputs{Q: zeros(2, 3, 32), K: zeros(2, 5, 16), V: zeros(2, 5, 12)}, Want{}, attention.ErrShape, "K", Attributes{QNumHeads: 4, KVNumHeads: 2}},
		{"K type", nil, good(), Inputs{Q: q4, K: NewFloat16(make([]uint16, 160), 2, 2, 5, 8), V: v4}, Want{}, attention.ErrArgument, "", Attributes{}},
		{"mask columns", nil, good(), Inputs{Q: q4, K: k4, V: v4, AttnMask: zeros(3, 9)}, Want{}, attention.ErrShape, "attn_mask", Attributes{}},
		{"full", nil, newCache(2, 2, 7, 8, 6), in, Want{}, attention.ErrCapacity, "", Attributes{}},
		{"full ring", nil, newCache(2, 2, 7, 8, 6, attention.WithRing()), in, Want{}, attention.ErrCapacity, "", Attributes{}},
		{"closed engine", closed, good(), in, Want{}, attention.ErrClosed, "", Attributes{}},
		{"closed engine, mode 0", closed, good(), in, Want{QKMatmulOutput: true}, attention.ErrClosed, "", Attributes{}},
	} {
		var before cacheState
		if c.c != nil {
			before = stateOf(c.c)
		}
		_, err := RunCache(c.e, c.c, c.a, c.in, c.want)
		if !errors.Is(err, c.is) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.is)
			continue
		}
		var se *ShapeError
		if c.input != "" && (!errors.As(err, &se) || se.Input != c.input || !slices.Equal(se.Shape, c.in.Input(c.input).Shape)) {
			t.Errorf("%s: %v does not name %s by its shape", c.name, err, c.input)
		}
		if c.c != nil && !stateOf(c.c).equal(before) {
			t.Errorf("%s: the failed call changed the cache", c.name)
		}
	}
	// The same call on a cache with room succeeds, on a nil engine and on
	// a shared one.
	for _, e := range []*attention.Batched{nil, shared} {
		c := good()
		if _, err := RunCache(e, c, Attributes{}, in, Want{QKMatmulOutput: true}); err != nil || c.Len(0) != 8 || c.Len(1) != 8 {
			t.Errorf("a good call: %v, lengths %d and %d", err, c.Len(0), c.Len(1))
		}
	}
}

// Input returns the named input (for the tests).
func (in Inputs) Input(name string) *Tensor {
	return map[string]*Tensor{"Q": in.Q, "K": in.K, "V": in.V, "attn_mask": in.AttnMask,
		"past_key": in.PastKey, "past_value": in.PastValue, "nonpad_kv_seqlen": in.NonpadKVSeqlen}[name]
}

// A past that no element backs (a cache of rows without elements) may not
// size qk_matmul_output beyond maxUnbacked per backed element: the error
// names the cache, by the shape of its held keys.
func TestRunCacheUnbackedPast(t *testing.T) {
	const P = maxUnbacked + 1
	c, err := attention.NewKVCache(1, 1, P+1, 0, 0, attention.F32)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(0, nil, nil, P); err != nil {
		t.Fatal(err)
	}
	in := Inputs{Q: zeros(1, 1, 1, 0), K: zeros(1, 1, 1, 0), V: zeros(1, 1, 1, 0)}
	_, err = RunCache(nil, c, Attributes{}, in, Want{QKMatmulOutput: true})
	var se *ShapeError
	if !errors.As(err, &se) || se.Input != "cache" || fmt.Sprint(se.Shape) != fmt.Sprint([]int{1, 1, P, 0}) || !strings.Contains(err.Error(), "qk_matmul_output") {
		t.Fatalf("err = %v, want a *ShapeError naming the cache [1 1 %d 0]", err, P)
	}
	if c.Len(0) != P {
		t.Fatalf("the refused call left %d rows, want %d", c.Len(0), P)
	}
	// Without qk_matmul_output nothing is sized by the past.
	if _, err := RunCache(nil, c, Attributes{}, in, Want{}); err != nil || c.Len(0) != P+1 {
		t.Fatalf("err = %v, %d rows", err, c.Len(0))
	}
}

// A decode step's allocations do not grow with the past: the same count
// at P = 16 and P = 4096, for float16 and float32 models, with and
// without a mask and qk_matmul_output.
func TestRunCacheAllocs(t *testing.T) {
	e := attention.NewBatched(1)
	defer e.Close()
	for _, f := range []DType{Float16, Float32} {
		for _, withMask := range []bool{false, true} {
			allocs := map[int]float64{}
			for _, P := range []int{16, 4096} {
				const Hq, Hkv, D = 8, 2, 64
				r := testutil.Rand(uint64(P))
				typ := attention.F32
				if f == Float16 {
					typ = attention.F16
				}
				c := cacheFromPast(t, randomTensor(r, f, 1, Hkv, P, D), randomTensor(r, f, 1, Hkv, P, D), 1, typ)
				in := Inputs{Q: randomTensor(r, f, 1, Hq, 1, D), K: randomTensor(r, f, 1, Hkv, 1, D), V: randomTensor(r, f, 1, Hkv, 1, D)}
				if withMask {
					in.AttnMask = randomTensor(r, f, 1, P+1)
				}
				want := Want{QKMatmulOutput: withMask}
				allocs[P] = testing.AllocsPerRun(20, func() {
					if _, err := RunCache(e, c, Attributes{IsCausal: true}, in, want); err != nil {
						t.Fatal(err)
					}
					if err := c.Truncate(0, P); err != nil {
						t.Fatal(err)
					}
				})
			}
			if allocs[16] != allocs[4096] {
				t.Errorf("%v, mask %v: %v allocations per call at P = 16, %v at P = 4096", f, withMask, allocs[16], allocs[4096])
			}
			t.Logf("%v, mask %v: %v allocations per call", f, withMask, allocs[16])
		}
	}
}

// BenchmarkRunCache times a float16 decode step (one query and one new
// key per sequence, 32 query heads over 8 KV heads of 128, a past of
// 4096 rows) through RunCache over an F16 cache and through Run with
// past_key/past_value (and present_key/present_value, which the next step
// would take as its past).
func BenchmarkRunCache(b *testing.B) {
	const Hq, Hkv, D, P = 32, 8, 128, 4096
	r := testutil.Rand(5)
	pk, pv := randomTensor(r, Float16, 1, Hkv, P, D), randomTensor(r, Float16, 1, Hkv, P, D)
	in := Inputs{Q: randomTensor(r, Float16, 1, Hq, 1, D), K: randomTensor(r, Float16, 1, Hkv, 1, D), V: randomTensor(r, Float16, 1, Hkv, 1, D)}
	a := Attributes{IsCausal: true}
	testutil.ForEachImplB(b, func(b *testing.B) {
		e := attention.NewBatched(1)
		defer e.Close()
		b.Run("method=RunCache", func(b *testing.B) {
			c := cacheFromPast(b, pk, pv, 1, attention.F16)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := RunCache(e, c, a, in, Want{}); err != nil {
					b.Fatal(err)
				}
				if err := c.Truncate(0, P); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("method=Run", func(b *testing.B) {
			past := in
			past.PastKey, past.PastValue = pk, pv
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(e, a, past, Want{Present: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
