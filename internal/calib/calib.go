// Package calib measures this machine's own limits: the peak FP32 FMA rate
// of a core and the read bandwidth at given working sets (by default sized
// for each cache level and for DRAM). `attention bench` sets each figure it
// reports against them, so a number says how close a kernel comes to what
// the hardware can do, not only how fast it is.
//
// Both measurements run generated kernels (asm/amd64 and asm/arm64, run
// with -calib): one with many independent FMA chains and no memory traffic,
// and read kernels that stream a buffer through several accumulators (on
// amd64 as four streams, as one, and as two halves multiplied together
// as a dot product reads them, half its loads needing no ALU port; in Go
// as floats added and as 64-bit words xored; the read limit is the
// fastest). An
// architecture
// has a set of them per register width (on amd64, zmm for AVX-512 and ymm
// for AVX2), so that code written for one width can be set against the
// limits of that width and of the widest the CPU has. The generic set runs
// Go loops, which measure what scalar Go code can reach rather than the
// hardware; purego builds and other architectures have only it.
package calib

import (
	"math"
	"slices"

	"github.com/glancelab/attention/internal/impl"
)

//go:generate go run -C ../../asm ./amd64 -calib -out ../internal/calib/calib_amd64.s -stubs ../internal/calib/calib_amd64.go -pkg calib
//go:generate go run -C ../../asm ./amd64 -calib -zmm -out ../internal/calib/calib_avx512_amd64.s -stubs ../internal/calib/calib_avx512_amd64.go -pkg calib
//go:generate go run -C ../../asm ./arm64 -calib -out ../internal/calib/calib_arm64.s -stubs ../internal/calib/calib_arm64.go -pkg calib

// The FMA operands: their product 2^-40 is exact, and the accumulators stay
// far from overflow and from subnormals however long the loop runs.
var fmaA, fmaB float32 = 0x1p-20, 0x1p-20

// Generic names the set of Go kernels, available everywhere.
const Generic = impl.Generic

// Kernels is one register width's pair of calibration kernels. Its name is
// that of the implementation of package attention written for the same
// width (avx512, avx2, neon, generic).
type Kernels struct {
	name     string
	bits     int      // the width of a vector register
	requires []string // the CPU features the kernels need (their "// Requires:" lines)
	missing  []string // those the CPU lacks
	// The shape of the FMA kernel: independent chains and lanes per vector
	// (asm/amd64/calib.go, asm/arm64/calib.go).
	chains, lanes int
	fma           func(rounds int, a, b float32) float32
	// The read kernels, each its own pattern of loads: the first is Sum's,
	// and a read limit is the fastest of them.
	reads []readKernel
}

// readKernel is one read kernel: it folds the first len(x) floats rounded
// down to a multiple of block, as its kind says.
type readKernel struct {
	name  string
	block int
	fn    func(x []float32) float32
	kind  readKind
}

// readKind is what a read kernel computes over the floats it reads.
type readKind uint8

const (
	readSum   readKind = iota // Σ x[i]
	readXor                   // the xor of the bits of the x[i], as a float32's bits
	readPairs                 // Σ x[i]·x[h+i] for i < h, the floats being 2h
)

// sum returns r's fold of x, the floats after its last whole block added
// (or for an xor kernel xored) in Go.
func (r readKernel) sum(x []float32) float32 {
	n := len(x) - len(x)%r.block
	if n == len(x) {
		return r.fn(x)
	}
	s := r.fn(x[:n])
	for _, v := range x[n:] {
		s = r.fold(s, v)
	}
	return s
}

// fold returns s + v, or for an xor kernel s xor v (their bits).
func (r readKernel) fold(s, v float32) float32 {
	if r.kind == readXor {
		return math.Float32frombits(math.Float32bits(s) ^ math.Float32bits(v))
	}
	return s + v
}

// Name is the name of the kernels' register width: avx512, avx2, neon or
// generic.
func (k *Kernels) Name() string { return k.name }

// Bits is the width of the registers the kernels compute in (32 for the
// scalar Go loops).
func (k *Kernels) Bits() int { return k.bits }

// Missing returns the CPU features the kernels need and this CPU lacks,
// nil if it can run them.
func (k *Kernels) Missing() []string { return k.missing }

// FLOPsPerRound is the number of floating-point operations (an FMA counts
// two) one round of FMA performs.
func (k *Kernels) FLOPsPerRound() int { return 2 * k.chains * k.lanes }

// FMA runs rounds rounds of acc += a*b on every independent chain and
// returns the sum of the accumulators, which start at zero.
func (k *Kernels) FMA(rounds int) float32 { return k.fma(rounds, fmaA, fmaB) }

// Sum returns Σ x[i], reading x once from start to end. The order of the
// additions is unspecified.
func (k *Kernels) Sum(x []float32) float32 { return k.reads[0].sum(x) }

var generic = &Kernels{name: Generic, bits: 32, chains: genericChains, lanes: 1,
	fma: fmaGeneric, reads: []readKernel{{"readGeneric", 1, readGeneric, readSum}, {"xorGeneric", 1, xorGeneric, readXor}}}

// all holds every set of this architecture, widest first, generic last,
// each with the features this CPU lacks.
var all = func() []*Kernels {
	ks := append(slices.Clone(asmKernels), generic)
	for _, k := range ks {
		k.missing = impl.Missing(k.requires)
	}
	return ks
}()

// All returns every set of kernels of this build, widest first and generic
// last, whether this CPU can run them or not.
func All() []*Kernels { return slices.Clone(all) }

// Available returns the sets this CPU can run, widest first.
func Available() []*Kernels {
	return slices.DeleteFunc(All(), func(k *Kernels) bool { return k.missing != nil })
}

// Widest returns the widest set this CPU can run: the machine's own limits.
func Widest() *Kernels { return Available()[0] }

// Lookup returns the set of the given name if this CPU can run it.
func Lookup(name string) (*Kernels, bool) {
	for _, k := range Available() {
		if k.name == name {
			return k, true
		}
	}
	return nil, false
}

// Path names the kernels the package-level functions run: the widest.
func Path() string { return Widest().name }

// FLOPsPerRound is Widest().FLOPsPerRound().
func FLOPsPerRound() int { return Widest().FLOPsPerRound() }

// FMA is Widest().FMA.
func FMA(rounds int) float32 { return Widest().FMA(rounds) }

// Sum is Widest().Sum.
func Sum(x []float32) float32 { return Widest().Sum(x) }
