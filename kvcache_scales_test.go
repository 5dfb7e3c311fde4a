package attention

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// ortCase is one case of testdata/ort-int8/cases.json (see gen.js there):
// ONNX Runtime's GroupQueryAttention over an int8 cache with static
// scales, its inputs and what it wrote.
type ortCase struct {
	Name                   string
	B, S, P, H, Hkv, D     int
	Scale                  float32
	KQuant, VQuant         string
	Query, Key, Value      []float32
	PastKey, PastValue     []int8
	KScale, VScale, Output []float32
	PresentKey             []int8
	PresentValue           []int8
}

func loadORTCases(t *testing.T) []ortCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/ort-int8/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Onnxruntime string
		Cases       []ortCase
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) != 6 {
		t.Fatalf("%d cases, want 6", len(f.Cases))
	}
	return f.Cases
}

// entryRows returns entry b's rows of x, laid out [B][S][heads·D] as ONNX
// Runtime's query, key and value, as [heads][S][D].
func entryRows(x []float32, b, S, heads, D int) []float32 {
	out := make([]float32, 0, heads*S*D)
	for h := range heads {
		for s := range S {
			out = append(out, x[((b*S+s)*heads+h)*D:][:D]...)
		}
	}
	return out
}

// TestORTInt8Cache reads ONNX Runtime's int8 caches with static scales
// (per tensor and per channel) on every implementation: the past rows go
// in by AppendI8, the step's new rows by Append, which must store the
// bytes ONNX Runtime stored; Key and Value must give its dequantised
// rows exactly; and AttendCache, Memory.Attend and Memory.AttendMany must
// agree with the exact attention over those rows within the float32
// bound, as ONNX Runtime's own output does.
func TestORTInt8Cache(t *testing.T) {
	cases := loadORTCases(t)
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := NewBatched(2)
		defer e.Close()
		for _, oc := range cases {
			t.Run(oc.Name, func(t *testing.T) { checkORTCase(t, e, oc) })
		}
	})
}

func checkORTCase(t *testing.T, e *Batched, oc ortCase) {
	B, S, P, H, Hkv, D := oc.B, oc.S, oc.P, oc.H, oc.Hkv, oc.D
	T := P + S
	c, err := NewKVCache(B, Hkv, T+2, D, D, I8, WithScales(oc.KScale, oc.VScale))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Scaled() || c.Rotated() {
		t.Fatalf("Scaled %v, Rotated %v: want true, false", c.Scaled(), c.Rotated())
	}
	for b := range B {
		pk := oc.PastKey[b*Hkv*P*D : (b+1)*Hkv*P*D]
		pv := oc.PastValue[b*Hkv*P*D : (b+1)*Hkv*P*D]
		if err := c.AppendI8(b, pk, pv, P); err != nil {
			t.Fatal(err)
		}
		if err := c.Append(b, entryRows(oc.Key, b, S, Hkv, D), entryRows(oc.Value, b, S, Hkv, D), S); err != nil {
			t.Fatal(err)
		}
	}
	// The stored bytes are ONNX Runtime's present rows, and Key and Value
	// are those times their scales.
	kr, vr := make([]float32, D), make([]float32, D)
	for b := range B {
		for h := range Hkv {
			for j := range T {
				c.Key(kr, b, h, j)
				c.Value(vr, b, h, j)
				for col := range D {
					at := ((b*Hkv+h)*T+j)*D + col
					if got, want := c.keys8(b, h)[j*c.rk+4+col], oc.PresentKey[at]; got != want {
						t.Fatalf("key (%d,%d,%d)[%d] stored %d, ONNX Runtime %d", b, h, j, col, got, want)
					}
					if got, want := c.values8(b, h)[j*c.rv+4+col], oc.PresentValue[at]; got != want {
						t.Fatalf("value (%d,%d,%d)[%d] stored %d, ONNX Runtime %d", b, h, j, col, got, want)
					}
					ks, vs := ortScale(oc.KScale, h, D, col), ortScale(oc.VScale, h, D, col)
					if want := float32(oc.PresentKey[at]) * ks; kr[col] != want {
						t.Fatalf("Key (%d,%d,%d)[%d] = %v, want %v", b, h, j, col, kr[col], want)
					}
					if want := float32(oc.PresentValue[at]) * vs; vr[col] != want {
						t.Fatalf("Value (%d,%d,%d)[%d] = %v, want %v", b, h, j, col, vr[col], want)
					}
				}
			}
		}
	}
	// AttendCache: the queries [B][S][H·D] viewed as [B][H][S][D].
	q, err := NewTensorStrided(B, H, S, D, S*H*D, D, H*D, oc.Query)
	if err != nil {
		t.Fatal(err)
	}
	outData := make([]float32, B*S*H*D)
	out, _ := NewTensorStrided(B, H, S, D, S*H*D, D, H*D, outData)
	opt := BatchOptions{Causal: true, Scale: oc.Scale}
	if err := e.AttendCache(BatchOutputs{Out: out}, q, c, &opt); err != nil {
		t.Fatal(err)
	}
	scale := float64(oc.Scale)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(D))
	}
	group := H / Hkv
	for b := range B {
		for h := range H {
			for s := range S {
				o := newOracle(c, b, h/group, q.Row(b, h, s), scale, P+s+1)
				o.check(t, fmt.Sprintf("AttendCache (%d,%d,%d)", b, h, s), out.Row(b, h, s))
				o.check(t, fmt.Sprintf("ONNX Runtime (%d,%d,%d)", b, h, s), oc.Output[((b*S+s)*H+h)*D:][:D])
			}
		}
	}
	// A Memory over each head, for the last query row (which sees every
	// key): Attend, and AttendMany over sixteen rows (the block path).
	sc, err := ScoreDotWithScale(float32(scale))
	if err != nil {
		t.Fatal(err)
	}
	for b := range B {
		for kh := range Hkv {
			m, err := NewMemoryCache(sc, c, b, kh)
			if err != nil {
				t.Fatal(err)
			}
			var qs []float32
			for r := range 16 {
				qs = append(qs, q.Row(b, kh*group+r%group, S-1)...)
			}
			qm, _ := NewMatrix(16, D, qs)
			ctx := make([]float32, 16*D)
			if err := m.AttendMany(ctx, nil, qm, nil); err != nil {
				t.Fatal(err)
			}
			one := make([]float32, D)
			for r := range group {
				if err := m.Attend(one, nil, qm.Row(r), nil); err != nil {
					t.Fatal(err)
				}
				o := newOracle(c, b, kh, qm.Row(r), scale, T)
				o.check(t, fmt.Sprintf("Memory.Attend (%d,%d,%d)", b, kh, r), one)
				o.check(t, fmt.Sprintf("Memory.AttendMany (%d,%d,%d)", b, kh, r), ctx[r*D:(r+1)*D])
			}
		}
	}
}

