// Package kernels describes, once, every kernel of this module: its Go
// signature, its contract, how its front splits long calls, and what each
// implementation provides for it. The generators in asm/ emit from this
// table the assembly and its stubs, the dispatch fronts and the fallback
// for builds without assembly; the tests of internal/kernel check every
// kernel of it on every implementation.
//
// A kernel is emitted into internal/kernel (Engine), and the exported
// family (what Dot, Axpy, Exp and Softmax run) into package attention
// (Root) as well.
//
// Names follow from the table: a kernel's front is Name (exported in
// internal/kernel), its generic twin
// Base+"Generic" (written by hand beside the other generic kernels) and an
// implementation's function Base+Impl.Suffix, or for a kernel with a
// function per row count Base+"R3"+Impl.Suffix and its asking copy
// Base+"R3Ask"+Impl.Suffix (see variants.go, and gains.go for the tiers).
package kernels

import (
	"slices"
	"strings"
)

// Use says what an implementation provides for a kernel.
type Use uint8

const (
	// Generic: the implementation runs the generic twin.
	Generic Use = iota
	// Asm: one generated function, Base+Suffix, with the kernel's
	// signature, called directly by the front.
	Asm
	// Pair: two generated functions, Base+"Fast"+Suffix and
	// Base+"Special"+Suffix, each doing a prefix of the input and
	// returning how many elements it did (and, for a kernel with a
	// float32 result, the sum of that prefix). A generated Go adapter
	// named Base+Suffix alternates them until the input is done.
	Pair
	// NoOp: nothing; only for hint kernels whose contract allows it.
	NoOp
	// Reuse: the functions of the implementation that Impl.Reuses names,
	// for a kernel a wider register file cannot speed up (the table says
	// why beside the entry).
	Reuse
)

func (u Use) String() string {
	switch u {
	case Generic:
		return "generic"
	case Asm:
		return "asm"
	case Pair:
		return "pair"
	case NoOp:
		return "no-op"
	case Reuse:
		return "reuse"
	}
	return "Use(?)"
}

// Kernel is one row of the table.
type Kernel struct {
	Name    string // the front, as package attention calls it (exported in internal/kernel)
	Base    string // the stem of the implementations' names; Name if empty
	Params  string // Go parameter list
	Results string // Go result list; empty for none
	// Doc is the contract, a sentence without its subject: the
	// generators prefix the function's name ("dot" + " returns ...").
	Doc string
	// Split, if not nil, says how the front cuts a call into calls of at
	// most one call's budget (Go cannot preempt assembly). A nil Split
	// means the callers size each call within that budget themselves.
	Split *Split
	// Pair describes the two halves of implementations that use Pair.
	Pair *PairDoc
	// Generic is Generic, or NoOp for a hint kernel without a generic
	// twin.
	Generic Use
	// Impls gives, by implementation name, what each provides; an
	// implementation the map does not name runs the generic twin.
	Impls map[string]Use
	// Pkgs says which packages the generators emit the kernel into;
	// zero means Engine only.
	Pkgs Pkg

	// Rows, for a kernel with a function per row count, gives them.
	Rows *ByRows
	// Tiers gives, for a kernel that is a variant of another (its Doc
	// says of which), by implementation with code of its own, the
	// kernel's tier there and the gain that earns it; with Rows, an
	// Experimental kernel makes each of its functions Experimental.
	Tiers map[string]Tiered
	// Widths gives, by implementation, the row widths its functions have
	// a section of their own for (see Width).
	Widths map[string][]Width
}

// Pkg is a set of the packages the generators emit kernels into.
type Pkg uint8

const (
	// Engine is internal/kernel: every kernel the engine calls, its front
	// exported (Name with its first letter upper case).
	Engine Pkg = 1 << iota
	// Root is package attention, the repository root: the exported family
	// (what Dot, Axpy, Exp and Softmax run), its fronts unexported.
	Root
)

// PkgNamed returns the package a generator's -pkg value names:
// "attention" for Root, "kernel" for Engine.
func PkgNamed(name string) (Pkg, bool) {
	switch name {
	case "attention":
		return Root, true
	case "kernel":
		return Engine, true
	}
	return 0, false
}

