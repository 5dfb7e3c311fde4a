package attention

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// lengths covers empty, every tail up to well past one unrolled SIMD block,
// and sizes where blocking and accumulator order matter.
var lengths = func() []int {
	var n []int
	for i := 0; i <= 67; i++ {
		n = append(n, i)
	}
	return append(n, 1000, 4099)
}()

// offsets start slices off 32-byte alignment (Go guarantees only 4).
var offsets = []int{0, 1, 2, 3, 4, 5, 6, 7}

func TestDot(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range lengths {
			for _, off := range offsets {
				for _, sp := range []bool{false, true} {
					seed := uint64(n*100 + off)
					x, _ := testutil.Fill(seed, n, off, 4, sp)
					y, _ := testutil.Fill(seed+1, n, (off+3)%8, 4, false)
					got := Dot(x, y)
					want, abs := reference.Dot(x, y)
					if !testutil.Close(got, want, reference.DotBound(n, abs)) && !(sp && testutil.Overflowed(want, abs)) {
						t.Fatalf("n=%d off=%d specials=%v: Dot = %v, want %v ± %g", n, off, sp, got, want, reference.DotBound(n, abs))
					}
				}
			}
		}
	})
}

func TestAxpy(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range lengths {
			for _, off := range offsets {
				for _, alpha := range []float32{0, 1, -0.5, 3.25} {
					x, _ := testutil.Fill(uint64(n+off), n, off, 8, true)
					y, whole := testutil.Fill(uint64(n+off+1), n, (off+5)%8, 8, false)
					y0 := append([]float32(nil), y...)
					Axpy(alpha, x, y)
					testutil.CheckGuards(t, whole, (off+5)%8, n)
					for i := range x {
						want := float64(y0[i]) + float64(alpha)*float64(x[i])
						bound := 2*reference.U*(math.Abs(float64(alpha)*float64(x[i]))+math.Abs(float64(y0[i]))) + 0x1p-149
						if !testutil.Close(y[i], want, bound) && !testutil.Overflowed(want, math.Abs(float64(alpha)*float64(x[i]))) {
							t.Fatalf("n=%d off=%d alpha=%v: y[%d] = %v, want %v", n, off, alpha, i, y[i], want)
						}
					}
				}
			}
		}
	})
}

func TestMax(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range lengths {
			for _, off := range offsets {
				x, _ := testutil.Fill(uint64(n*8+off), n, off, 100, true)
				want := math.Inf(-1)
				for _, v := range x {
					if v != v {
						want = math.NaN()
						break
					}
					want = math.Max(want, float64(v))
				}
				if got := maxf(x); !testutil.Close(got, want, 0) {
					t.Fatalf("n=%d off=%d: max = %v, want %v", n, off, got, want)
				}
			}
		}
		// The NaN may sit in any lane and any position of the tail.
		for n := 1; n <= 40; n++ {
			for at := 0; at < n; at++ {
				x := make([]float32, n)
				x[at] = float32(math.NaN())
				if got := maxf(x); got == got {
					t.Fatalf("n=%d NaN at %d: max = %v, want NaN", n, at, got)
				}
			}
		}
	})
}

func TestExpSumAndScale(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range lengths {
			for _, off := range offsets {
				x, _ := testutil.Fill(uint64(n*9+off), n, off, 20, false)
				dst, whole := testutil.Offset(n, (off+2)%8)
				m := float32(3)
				sum := expSum(dst, x, m)
				testutil.CheckGuards(t, whole, (off+2)%8, n)
				var want float64
				for i, v := range x {
					e := reference.Exp(v - m) // the argument is rounded in float32 first
					want += e
					if !testutil.Close(dst[i], e, reference.ULP32(e)) {
						t.Fatalf("n=%d: exp(%v-%v) = %v, want %v", n, v, m, dst[i], e)
					}
				}
				if !testutil.Close(sum, want, (reference.Gamma(n)+2*reference.U)*want+reference.Tiny) {
					t.Fatalf("n=%d off=%d: sum = %v, want %v", n, off, sum, want)
				}
				scale(0.25, dst)
				for i, v := range x {
					if e := reference.Exp(v-m) / 4; !testutil.Close(dst[i], e, reference.ULP32(e)) {
						t.Fatalf("n=%d: scaled dst[%d] = %v, want %v", n, i, dst[i], e)
					}
				}
			}
		}
	})
}

