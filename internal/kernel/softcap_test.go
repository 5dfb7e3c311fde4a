package kernel

import (
	"math"
	"testing"

	"github.com/glancelab/attention/internal/scalar"
	"github.com/glancelab/attention/internal/testutil"
)

// softcapInputs are scores around every branch of the softcap: the small
// |x| polynomial and its edge at 2^-4, ordinary and saturating values,
// and the special values.
func softcapInputs(n int, seed uint64) []float32 {
	r := testutil.Rand(seed)
	edge := float32(0x1p-4)
	pool := []float32{edge, -edge, math.Nextafter32(edge, 0), math.Nextafter32(edge, 1), 0x1p-30, -0x1p-30}
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(4) {
		case 0:
			x[i] = testutil.Specials[r.IntN(len(testutil.Specials))]
		case 1:
			x[i] = pool[r.IntN(len(pool))] * 30
		default:
			x[i] = (2*r.Float32() - 1) * 60
		}
	}
	return x
}

// The softcap kernels give the generic code's bits on every implementation:
// the same operations, rounded the same way.
func TestSoftcapKernels(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for n := 0; n <= 67; n++ {
			for _, off := range []int{0, 3} {
				in := softcapInputs(n, uint64(n*10+off))
				x, xw := testutil.Offset(n, off)
				z, zw := testutil.Offset(n, (off+5)%8)
				copy(x, in)
				wx, wz := append([]float32(nil), in...), make([]float32, n)
				SoftcapPrep(x, z, 1/30.0)
				softcapPrepGeneric(wx, wz, 1/30.0)
				testutil.CheckGuards(t, xw, off, n)
				testutil.CheckGuards(t, zw, (off+5)%8, n)
				same(t, "prep x", x, wx)
				same(t, "prep z", z, wz)
				Expv(z, z)
				SoftcapFinish(x, z, 30)
				softcapFinishGeneric(wx, z, 30)
				testutil.CheckGuards(t, xw, off, n)
				same(t, "finish", x, wx)
				inv := float32(1 / 30.0)
				for i, v := range in {
					if want := 30 * scalar.Tanh32(v*inv); !sameBits(x[i], want) {
						t.Fatalf("softcap(%v) = %v, want 30·tanh32(x·(1/30)) = %v", v, x[i], want)
					}
				}
			}
		}
	})
}

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), generic %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func TestSoftcapKernelsStayInBounds(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, after := range []bool{true, false} {
			for n := 0; n <= 67; n++ {
				x, z := testutil.Guarded(t, n, after), testutil.Guarded(t, n, after)
				SoftcapPrep(x, z, 0.5)
				SoftcapFinish(x, z, 2)
			}
		}
	})
}
