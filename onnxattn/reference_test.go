package onnxattn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// naive computes the operator in float64 straight from the rules of the
// specification, one query row at a time, with the whole bias formed
// explicitly: the independent check for what the conformance cases do not
// cover (MQA, rank-1 and rank-3 masks, bool masks with a cache, causal 3D
// inputs with a cache, mode 0 with softcap, a short mask on its own).
func naive(a Attributes, in Inputs) (y, qk []float64) {
	f64 := func(t *Tensor) []float64 {
		if t == nil {
			return nil
		}
		x := make([]float64, 0, t.Len())
		for _, v := range t.Floats() {
			x = append(x, float64(v))
		}
		return x
	}
	Q, K, V := f64(in.Q), f64(in.K), f64(in.V)
	pk, pv := f64(in.PastKey), f64(in.PastValue)
	threeD := len(in.Q.Shape) == 3
	var B, Hq, Hkv, Sq, Skv, D, Dv, P int
	if threeD {
		B, Sq, Hq, Hkv, Skv = in.Q.Shape[0], in.Q.Shape[1], a.QNumHeads, a.KVNumHeads, in.K.Shape[1]
		D, Dv = in.Q.Shape[2]/Hq, in.V.Shape[2]/Hkv
	} else {
		B, Hq, Sq, D = in.Q.Shape[0], in.Q.Shape[1], in.Q.Shape[2], in.Q.Shape[3]
		Hkv, Skv, Dv = in.K.Shape[1], in.K.Shape[2], in.V.Shape[3]
	}
	if in.PastKey != nil {
		P = in.PastKey.Shape[2]
	}
	T := P + Skv
	at := func(x []float64, b, h, s, d, H, S, hd int) float64 {
		if threeD {
			return x[(b*S+s)*H*hd+h*hd+d]
		}
		return x[((b*H+h)*S+s)*hd+d]
	}
	key := func(x, past []float64, b, h, t, d, hd int) float64 {
		if t < P {
			return past[((b*Hkv+h)*P+t)*hd+d]
		}
		return at(x, b, h, t-P, d, Hkv, Skv, hd)
	}
	scale := float64(a.Scale)
	if scale == 0 && D > 0 {
		// With head_size 0 every score is 0: ONNX scales Q and K before
		// their product, so the infinite default scale never meets it.
		scale = 1 / math.Sqrt(float64(D))
	}
	ninf := math.Inf(-1)
	mask := func(b, h, i, j int) float64 {
		m := in.AttnMask
		if m == nil {
			return 0
		}
		r := len(m.Shape)
		s4 := [4]int{1, 1, 1, 1}
		copy(s4[4-r:], m.Shape)
		if j >= s4[3] {
			return ninf
		}
		idx := [3]int{b, h, i}
		o := 0
		for ax := range 3 {
			if s4[ax] != 1 {
				o += idx[ax]
			}
			o *= s4[ax+1]
		}
		o += j
		if m.DType == Bool {
			if m.Bool[o] {
				return 0
			}
			return ninf
		}
		return float64(m.Floats()[o])
	}
	y = make([]float64, B*Hq*Sq*Dv)
	qk = make([]float64, B*Hq*Sq*T)
	for b := range B {
		for h := range Hq {
			kh := h / (Hq / Hkv)
			for i := range Sq {
				x := make([]float64, T)
				masked := true
				for j := range T {
					var s float64
					for d := range D {
						s += at(Q, b, h, i, d, Hq, Sq, D) * key(K, pk, b, kh, j, d, D)
					}
					s *= scale
					raw := s
					if c := float64(a.Softcap); c > 0 {
						s = c * math.Tanh(s/c)
					}
					bias := mask(b, h, i, j)
					off := 0
					switch {
					case in.PastKey != nil:
						off = P
					case in.NonpadKVSeqlen != nil:
						off = int(in.NonpadKVSeqlen.I64[b]) - Sq
					}
					if a.IsCausal && j > i+off {
						bias = ninf
					}
					if in.NonpadKVSeqlen != nil && j >= int(in.NonpadKVSeqlen.I64[b]) {
						bias = ninf
					}
					masked = masked && math.IsInf(bias, -1)
					x[j] = s + bias
					out := &qk[((b*Hq+h)*Sq+i)*T+j]
					switch a.QKMatmulOutputMode {
					case 0:
						*out = raw
					case 1:
						*out = s
					case 2:
						*out = x[j]
					}
				}
				w := make([]float64, T)
				if !masked {
					m, sum := ninf, 0.0
					for _, v := range x {
						m = math.Max(m, v)
					}
					for j, v := range x {
						w[j] = math.Exp(v - m)
						sum += w[j]
					}
					for j := range w {
						w[j] /= sum
					}
				}
				for j := range T {
					if a.QKMatmulOutputMode == 3 {
						qk[((b*Hq+h)*Sq+i)*T+j] = w[j]
					}
					for d := range Dv {
						y[((b*Hq+h)*Sq+i)*Dv+d] += w[j] * key(V, pv, b, kh, j, d, Dv)
					}
				}
			}
		}
	}
	if threeD { // [B][Hq][Sq][Dv] -> [B][Sq][Hq·Dv]
		y3 := make([]float64, len(y))
		for b := range B {
			for h := range Hq {
				for i := range Sq {
					copy(y3[(b*Sq+i)*Hq*Dv+h*Dv:], y[((b*Hq+h)*Sq+i)*Dv:((b*Hq+h)*Sq+i+1)*Dv])
				}
			}
		}
		y = y3
	}
	return y, qk
}