func TestSoftmax(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range lengths {
			for _, off := range offsets {
				for _, sc := range []float32{1, 30, 1e4} {
					x, _ := testutil.Fill(uint64(n*11+off), n, off, sc, false)
					checkSoftmax(t, fmt.Sprintf("n=%d off=%d scale=%v", n, off, sc), x)
				}
			}
		}
	})
}

func checkSoftmax(t *testing.T, name string, x []float32) {
	t.Helper()
	dst := make([]float32, len(x))
	Softmax(dst, x)
	want, bound := reference.Softmax(x)
	for i := range x {
		if !testutil.Close(dst[i], want[i], bound[i]) {
			t.Fatalf("%s: softmax[%d] = %v, want %v ± %g (x=%v)", name, i, dst[i], want[i], bound[i], x[i])
		}
	}
	// In place gives the same bits.
	in := append([]float32(nil), x...)
	Softmax(in, in)
	for i := range in {
		if math.Float32bits(in[i]) != math.Float32bits(dst[i]) {
			t.Fatalf("%s: in-place softmax differs at %d: %v vs %v", name, i, in[i], dst[i])
		}
	}
}

func TestSoftmaxSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	testutil.ForEachImpl(t, func(t *testing.T) {
		cases := []struct {
			name string
			x    []float32
		}{
			{"empty", nil},
			{"single", []float32{-5}},
			{"masked", []float32{1, -inf, 2, -inf}},
			{"all masked", []float32{-inf, -inf, -inf}},
			{"NaN", []float32{1, nan, 2}},
			{"NaN among masked", []float32{-inf, nan}},
			{"+Inf", []float32{inf, 1}},
			{"huge", []float32{math.MaxFloat32, -math.MaxFloat32, 0}},
			{"subnormal", []float32{0x1p-149, -0x1p-149, 0}},
			{"signed zeros", []float32{0, float32(math.Copysign(0, -1))}},
			{"seed", []float32{2, 1, 0}},
		}
		for _, c := range cases {
			checkSoftmax(t, c.name, c.x)
		}
		// Masked entries are exactly zero, not merely small.
		dst := make([]float32, 4)
		Softmax(dst, []float32{1, -inf, 2, -inf})
		if dst[1] != 0 || dst[3] != 0 || math.Signbit(float64(dst[1])) {
			t.Fatalf("masked weights = %v, want exact +0", dst)
		}
	})
}

// Softmax(x + c) = Softmax(x): subtracting the max makes the computation
// itself shift-invariant whenever the shift is exact.
func TestSoftmaxShiftInvariance(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(5)
		for n := 1; n < 100; n++ {
			x := testutil.Floats(r, n, 8)
			for i := range x {
				x[i] = float32(math.Round(float64(x[i])*256) / 256) // exact after shifting by 1000
			}
			y := make([]float32, n)
			for i := range x {
				y[i] = x[i] + 1000
			}
			a, b := make([]float32, n), make([]float32, n)
			Softmax(a, x)
			Softmax(b, y)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("n=%d: softmax(x)[%d] = %v but softmax(x+1000)[%d] = %v", n, i, a[i], i, b[i])
				}
			}
		}
	})
}

