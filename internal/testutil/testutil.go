// Package testutil holds helpers shared by the tests, fuzzers and
// benchmarks: running a test once per kernel implementation, special
// float32 values, random data, float comparison, benchmark metrics, and a
// temporary module for building programs against this one.
package testutil

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/glancelab/attention/internal/impl"
)

// OnlyImplsVar names the environment variable that limits ForEachImpl to
// the implementations it lists.
const OnlyImplsVar = "ATTENTION_TEST_IMPLS"

// ForEachImpl runs f as a subtest named impl=NAME once for every
// registered implementation, with that implementation selected; one the
// CPU cannot run is a skipped subtest that names the features it lacks, so
// a run shows what it did not test.
//
// Under the race detector only the implementation selected at init runs,
// and the others are skipped subtests: the detector checks the accesses of
// goroutines to shared memory, which the choice of kernels does not change
// (it does not see into assembly at all), and the suite without -race
// runs every implementation.
//
// Where OnlyImplsVar names implementations (comma-separated), the others
// are skipped subtests naming it: an emulated run spends most of its time
// in the generic kernels, which another run of the same architecture
// (with the purego tag) tests.
func ForEachImpl(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	impl.Reset()
	defer impl.Reset()
	initial := impl.Active()
	only := os.Getenv(OnlyImplsVar)
	for _, in := range impl.All() {
		t.Run("impl="+in.Name, func(t *testing.T) {
			if Race && in.Name != initial {
				t.Skipf("implementation %s not run under the race detector (it runs %s): the suite without -race runs it", in.Name, initial)
			}
			if only != "" && !slices.Contains(strings.Split(only, ","), in.Name) {
				t.Skipf("implementation %s not run: %s=%s", in.Name, OnlyImplsVar, only)
			}
			UseImpl(t, in.Name)
			f(t)
		})
	}
}

// UseImpl selects the named implementation for the rest of the test, or
// skips the test, naming the CPU features the implementation needs and
// this CPU lacks.
func UseImpl(t testing.TB, name string) {
	t.Helper()
	for _, in := range impl.All() {
		if in.Name == name && in.Missing != nil {
			t.Skipf("implementation %s not tested: this CPU lacks %s", name, strings.Join(in.Missing, ", "))
		}
	}
	if !impl.Select(name) {
		t.Fatalf("implementation %s is not registered on this architecture", name)
	}
	t.Cleanup(impl.Reset)
}

// ForEachImplB is ForEachImpl for benchmarks.
func ForEachImplB(b *testing.B, f func(b *testing.B)) {
	defer impl.Reset()
	for _, in := range impl.All() {
		b.Run("impl="+in.Name, func(b *testing.B) {
			UseImpl(b, in.Name)
			f(b)
		})
	}
}

// Specials are the float32 values every kernel is tested on.
var Specials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.MaxFloat32, -math.MaxFloat32, 0x1p100, -0x1p100,
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-130, 0x1p-126,
	88.72283, 88.72284, -87.33654, -103.97, -104, 1e-7, -1e-7,
}

// Rand returns a deterministic generator for a test, seeded by seed.
func Rand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// Floats returns n values uniform in [-scale, scale).
func Floats(r *rand.Rand, n int, scale float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = (2*r.Float32() - 1) * scale
	}
	return x
}

// Offset returns a slice of length n that starts off elements into a fresh
// buffer, so the kernels see starts that are not 32-byte aligned. The
// elements before it and the guard elements after it hold sentinel values
// checked by CheckGuards.
func Offset(n, off int) (x, whole []float32) {
	whole = make([]float32, off+n+GuardLen)
	for i := range whole {
		whole[i] = Sentinel
	}
	return whole[off : off+n : off+n], whole
}

// GuardLen is the number of sentinel elements after a slice from Offset.
const GuardLen = 16

// Sentinel fills the guard elements; a kernel writing past its slice
// changes them.
const Sentinel = float32(-7.75e33)

// CheckGuards reports whether whole outside [off, off+n) still holds
// sentinels.
func CheckGuards(t testing.TB, whole []float32, off, n int) {
	t.Helper()
	for i, v := range whole {
		if (i < off || i >= off+n) && math.Float32bits(v) != math.Float32bits(Sentinel) {
			t.Fatalf("element %d outside the slice [%d,%d) was overwritten: %v", i, off, off+n, v)
		}
	}
}

// Close reports whether got is within bound of want, treating NaN as equal
// only to NaN and infinities as equal only to themselves.
func Close(got float32, want, bound float64) bool {
	g := float64(got)
	switch {
	case math.IsNaN(want):
		return math.IsNaN(g)
	case math.IsInf(want, 0):
		return g == want
	case math.IsNaN(g) || math.IsInf(g, 0):
		return false
	}
	return math.Abs(g-want) <= bound
}

// DecodeFloats turns each byte into a value: mostly small multiples of
// 1/16 in [-7.8, 8], with the top byte values reserved for the special
// values every kernel must survive.
func DecodeFloats(b []byte) []float32 {
	specials := []float32{
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.Copysign(0, -1)), 0x1p-140, 3e38,
	}
	x := make([]float32, len(b))
	for i, v := range b {
		if k := int(v) - (256 - len(specials)); k >= 0 {
			x[i] = specials[k]
		} else {
			x[i] = float32(int(v)-125) / 16
		}
	}
	return x
}

// EachImpl runs f under every available implementation.
func EachImpl(f func(name string)) {
	defer impl.Reset()
	for _, name := range impl.List() {
		impl.Select(name)
		f(name)
	}
}

// Fill returns a slice of length n at offset off holding data drawn from
// kind: random values, or random values salted with special values.
func Fill(seed uint64, n, off int, scale float32, specials bool) (x, whole []float32) {
	x, whole = Offset(n, off)
	r := Rand(seed)
	copy(x, Floats(r, n, scale))
	if specials && n > 0 {
		for k := 0; k < 1+n/16; k++ {
			x[r.IntN(n)] = Specials[r.IntN(len(Specials))]
		}
	}
	return x, whole
}

// FirstDiff returns the first index where a and b differ in bits, or −1.
func FirstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// Identical fails unless got and want hold the same bits.
func Identical(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), want %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// Overflowed reports whether a float32 computation of a sum with these
// exact and absolute values may legitimately give Inf or NaN instead: an
// intermediate beyond MaxFloat32, or Inf/NaN operands (∞−∞).
func Overflowed(want, abs float64) bool {
	return math.IsNaN(want) || math.IsInf(abs, 0) || math.IsNaN(abs) || abs > math.MaxFloat32/2
}

// Report adds GFLOP/s for flops floating-point operations per iteration
// and ns per element for elems elements per iteration.
func Report(b *testing.B, flops, elems float64) {
	sec := b.Elapsed().Seconds()
	if sec == 0 {
		return
	}
	if flops > 0 {
		b.ReportMetric(flops*float64(b.N)/sec/1e9, "GFLOP/s")
	}
	if elems > 0 {
		b.ReportMetric(sec*1e9/(elems*float64(b.N)), "ns/elem")
	}
}