// In reports whether the generators emit k into package p.
func (k Kernel) In(p Pkg) bool {
	if k.Pkgs == 0 {
		return p == Engine
	}
	return k.Pkgs&p != 0
}

// In returns the kernels of package p, in the order of All.
func In(p Pkg) []Kernel {
	var r []Kernel
	for _, k := range All {
		if k.In(p) {
			r = append(r, k)
		}
	}
	return r
}

// Front returns the name of k's front in package p: Name in Root, Name
// exported in Engine.
func (k Kernel) Front(p Pkg) string {
	if p == Engine {
		return strings.ToUpper(k.Name[:1]) + k.Name[1:]
	}
	return k.Name
}

// Split describes a front's cutting of a long call. The generated front
// calls the kernel on units [lo, hi) of N, at most Per at a time, and
// combines the results with Reduce.
type Split struct {
	N    string // Go expression: how many units the call covers
	Per  string // Go expression: how many units one call may take
	Args string // Go expression list: the arguments for units [lo, hi)
	// Reduce combines the results of a kernel with one: "+" adds them,
	// "max" keeps the largest (NaN if any is NaN).
	Reduce string
}

// PairDoc holds what the halves of a Pair do.
type PairDoc struct {
	// Advance lists the parameters that move on by the elements done; the
	// last of them bounds the loop.
	Advance []string
	Fast    string // contract of the fast half, without its subject
	Special string // contract of the special half, without its subject
}

// Stem returns the stem of the implementations' names.
func (k Kernel) Stem() string {
	if k.Base != "" {
		return k.Base
	}
	return k.Name
}

// Impl is an implementation of the kernels for one architecture.
type Impl struct {
	Name   string // as attention.Implementation reports it
	Arch   string // GOARCH
	Suffix string // of its functions' names
	// Requires lists the CPU features, by the names of avo's
	// "// Requires:" lines, that its code may use beyond the
	// architecture's baseline; dispatch enables it only where the CPU
	// has all of them (see internal/impl).
	Requires []string
	// Reuses names the implementation whose functions the kernels marked
	// Reuse run; its Requires must be a subset of this one's.
	Reuses string
	// Traits is what the engine plans by for it (see traits.go).
	Traits Traits
}

// Impls lists the implementations; within an architecture the first one
// the CPU supports is the default.
var Impls = []Impl{
	{
		Name: "avx512", Arch: "amd64", Suffix: "AVX512", Reuses: "avx2",
		Requires: []string{"AVX", "AVX2", "FMA3", "F16C", "AVX512F", "AVX512BW", "AVX512DQ", "AVX512VL"},
		Traits:   avx512Traits,
	},
	// F16C (the half-precision conversions) came before AVX2 on every
	// line of Intel and AMD CPUs, so requiring it excludes no AVX2 CPU.
	{Name: "avx2", Arch: "amd64", Suffix: "AVX2", Requires: []string{"AVX", "AVX2", "FMA3", "F16C"}, Traits: avx2Traits},
	{Name: "neon", Arch: "arm64", Suffix: "NEON", Requires: []string{"ASIMD"}, Traits: neonTraits},
}

// Arches returns the architectures that have an implementation, in the
// order of Impls.
func Arches() []string {
	var a []string
	for _, im := range Impls {
		if !slices.Contains(a, im.Arch) {
			a = append(a, im.Arch)
		}
	}
	return a
}

// For returns the implementations of an architecture, default first.
func For(arch string) []Impl {
	var r []Impl
	for _, im := range Impls {
		if im.Arch == arch {
			r = append(r, im)
		}
	}
	return r
}

// Use returns what implementation name provides for k.
func (k Kernel) Use(name string) Use { return k.Impls[name] }

// Named returns the implementation called name.
func Named(name string) (Impl, bool) {
	for _, im := range Impls {
		if im.Name == name {
			return im, true
		}
	}
	return Impl{}, false
}

// Runs returns the implementation whose functions im runs for k and what
// they are: im itself, or for Reuse the implementation it reuses.
func (k Kernel) Runs(im Impl) (Impl, Use) {
	u := k.Use(im.Name)
	if u == Reuse {
		if r, ok := Named(im.Reuses); ok {
			return r, k.Use(r.Name)
		}
	}
	return im, u
}