func TestKernelsPanicOnLengthMismatch(t *testing.T) {
	calls := map[string]func(){
		"Dot":     func() { Dot(make([]float32, 3), make([]float32, 4)) },
		"Axpy":    func() { Axpy(1, make([]float32, 3), make([]float32, 4)) },
		"Exp":     func() { Exp(make([]float32, 3), make([]float32, 4)) },
		"Softmax": func() { Softmax(make([]float32, 3), make([]float32, 4)) },
	}
	for name, call := range calls {
		func() {
			defer func() {
				r := recover()
				err, _ := r.(error)
				var msg string
				if err != nil {
					msg = err.Error()
				}
				if msg == "" || !contains(msg, name) || !contains(msg, "3") || !contains(msg, "4") {
					t.Errorf("%s: panic %v, want a message naming the call and both lengths", name, r)
				}
				if !errors.Is(err, ErrShape) {
					t.Errorf("%s: panic %v does not match ErrShape", name, r)
				}
			}()
			call()
		}()
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// checkExpSum runs expSum(dst, x, m) and checks every element within an ulp
// of e^(x[i]-m) and the sum within its bound.
func checkExpSum(t *testing.T, what string, dst, x []float32, m float32) {
	t.Helper()
	s := expSum(dst, x, m)
	var ws float64
	for i, v := range x {
		e := reference.Exp(v - m)
		ws += e
		if !testutil.Close(dst[i], e, reference.ULP32(e)) {
			t.Fatalf("%s: expSum dst[%d] = %v, want %v", what, i, dst[i], e)
		}
	}
	if !testutil.Close(s, ws, (reference.Gamma(len(x))+2*reference.U)*ws) {
		t.Errorf("%s: expSum = %v, want %v", what, s, ws)
	}
}

// The kernels take the one-call path up to 1<<16 elements (the assembly
// wrappers' per-call limit) and split beyond it: both sides of the edge.
func TestKernelsCallLimitEdge(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(98)
		for _, n := range []int{1<<16 - 1, 1 << 16, 1<<16 + 1} {
			x, y := testutil.Floats(r, n, 2), testutil.Floats(r, n, 2)
			want, abs := reference.Dot(x, y)
			if got := Dot(x, y); !testutil.Close(got, want, reference.DotBound(n, abs)) {
				t.Errorf("n=%d: Dot = %v, want %v", n, got, want)
			}
			x[n-1] = 40
			if got := maxf(x); got != 40 {
				t.Errorf("n=%d: max = %v, want 40 (the last element)", n, got)
			}
			dst := make([]float32, n)
			checkExpSum(t, fmt.Sprintf("n=%d", n), dst, x, 40)
			scale(0.5, dst)
			if dst[n-1] != 0.5 {
				t.Errorf("n=%d: scale left the last element at %v, want 0.5", n, dst[n-1])
			}
			y0 := append([]float32(nil), y...)
			Axpy(-1, x, y)
			if i := n - 1; y[i] != y0[i]-x[i] {
				t.Errorf("n=%d: Axpy y[%d] = %v, want %v", n, i, y[i], y0[i]-x[i])
			}
		}
	})
}

// Large inputs cross the per-call limit of the assembly wrappers (which
// split long slices so a goroutine is never stuck in one call for long).
func TestKernelsLarge(t *testing.T) {
	const n = 3<<16 + 5
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(99)
		x, y := testutil.Floats(r, n, 2), testutil.Floats(r, n, 2)
		want, abs := reference.Dot(x, y)
		if got := Dot(x, y); !testutil.Close(got, want, reference.DotBound(n, abs)) {
			t.Errorf("Dot: %v, want %v", got, want)
		}
		checkSoftmax(t, "large", x)

		x[n-3] = 50
		if got := maxf(x); got != 50 {
			t.Errorf("max = %v, want 50 (in the last call)", got)
		}
		x[1<<16+7] = float32(math.NaN())
		if got := maxf(x); got == got {
			t.Errorf("max with NaN in the second call = %v", got)
		}
		x[1<<16+7] = 0

		dst := make([]float32, n)
		Exp(dst, x)
		checkExpSum(t, "large", dst, x, 50)
		scale(2, dst)
		y0 := append([]float32(nil), y...)
		Axpy(-1, x, y)
		for i := range y {
			if y[i] != y0[i]-x[i] {
				t.Fatalf("Axpy y[%d] = %v, want %v", i, y[i], y0[i]-x[i])
			}
		}

	})
}
