package peers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/viterin/vek/vek32"

	"github.com/glancelab/attention"
)

// data returns n normal floats from a fixed seed, the same for every
// library.
func data(seed uint64, n int, scale float32) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([]float32, n)
	for i := range x {
		x[i] = scale * float32(r.NormFloat64())
	}
	return x
}

// close reports whether got is within tol (relative to the largest |want|)
// of want.
func closeTo(got, want []float32, tol float64) (int, bool) {
	big := 0.0
	for _, w := range want {
		big = max(big, math.Abs(float64(w)))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > tol*max(big, 1e-30) || got[i] != got[i] {
			return i, false
		}
	}
	return 0, true
}

// TestPeersAgree checks that every library computes what attention does on
// the benchmarks' inputs, so the benchmarks compare the same work.
func TestPeersAgree(t *testing.T) {
	const tol = 1e-4
	x, y := data(1, 4096, 1), data(2, 4096, 1)
	want := attention.Dot(x, y)
	for name, got := range map[string]float32{"naive": dotNaive(x, y), "gonum": dotGonum(x, y), "vek": vek32.Dot(x, y)} {
		if math.Abs(float64(got-want)) > 1e-3*math.Sqrt(4096) {
			t.Errorf("Dot: %s %v, attention %v", name, got, want)
		}
	}

	e := data(3, 4096, 10)
	wantExp, got := make([]float32, len(e)), make([]float32, len(e))
	attention.Exp(wantExp, e)
	for name, f := range map[string]func(dst, x []float32){"naive": expNaive, "vek": func(d, x []float32) { vek32.Exp_Into(d, x) }} {
		f(got, e)
		for i := range e {
			if math.Abs(float64(got[i]-wantExp[i])) > 1e-5*float64(wantExp[i]) {
				t.Errorf("Exp(%v): %s %v, attention %v", e[i], name, got[i], wantExp[i])
				break
			}
		}
	}
	attention.Softmax(wantExp, e)
	for name, f := range map[string]func(dst, x []float32){"naive": softmaxNaive, "vek": softmaxVek} {
		f(got, e)
		if i, ok := closeTo(got, wantExp, tol); !ok {
			t.Errorf("Softmax: %s[%d] = %v, attention %v", name, i, got[i], wantExp[i])
		}
	}

	const T, d = 1024, 64
	s := newStep(data(4, T*d, 1), data(5, T*d, 1), data(6, d, 1), T, d)
	s.attention()
	ref := append([]float32(nil), s.ctx...)
	for name, f := range map[string]func(){"naive": s.naive, "gonum": s.gonum, "vek": s.vek} {
		clear(s.ctx)
		f()
		if i, ok := closeTo(s.ctx, ref, tol); !ok {
			t.Errorf("Attend: %s ctx[%d] = %v, attention %v", name, i, s.ctx[i], ref[i])
		}
	}

	const heads, Tq = 2, 128
	b := newBatch(data(7, heads*Tq*d, 1), data(8, heads*Tq*d, 1), data(9, heads*Tq*d, 1), heads, Tq, d)
	defer b.close()
	b.attention()
	refOut := append([]float32(nil), b.out...)
	for name, f := range map[string]func(){"naive": b.naive, "gonum": b.gonum, "vek": b.vek} {
		clear(b.out)
		f()
		if i, ok := closeTo(b.out, refOut, tol); !ok {
			t.Errorf("Batched: %s out[%d] = %v, attention %v", name, i, b.out[i], refOut[i])
		}
	}
}

var sink float32

// Each benchmark runs attention first, so benchstat -col /lib compares
// every other library with it.

func BenchmarkDot(b *testing.B) {
	for _, n := range []int{1024, 65536} {
		x, y := data(1, n, 1), data(2, n, 1)
		for _, lib := range []struct {
			name string
			f    func(x, y []float32) float32
		}{{"attention", attention.Dot}, {"naive", dotNaive}, {"gonum", dotGonum}, {"vek", vek32.Dot}} {
			b.Run(fmt.Sprintf("n=%d/lib=%s", n, lib.name), func(b *testing.B) {
				b.SetBytes(int64(8 * n))
				var s float32
				for b.Loop() {
					s += lib.f(x, y)
				}
				sink = s
			})
		}
	}
}

func BenchmarkExp(b *testing.B) {
	const n = 4096
	x, dst := data(3, n, 10), make([]float32, n)
	for _, lib := range []struct {
		name string
		f    func(dst, x []float32)
	}{{"attention", attention.Exp}, {"naive", expNaive}, {"vek", func(d, x []float32) { vek32.Exp_Into(d, x) }}} {
		b.Run(fmt.Sprintf("n=%d/lib=%s", n, lib.name), func(b *testing.B) {
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				lib.f(dst, x)
			}
		})
	}
}

func BenchmarkSoftmax(b *testing.B) {
	for _, n := range []int{1024, 8192} {
		x, dst := data(4, n, 10), make([]float32, n)
		for _, lib := range []struct {
			name string
			f    func(dst, x []float32)
		}{{"attention", attention.Softmax}, {"naive", softmaxNaive}, {"vek", softmaxVek}} {
			b.Run(fmt.Sprintf("n=%d/lib=%s", n, lib.name), func(b *testing.B) {
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					lib.f(dst, x)
				}
			})
		}
	}
}

// BenchmarkAttend: one decoder step, scaled dot-product scores over T keys
// of dimension 64, softmax, context (gonum: two Gemv; vek: two MatMul).
func BenchmarkAttend(b *testing.B) {
	const d = 64
	for _, T := range []int{128, 1024, 8192} {
		s := newStep(data(4, T*d, 1), data(5, T*d, 1), data(6, d, 1), T, d)
		for _, lib := range []struct {
			name string
			f    func()
		}{{"attention", s.attention}, {"naive", s.naive}, {"gonum", s.gonum}, {"vek", s.vek}} {
			b.Run(fmt.Sprintf("T=%d/d=%d/lib=%s", T, d, lib.name), func(b *testing.B) {
				b.SetBytes(int64(8 * T * d))
				for b.Loop() {
					lib.f()
				}
				b.ReportMetric(float64(4*T*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkBatched: 8 heads × 512 queries × 512 keys × 64, not causal, one
// thread (gonum: two Gemm per head; vek: two MatMul per head).
func BenchmarkBatched(b *testing.B) {
	const heads, T, d = 8, 512, 64
	bt := newBatch(data(7, heads*T*d, 1), data(8, heads*T*d, 1), data(9, heads*T*d, 1), heads, T, d)
	defer bt.close()
	for _, lib := range []struct {
		name string
		f    func()
	}{{"attention", bt.attention}, {"naive", bt.naive}, {"gonum", bt.gonum}, {"vek", bt.vek}} {
		b.Run(fmt.Sprintf("h=%d/T=%d/d=%d/lib=%s", heads, T, d, lib.name), func(b *testing.B) {
			for b.Loop() {
				lib.f()
			}
			b.ReportMetric(float64(4*heads*T*T*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
