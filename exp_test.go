package attention

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/scalar"
	"github.com/glancelab/attention/internal/testutil"
)

var exhaustive = flag.Bool("exhaustive", os.Getenv("ATTENTION_EXHAUSTIVE") != "",
	"check Exp on all 2^32 float32 inputs (minutes; also ATTENTION_EXHAUSTIVE=1)")

// expMaxULP is the accuracy Exp promises wherever e^x is a normal float32.
const expMaxULP = 1.0

// expError returns the error of got = Exp(x) in ulps of the exact result
// and whether got is acceptable: within expMaxULP where e^x is normal,
// within 2^-149 (one subnormal spacing) where it is subnormal, +Inf exactly
// where e^x overflows float32, and the exact special results.
func expError(x, got float32) (ulps float64, ok bool) {
	switch {
	case x != x:
		return 0, got != got
	case math.IsInf(float64(x), -1):
		return 0, got == 0 && !math.Signbit(float64(got))
	}
	want := reference.Exp(x)
	// The largest float32 rounds from values below MaxFloat32 + half an ulp.
	if want >= math.MaxFloat32+0x1p103 {
		return 0, math.IsInf(float64(got), 1)
	}
	if math.IsInf(float64(got), 0) || got != got || got < 0 {
		return math.Inf(1), false
	}
	err := math.Abs(float64(got) - want)
	if want < 0x1p-126 {
		return err / 0x1p-149, err <= 0x1p-149
	}
	ulps = err / reference.ULP32(want)
	return ulps, ulps <= expMaxULP
}

// expScan checks Exp on inputs lo, lo+step, … below hi (as uint32 bit
// patterns) with every implementation's vector kernel, split over the CPUs:
// each result must be within the error bound and bit-identical to the
// scalar scheme exp32. It returns the largest ulp error seen in the normal
// range and the input where it occurs.
func expScan(t *testing.T, lo, hi, step uint64) (maxULP float64, worst uint32) {
	t.Helper()
	workers := runtime.GOMAXPROCS(0)
	type result struct {
		max          float64
		worst        uint32
		bad          bool
		badX, badGot float32
		split        bool // differs from the scalar scheme exp32
		splitX       float32
	}
	res := make([]result, workers)
	var wg sync.WaitGroup
	const batch = 4096
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			x := make([]float32, batch)
			y := make([]float32, batch)
			r := &res[w]
			for b := lo + uint64(w)*batch*step; b < hi; b += uint64(workers) * batch * step {
				n := 0
				for v := b; v < hi && n < batch; v += step {
					x[n] = math.Float32frombits(uint32(v))
					n++
				}
				Exp(y[:n], x[:n])
				for i := range n {
					u, ok := expError(x[i], y[i])
					if !ok && !r.bad {
						r.bad, r.badX, r.badGot = true, x[i], y[i]
					}
					if u > r.max && reference.Exp(x[i]) >= 0x1p-126 {
						r.max, r.worst = u, math.Float32bits(x[i])
					}
					if s := scalar.Exp32(x[i]); !r.split && math.Float32bits(s) != math.Float32bits(y[i]) && !(s != s && y[i] != y[i]) {
						r.split, r.splitX = true, x[i]
					}
				}
			}
		}(w)
	}
	wg.Wait()
	for _, r := range res {
		if r.bad {
			t.Fatalf("Exp(%v) [bits %#08x] = %v, want %v", r.badX, math.Float32bits(r.badX), r.badGot, reference.Exp(r.badX))
		}
		if r.split {
			x := r.splitX
			t.Fatalf("Exp(%v) [bits %#08x] differs from the scalar scheme's %v", x, math.Float32bits(x), scalar.Exp32(x))
		}
		if r.max > maxULP {
			maxULP, worst = r.max, r.worst
		}
	}
	return maxULP, worst
}