func ortScale(s []float32, h, D, col int) float32 {
	if len(s) == 1 {
		return s[0]
	}
	return s[h*D+col]
}

// oracle is the exact attention of one query row over the first n rows a
// cache's head holds, as Key and Value give them, with a bound on a
// float32 computation's error: each score's dot product off by at most
// (d+2)·2⁻²³ of Σ|q_c·k_c| (each weight by a factor within e^(±2δ)), and
// the blend by 4·(d+n)·2⁻²⁴ of Σ w_j·|v_j|.
type oracle struct {
	want, bound []float64
}

func newOracle(c *KVCache, b, kh int, q []float32, scale float64, n int) oracle {
	_, _, _, dk, dv := c.Shape()
	kr, vr := make([]float32, dk), make([]float32, dv)
	s := make([]float64, n)
	mx, delta := math.Inf(-1), 0.0
	for j := range n {
		c.Key(kr, b, kh, j)
		var dot, abs float64
		for col, x := range kr {
			dot += float64(q[col]) * float64(x)
			abs += math.Abs(float64(q[col]) * float64(x))
		}
		s[j] = scale * dot
		mx = max(mx, s[j])
		delta = max(delta, scale*abs*float64(dk+2)*0x1p-23)
	}
	var sum float64
	for j := range s {
		s[j] = math.Exp(s[j] - mx)
		sum += s[j]
	}
	o := oracle{want: make([]float64, dv), bound: make([]float64, dv)}
	wv := make([]float64, dv)
	for j := range n {
		c.Value(vr, b, kh, j)
		w := s[j] / sum
		for col, x := range vr {
			o.want[col] += w * float64(x)
			wv[col] += w * math.Abs(float64(x))
		}
	}
	for col := range dv {
		o.bound[col] = (math.Exp(2*delta)-1)*wv[col] + float64(4*(dk+n))*0x1p-24*wv[col] + 1e-30
	}
	return o
}

func (o oracle) check(t *testing.T, what string, got []float32) {
	t.Helper()
	for col, x := range got {
		if d := math.Abs(float64(x) - o.want[col]); !(d <= o.bound[col]) {
			t.Fatalf("%s[%d] = %v, exact %v: |Δ| = %g > %g", what, col, x, o.want[col], d, o.bound[col])
		}
	}
}

