// Command amd64 generates the AVX-512 and AVX2+FMA kernels with avo: with
// -pkg kernel those of internal/kernel, with -pkg attention the exported
// family of package attention. Run it through go generate in either
// package; see attention.go and internal/kernel/kernel.go.
//
// Every function is one of the kernel table in internal/kernels, which
// gives its name, signature and contract; its body mirrors the generic twin
// (internal/kernel/generic.go and beside it). Loads are unaligned (Go guarantees
// only 4-byte alignment), tails use VMASKMOVPS so no byte outside the slices
// is read or written, and every function ends with VZEROUPPER.
package main

import (
	"flag"
	"fmt"
	"log"
	"math"

	"github.com/glancelab/attention/asm/internal/doc"
	"github.com/glancelab/attention/internal/kernels"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var (
	calib        = flag.Bool("calib", false, "generate the calibration kernels of internal/calib instead (see calib.go)")
	experimental = flag.Bool("experimental", false, "generate the functions the kernel table makes experimental instead, for the files built with the "+kernels.ExperimentalTag+" tag")
)

func main() {
	flag.Parse()
	ConstraintExpr("!purego")
	if *experimental {
		ConstraintExpr(kernels.ExperimentalTag)
	}
	if *calib {
		genCalib()
		Generate()
		return
	}
	pkg, ok := kernels.PkgNamed(flag.Lookup("pkg").Value.String())
	if !ok {
		log.Fatal("amd64: -pkg must be attention (the exported family) or kernel (internal/kernel)")
	}
	if *experimental && pkg != kernels.Engine {
		log.Fatal("amd64: -experimental goes with -pkg kernel: only internal/kernel has variants")
	}
	for _, im := range kernels.For("amd64") {
		generate(im, generators[im.Name], pkg)
	}
	Generate()
}

// generators holds, by implementation and then by the stem of a function
// (see kernels.Func), what emits the function's body; each kernel file
// registers its own.
var generators = map[string]map[string]func(){"avx512": avx512, "avx2": avx2}

var avx2, avx512 = map[string]func(){}, map[string]func(){}

// fn is the name of the function being generated, for its labels.
var fn string

// generate emits every function of the table that im provides in the
// tier being generated (Experimental with -experimental, else
// Production), with the signature and contract the table gives, and fails
// on a function without a generator or a generator without a function (of
// the whole table: package pkg has only its own kernels, and a run only
// its tier's).
func generate(im kernels.Impl, gens map[string]func(), pkg kernels.Pkg) {
	used := map[string]bool{}
	for _, k := range kernels.All {
		for _, f := range k.Funcs(im.Name) {
			body, ok := gens[f.Stem]
			if !ok {
				log.Fatalf("%s: no generator for %s%s (kernel %s)", im.Name, f.Stem, im.Suffix, k.Name)
			}
			used[f.Stem] = true
			if !k.In(pkg) || (f.Tier == kernels.Experimental) != *experimental {
				continue
			}
			fn = f.Stem + im.Suffix
			TEXT(fn, NOSPLIT, f.Sig())
			Pragma("noescape")
			d := fn + " " + f.Doc
			if f.Tier == kernels.Experimental {
				d += " Experimental: assembled only with the " + kernels.ExperimentalTag + " tag (see zfallback_amd64.go)."
			}
			Doc(doc.Lines(d)...)
			body()
		}
	}
	for stem := range gens {
		if !used[stem] {
			log.Fatalf("%s: generator %s matches no function of the kernel table", im.Name, stem)
		}
	}
}

// consts holds the 32-byte broadcast constants already emitted, by name.
var consts = map[string]Mem{}

// vec32 returns a read-only 32-byte global holding bits in all 8 lanes, so
// it can be a memory operand of a 256-bit instruction (AVX2 has no embedded
// broadcast).
func vec32(name string, bits uint32) Mem {
	if m, ok := consts[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	for i := range 8 {
		DATA(4*i, U32(bits))
	}
	consts[name] = m
	return m
}

// dwords returns a read-only global of the 32-bit values v, once per name.
func dwords(name string, v []uint32) Mem {
	if m, ok := consts[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	for i, x := range v {
		DATA(4*i, U32(x))
	}
	consts[name] = m
	return m
}

// vecF returns vec32 for a float32 constant.
func vecF(name string, f float64) Mem {
	if float64(float32(f)) != f {
		panic(fmt.Sprintf("%s = %v is not a float32", name, f))
	}
	return vec32(name, math.Float32bits(float32(f)))
}

// tailMask loads into a new register the mask whose first n lanes are set
// (1 <= n <= 7): the 8 lanes of maskTable starting at entry 8-n.
func tailMask(n Register) VecVirtual {
	if _, ok := consts["masktable"]; !ok {
		m := GLOBL("masktable", RODATA|NOPTR)
		for i := range 16 {
			v := uint32(0)
			if i < 8 {
				v = 0xffffffff
			}
			DATA(4*i, U32(v))
		}
		consts["masktable"] = m
	}
	base := GP64()
	LEAQ(consts["masktable"], base)
	off := GP64()
	MOVQ(U32(8), off)
	SUBQ(n, off)
	mask := YMM()
	VMOVDQU(Mem{Base: base, Index: off, Scale: 4}, mask)
	return mask
}

// paramAddr returns the stack address of a scalar argument, for
// instructions that read it straight from memory (VBROADCASTSS).
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// hsum adds the 8 lanes of v and returns the sum in the low lane of an XMM,
// with shuffles that cost less latency than two VHADDPS.
func hsum(v VecVirtual) VecVirtual {
	hi := XMM()
	VEXTRACTF128(U8(1), v, hi)
	lo := v.AsX()
	VADDPS(hi, lo, lo)
	t := XMM()
	VMOVSHDUP(lo, t)
	VADDPS(t, lo, lo) // lanes 0 and 2 hold pair sums
	VMOVHLPS(lo, t, t)
	VADDSS(t, lo, lo)
	return lo.(VecVirtual)
}

// sumTree adds the registers pairwise into v[0].
func sumTree(v []VecVirtual) {
	for step := 1; step < len(v); step *= 2 {
		for i := 0; i+step < len(v); i += 2 * step {
			VADDPS(v[i+step], v[i], v[i])
		}
	}
}

// stream emits the usual walk over n elements: blocks of four vectors, then
// single vectors, then a masked tail. body(u, mask) emits the work on vector
// u of the block at the current pointers (mask is nil but for the tail);
// the pointers in ptrs then advance together.
func stream(name string, n Register, ptrs []Register, body func(u int, mask VecVirtual)) {
	for _, U := range []int{4, 1} {
		loop, next := fmt.Sprintf("%s_loop%d", name, 8*U), fmt.Sprintf("%s_next%d", name, 8*U)
		Label(loop)
		CMPQ(n, U8(8*U))
		JL(LabelRef(next))
		for u := range U {
			body(u, nil)
		}
		for _, p := range ptrs {
			ADDQ(U32(32*U), p)
		}
		SUBQ(U8(8*U), n)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	body(0, tailMask(n))
	Label(name + "_done")
}

func zeros(n int) []VecVirtual {
	v := make([]VecVirtual, n)
	for i := range v {
		v[i] = YMM()
		VXORPS(v[i], v[i], v[i])
	}
	return v
}