// TestExpDense samples 2^24 inputs spread evenly over all bit patterns
// (both signs, every exponent), plus every input where e^x is finite and
// nonzero at a finer step, plus the special classes.
func TestExpDense(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		step := uint64(1 << 8) // 2^24 inputs, plus about 2^22 more where e^x is not 0, 1 or Inf
		if testing.Short() {
			step = 1 << 10
		}
		maxAll, worst := expScan(t, 3, 1<<32, step)
		// Where the result is neither 1, 0 nor Inf: |x| in [2^-25, 104].
		for _, r := range [][2]uint32{{0x33000000, 0x42d00000}, {0xb3000000, 0xc2d00000}} {
			m, w := expScan(t, uint64(r[0])+1, uint64(r[1]), step/2+1)
			if m > maxAll {
				maxAll, worst = m, w
			}
		}
		t.Logf("max error %.4f ulp at x = %v", maxAll, math.Float32frombits(worst))
		for _, x := range append(testutil.Specials, -88.0, 88.0, 0x1p-30, -0x1p-30) {
			y := make([]float32, 1)
			Exp(y, []float32{x})
			if _, ok := expError(x, y[0]); !ok {
				t.Errorf("Exp(%v) = %v, want %v", x, y[0], reference.Exp(x))
			}
		}
	})
}

func TestExpSpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct{ x, want float32 }{
		{float32(math.Inf(-1)), 0},
		{inf, inf},
		{0, 1},
		{float32(math.Copysign(0, -1)), 1},
		{88.72284, inf},
		{1000, inf},
		{math.MaxFloat32, inf},
		{-1000, 0},
		{-math.MaxFloat32, 0},
		{-104, 0},
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for n := 1; n <= 19; n++ { // the special lane anywhere in a block
			for _, c := range cases {
				x := make([]float32, n)
				x[n-1] = c.x
				y := make([]float32, n)
				Exp(y, x)
				if math.Float32bits(y[n-1]) != math.Float32bits(c.want) {
					t.Fatalf("n=%d: Exp(%v) = %v, want %v", n, c.x, y[n-1], c.want)
				}
				if y[0] != 1 && n > 1 {
					t.Fatalf("n=%d: Exp(0) beside Exp(%v) = %v", n, c.x, y[0])
				}
			}
			x := make([]float32, n)
			x[n/2] = float32(math.NaN())
			y := make([]float32, n)
			Exp(y, x)
			if y[n/2] == y[n/2] {
				t.Fatalf("n=%d: Exp(NaN) = %v", n, y[n/2])
			}
		}
	})
}

// TestExpExhaustive checks every float32 input against the error bound and
// the scalar scheme, on every implementation (one alone with -run
// 'TestExpExhaustive/impl=NAME'). Run with -exhaustive or
// ATTENTION_EXHAUSTIVE=1: about two minutes per implementation on two
// Zen 5 cores, over an hour for neon under qemu.
func TestExpExhaustive(t *testing.T) {
	if !*exhaustive {
		t.Skip("needs -exhaustive or ATTENTION_EXHAUSTIVE=1")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		m, w := expScan(t, 0, 1<<32, 1)
		t.Logf("all 2^32 inputs: max error %.4f ulp at x = %v (bits %#08x)", m, math.Float32frombits(w), w)
	})
}