// TestScaledCacheLarge runs caches with static scales where the engine
// takes its other paths (a long cache, grouped rows on the block and
// multi-row paths, split keys, a ring that wraps, several workers): the
// results are within the float32 bound of the exact attention over the
// rows Key and Value give, and the same bits for any worker count.
func TestScaledCacheLarge(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, tc := range []struct {
			H, Hkv, Tq, Tk, d int
			perChannel, ring  bool
		}{
			{32, 2, 1, 3000, 128, true, false},
			{32, 2, 1, 1000, 128, true, false},
			{2, 1, 20, 600, 64, true, false},
			{8, 2, 4, 700, 64, true, true},
			{4, 4, 1, 9000, 64, true, false},
			{16, 4, 2, 500, 80, false, false},
		} {
			t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
				r := testutil.Rand(uint64(tc.Tk))
				ks, vs := []float32{0.02}, []float32{0.03}
				if tc.perChannel {
					ks = testutil.Floats(r, tc.Hkv*tc.d, 1)
					vs = testutil.Floats(r, tc.Hkv*tc.d, 1)
					for i := range ks {
						ks[i] = 0.005 + float32(math.Abs(float64(ks[i])))/50
						vs[i] = 0.005 + float32(math.Abs(float64(vs[i])))/50
					}
				}
				capacity := tc.Tk
				var opts []KVCacheOption
				if tc.ring {
					capacity = tc.Tk / 3
					opts = append(opts, WithRing())
				}
				c, err := NewKVCache(1, tc.Hkv, capacity, tc.d, tc.d, I8, append(opts, WithScales(ks, vs))...)
				if err != nil {
					t.Fatal(err)
				}
				k, v := testutil.Floats(r, tc.Hkv*tc.Tk*tc.d, 2), testutil.Floats(r, tc.Hkv*tc.Tk*tc.d, 2)
				if err := c.Append(0, k, v, tc.Tk); err != nil {
					t.Fatal(err)
				}
				q := tensor(t, r, 1, tc.H, tc.Tq, tc.d, false, 1)
				var first []float32
				for _, workers := range []int{1, 2, 3} {
					e := NewBatched(workers)
					out := tensor(t, r, 1, tc.H, tc.Tq, tc.d, false, 1)
					opt := BatchOptions{Causal: true}
					if err := e.AttendCache(BatchOutputs{Out: out}, q, c, &opt); err != nil {
						t.Fatal(err)
					}
					e.Close()
					got := append([]float32(nil), out.data...)
					if first == nil {
						first = got
						n := c.Len(0)
						for h := range tc.H {
							for i := range tc.Tq {
								o := newOracle(c, 0, h/(tc.H/tc.Hkv), q.Row(0, h, i), 1/math.Sqrt(float64(tc.d)), n-tc.Tq+i+1)
								o.check(t, fmt.Sprintf("out (%d,%d)", h, i), out.Row(0, h, i))
							}
						}
					} else if !sameRowBits(first, got) {
						t.Fatalf("%d workers: other bits than 1", workers)
					}
				}
			})
		}
	})
}

// TestWithScalesErrors checks NewKVCache's and AppendI8's refusals.
func TestWithScalesErrors(t *testing.T) {
	one := []float32{0.1}
	for _, tc := range []struct {
		name   string
		typ    KVType
		ks, vs []float32
	}{
		{"f16", F16, one, one},
		{"count", I8, []float32{1, 2}, one},
		{"zero", I8, []float32{0}, one},
		{"negative", I8, one, []float32{-1}},
		{"nan", I8, one, []float32{float32(math.NaN())}},
		{"inf", I8, []float32{float32(math.Inf(1))}, one},
		{"nil", I8, nil, one},
	} {
		if _, err := NewKVCache(1, 2, 4, 3, 3, tc.typ, WithScales(tc.ks, tc.vs)); !errors.Is(err, ErrArgument) {
			t.Errorf("%s: err %v, want ErrArgument", tc.name, err)
		}
	}
	plain, _ := NewKVCache(1, 2, 4, 3, 3, I8)
	if err := plain.AppendI8(0, make([]int8, 6), make([]int8, 6), 1); !errors.Is(err, ErrArgument) {
		t.Errorf("AppendI8 without scales: err %v, want ErrArgument", err)
	}
	c, err := NewKVCache(1, 2, 4, 3, 3, I8, WithScales(one, make([]float32, 6)))
	if err == nil {
		t.Fatal("zero per-channel scales accepted")
	}
	c, err = NewKVCache(1, 2, 4, 3, 3, I8, WithScales(one, []float32{1, 2, 3, 4, 5, 6}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AppendI8(0, make([]int8, 5), make([]int8, 6), 1); !errors.Is(err, ErrShape) {
		t.Errorf("short k: err %v, want ErrShape", err)
	}
	if err := c.AppendI8(1, make([]int8, 6), make([]int8, 6), 1); !errors.Is(err, ErrArgument) {
		t.Errorf("entry 1 of 1: err %v, want ErrArgument", err)
	}
	if err := c.AppendI8(0, make([]int8, 30), make([]int8, 30), 5); !errors.Is(err, ErrCapacity) {
		t.Errorf("5 rows in 4: err %v, want ErrCapacity", err)
	}
	if c.Len(0) != 0 {
		t.Fatalf("failed appends left Len %d", c.Len(0))
	}
	// A NaN or an infinity makes its row NaN, as in any I8 cache.
	k := []float32{1, float32(math.Inf(-1)), 0, 0.5, 0.5, 0.5}
	if err := c.Append(0, k, []float32{1, 2, 3, 4, 5, 6}, 1); err != nil {
		t.Fatal(err)
	}
	row := make([]float32, 3)
	c.Key(row, 0, 0, 0)
	if row[0] == row[0] {
		t.Fatalf("a row with -Inf reads back %v, want NaN", row)
	}
	c.Key(row, 0, 1, 0)
	if row[0] != 0.5 {
		t.Fatalf("head 1's row reads back %v, want 0.5s", row)
	}
	c.Value(row, 0, 1, 0)
	if row[0] != 4 || row[1] != 5 || row[2] != 6 {
		t.Fatalf("per-channel value row %v, want [4 5 6]", row)
	}
}