type randomCase struct {
	a  Attributes
	in Inputs
	f  DType
}

func (c randomCase) String() string {
	s := fmt.Sprintf("%+v Q%v K%v V%v %v", c.a, c.in.Q.Shape, c.in.K.Shape, c.in.V.Shape, c.f)
	if m := c.in.AttnMask; m != nil {
		s += fmt.Sprintf(" mask %v%v", m.DType, m.Shape)
	}
	if c.in.PastKey != nil {
		s += fmt.Sprintf(" past%v", c.in.PastKey.Shape)
	}
	if n := c.in.NonpadKVSeqlen; n != nil {
		s += fmt.Sprintf(" nonpad%v", n.I64)
	}
	return s
}

func randomTensor(r *rand.Rand, f DType, shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return floatTensor(f, x, shape...)
}

func newRandomCase(r *rand.Rand) randomCase {
	var c randomCase
	c.f = []DType{Float32, Float32, Float16}[r.IntN(3)]
	B, Hkv := 1+r.IntN(2), 1+r.IntN(2)
	Hq := Hkv * (1 + r.IntN(3))
	Sq, Skv, D, Dv := 1+r.IntN(5), 1+r.IntN(6), 1+r.IntN(9), 1+r.IntN(9)
	P := 0
	if r.IntN(2) == 0 {
		P = r.IntN(5)
		c.in.PastKey = randomTensor(r, c.f, B, Hkv, P, D)
		c.in.PastValue = randomTensor(r, c.f, B, Hkv, P, Dv)
	}
	T := P + Skv
	if r.IntN(2) == 0 {
		c.a.QNumHeads, c.a.KVNumHeads = Hq, Hkv
		c.in.Q = randomTensor(r, c.f, B, Sq, Hq*D)
		c.in.K = randomTensor(r, c.f, B, Skv, Hkv*D)
		c.in.V = randomTensor(r, c.f, B, Skv, Hkv*Dv)
	} else {
		c.in.Q = randomTensor(r, c.f, B, Hq, Sq, D)
		c.in.K = randomTensor(r, c.f, B, Hkv, Skv, D)
		c.in.V = randomTensor(r, c.f, B, Hkv, Skv, Dv)
	}
	minCols := 0
	if c.in.PastKey == nil && r.IntN(3) == 0 {
		n := make([]int64, B)
		for b := range n {
			n[b] = int64(r.IntN(T + 1))
			minCols = max(minCols, int(n[b]))
		}
		c.in.NonpadKVSeqlen = NewInt64(n, B)
	}
	if r.IntN(4) > 0 {
		rank := 1 + r.IntN(4)
		full := []int{B, Hq, Sq, T}
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = full[4-rank+i]
			if i < rank-1 && r.IntN(2) == 0 {
				shape[i] = 1
			}
		}
		if r.IntN(3) == 0 {
			shape[rank-1] = minCols + r.IntN(T-minCols+1) // short: padded with -Inf
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		if r.IntN(2) == 0 {
			keep := make([]bool, n)
			for i := range keep {
				keep[i] = r.IntN(4) > 0
			}
			c.in.AttnMask = NewBool(keep, shape...)
		} else {
			x := make([]float32, n)
			for i := range x {
				x[i] = 3 * (r.Float32() - 0.5)
				if r.IntN(6) == 0 {
					x[i] = negInf
				}
			}
			c.in.AttnMask = floatTensor(c.f, x, shape...)
		}
	}
	c.a.IsCausal = r.IntN(2) == 0
	c.a.Softcap = []float32{0, 0, 0.75, 4}[r.IntN(4)]
	c.a.Scale = []float32{0, 0, 0.3, -1.5}[r.IntN(4)]
	c.a.QKMatmulOutputMode = r.IntN(4)
	return c
}

// Random problems, every feature in every combination, against naive.
func TestMatchesNaive(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 150
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(91)
		e := attention.NewBatched(2)
		defer e.Close()
		for range n {
			c := newRandomCase(r)
			got, err := Run(e, c.a, c.in, Want{Present: true, QKMatmulOutput: true})
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			y, qk := naive(c.a, c.in)
			near(t, c, "Y", got.Y, y)
			near(t, c, "qk_matmul_output", got.QKMatmulOutput, qk)
			if c.in.PastKey != nil && got.PresentKey.Shape[2] != c.in.PastKey.Shape[2]+c.in.K.Shape[len(c.in.K.Shape)-2] {
				t.Fatalf("%v: present_key %v", c, got.PresentKey.Shape)
			}
		}
	})
}

func near(t *testing.T, c randomCase, name string, got *Tensor, want []float64) {
	t.Helper()
	if got.DType != c.f {
		t.Fatalf("%v: %s is %v, want %v", c, name, got.DType, c.f)
	}
	g := got.Floats()
	if len(g) != len(want) {
		t.Fatalf("%v: %s has %d elements, want %d", c, name, len(g), len(want))
	}
	atol, rtol := 1e-5, 1e-4
	if c.f == Float16 {
		atol, rtol = 1e-4, 2e-3 // half an ulp of float16 is 2^-11 relative
	}
	for i, w := range want {
		x := float64(g[i])
		ok := math.Abs(x-w) <= atol+rtol*math.Abs(w)
		if math.IsInf(w, 0) || math.IsNaN(w) {
			ok = x == w || math.IsNaN(w) && math.IsNaN(x)
		}
		if !ok {
			t.Fatalf("%v: %s[%d] = %v, want %v", c, name, i, x, w)
		}
	}
}