func TestTanh32(t *testing.T) {
	var worst float64
	var at float32
	step := uint32(127)
	if testing.Short() {
		step = 509
	}
	for b := uint32(0); b < 0x41300000; b += step { // [0, 11): beyond, tanh rounds to 1
		for _, x := range []float32{math.Float32frombits(b), -math.Float32frombits(b)} {
			e := math.Abs(float64(scalar.Tanh32(x)) - math.Tanh(float64(x)))
			if e > worst {
				worst, at = e, x
			}
		}
	}
	t.Logf("tanh32: max abs error 2^%.2f at %v", math.Log2(worst), at)
	if worst > reference.TanhAbsErr {
		t.Fatalf("tanh32 error %g at %v exceeds %g", worst, at, reference.TanhAbsErr)
	}
	for _, c := range []struct{ x, want float32 }{
		{float32(math.Inf(1)), 1}, {float32(math.Inf(-1)), -1}, {0, 0}, {100, 1}, {-100, -1},
	} {
		if got := scalar.Tanh32(c.x); got != c.want {
			t.Errorf("tanh32(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := scalar.Tanh32(float32(math.NaN())); got == got {
		t.Errorf("tanh32(NaN) = %v", got)
	}
}

// Every implementation evaluates the same scheme with the same operations
// (FMA where the scheme says FMA), so their results agree bit for bit.
func TestExpImplementationsAgree(t *testing.T) {
	const n = 1 << 16
	x := make([]float32, n)
	want := make([]float32, n)
	got := make([]float32, n)
	testutil.ForEachImpl(t, func(t *testing.T) {
		for start := uint64(0); start < 1<<32; start += 1 << 32 / 64 {
			for i := range x {
				x[i] = math.Float32frombits(uint32(start + uint64(i)*4099))
				want[i] = scalar.Exp32(x[i])
			}
			Exp(got, x)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("Exp(%v) = %v (%#08x), scalar scheme gives %v (%#08x)", x[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	})
}

// The AVX2 exp kernels give lanes at or below -104 (masked scores, -Inf)
// the exact +0 of exp32 without leaving their fast loop, and the AVX-512
// ones zero-mask them in their final VSCALEFPS; both rest on
// exp32 being +0 there (e^-104 is below 2^-150, half the least subnormal).
func TestExpIsZeroFromMinus104(t *testing.T) {
	if float64(-104) > -150*math.Ln2 {
		t.Fatal("-104 is not below -150·ln2")
	}
	for x := float32(-104); x > -110; x = math.Nextafter32(x, -200) {
		if e := scalar.Exp32(x); math.Float32bits(e) != 0 {
			t.Fatalf("exp32(%v) = %v, want +0", x, e)
		}
	}
	if e := scalar.Exp32(float32(math.Inf(-1))); math.Float32bits(e) != 0 {
		t.Fatalf("exp32(-Inf) = %v", e)
	}
}

// Blocks whose only large inputs are very negative (masks), alone or beside
// inputs whose exponential is subnormal, give exp32's bits on every
// implementation, in Exp, the fused exp-and-sum and Softmax.
func TestExpMaskedLanes(t *testing.T) {
	pool := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -1e4, -200, -104,
		math.Nextafter32(-104, -200), math.Nextafter32(-104, 0), -103.9, -95, -87.5, -86.6}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range append(lengths[1:68:68], 1000) {
			for _, off := range []int{0, 3} {
				for di, every := range []int{16, 3, 1} {
					r := testutil.Rand(uint64(n*100 + off*10 + di))
					x, _ := testutil.Offset(n, off)
					copy(x, testutil.Floats(r, n, 20))
					// Most runs keep to the masks; some add the subnormal band.
					band := len(pool)
					if di == 1 {
						band = 5
					}
					for i := range x {
						if r.IntN(every) == 0 {
							x[i] = pool[r.IntN(band)]
						}
					}
					name := fmt.Sprintf("n=%d off=%d every=%d", n, off, every)
					dst, whole := testutil.Offset(n, (off+5)%8)
					Exp(dst, x)
					testutil.CheckGuards(t, whole, (off+5)%8, n)
					for i, v := range x {
						if want := scalar.Exp32(v); !sameBits(dst[i], want) {
							t.Fatalf("%s: Exp(%v) = %v, exp32 %v", name, v, dst[i], want)
						}
					}
					const m = 25
					sum := expSum(dst, x, m)
					var want float64
					for i, v := range x {
						e := scalar.Exp32(v - m)
						want += float64(e)
						if !sameBits(dst[i], e) {
							t.Fatalf("%s: exp(%v-%v) = %v, exp32 %v", name, v, float32(m), dst[i], e)
						}
					}
					if !testutil.Close(sum, want, (reference.Gamma(n)+2*reference.U)*want+reference.Tiny) {
						t.Fatalf("%s: sum = %v, want %v", name, sum, want)
					}
					checkSoftmax(t, name, x)
				}
			}
		}
	})
}

// sameBits reports whether a and b have the same bits, or are both NaN.
func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}
