package main

import (
	"flag"
	"fmt"
	"math/bits"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The calibration kernels of package internal/calib (generated with
// -calib): they measure the machine's own limits, the peak FMA rate and the
// read bandwidth, against which `attention bench` sets its figures.

// calibFMAChains is the number of independent FMA chains: Zen 3 and recent
// Intel cores issue two 256-bit FMAs per cycle with a latency of 4 or 5
// cycles, so at least 10 chains in flight keep both pipes busy. 12
// accumulators and the two operands fit the 16 YMM registers.
const calibFMAChains = 12

// calibFMAChainsZ is the number of chains of the zmm FMA loop: two 512-bit
// pipes (Zen 5, Intel server cores) with a latency of 4 need 8 in flight;
// 16 also cover a latency of up to 8 cycles or a third pipe, and with the
// operands take 18 of the 32 ZMM registers.
const calibFMAChainsZ = 16

// calibZMM chooses, with -calib, the zmm kernels instead of the ymm ones.
// They go to a file of their own (calib_avx512_amd64.s), so that the ymm
// file holds no AVX-512 register at all, as no code an AVX2-only CPU may
// run can (the root package's requires_test.go checks it).
var calibZMM = flag.Bool("zmm", false, "with -calib, generate the zmm calibration kernels instead of the ymm ones")

// The ymm kernels measure the limits of code written for 256-bit
// registers (the avx2 implementation), the zmm ones those of the widest
// registers this architecture has (avx512): both, so that a figure can be
// set against either.
func genCalib() {
	if *calibZMM {
		genCalibFMAZ()
		genCalibReadZ()
		genCalibRead1("readOneAVX512", "zmm", ZMM, 64)
		genCalibPairs("pairsAVX512", "zmm", ZMM, 64)
		return
	}
	genCalibFMA()
	genCalibRead()
	genCalibRead1("readOneAVX2", "ymm", YMM, 32)
	genCalibPairs("pairsAVX2", "ymm", YMM, 32)
}

// genCalibPairs is the read as two streams, the buffer's halves, one
// multiplied into the other as Dot does: one operand of each FMA is a
// plain load, which needs no ALU port. The other reads issue one float
// add per load, on two ports, so at most two loads a cycle feed them,
// while a core with three load ports (Intel since Golden Cove) serves
// more from L1: Dot reached 116–124% of the ymm add read's limit there.
func genCalibPairs(name, kind string, vec func() VecVirtual, width int) {
	TEXT(name, NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc(name+" returns Σ x[i]·x[h+i] for i < h, 2h being len(x) rounded",
		"down to a multiple of "+fmt.Sprint(16*width/4)+", reading both halves from start to end at",
		"once with "+kind+" loads; the order of the additions is unspecified.")
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	acc := zeroedOf(vec, width, 8)
	label := name + "_"
	step := 8 * width                               // bytes of each half an iteration
	SHRQ(U8(bits.TrailingZeros(uint(2*step/4))), n) // iterations
	JZ(LabelRef(label + "done"))
	y := GP64()
	MOVQ(n, y)
	SHLQ(U8(bits.TrailingZeros(uint(step))), y)
	ADDQ(x, y)
	Label(label + "loop")
	for i, r := range acc {
		t := vec()
		VMOVUPS(Mem{Base: x, Disp: width * i}, t)
		VFMADD231PS(Mem{Base: y, Disp: width * i}, t, r)
	}
	ADDQ(U32(step), x)
	ADDQ(U32(step), y)
	DECQ(n)
	JNZ(LabelRef(label + "loop"))
	Label(label + "done")
	returnSum(acc, width)
}

// genCalibFMA: iters rounds of acc[c] += a*b on every chain, no memory
// traffic, so the loop runs at the FMA pipes' rate.
func genCalibFMA() {
	TEXT("fmaAVX2", NOSPLIT, "func(iters int, a, b float32) float32")
	Doc("fmaAVX2 runs iters rounds of acc += a*b on 12 independent chains of 8",
		"lanes (192 FLOPs a round) and returns the sum of the 96 accumulators,",
		"which start at 0.")
	n := Load(Param("iters"), GP64())
	va, vb := YMM(), YMM()
	VBROADCASTSS(paramAddr("a"), va)
	VBROADCASTSS(paramAddr("b"), vb)
	acc := zeros(calibFMAChains)
	TESTQ(n, n)
	JLE(LabelRef("fma_done"))
	Label("fma_loop")
	for _, r := range acc {
		VFMADD231PS(va, vb, r)
	}
	DECQ(n)
	JNZ(LabelRef("fma_loop"))
	Label("fma_done")
	sumTree(acc)
	Store(hsum(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genCalibRead: the sum of a buffer read as four streams at once, one per
// quarter, as the attention kernels read several rows: a single stream
// leaves the hardware prefetchers idle and understates what the caches and
// DRAM deliver. Each stream feeds two accumulators from one 64-byte line
// an iteration, one 32-byte load per add, so the loop runs at the load
// ports' (or the memory hierarchy's) rate.
func genCalibRead() {
	TEXT("readAVX2", NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc("readAVX2 returns the sum of x[i] for i < len(x) rounded down to a",
		"multiple of 64; the order of the additions is unspecified.")
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	acc := zeros(8)
	SHRQ(U8(6), n) // whole blocks: lines per quarter
	JZ(LabelRef("read_done"))
	quarter := GP64() // bytes in a quarter: n lines of 64 bytes
	MOVQ(n, quarter)
	SHLQ(U8(6), quarter)
	p := []Register{x, GP64(), GP64(), GP64()}
	for i := 1; i < 4; i++ {
		LEAQ(Mem{Base: p[i-1], Index: quarter, Scale: 1}, p[i])
	}
	Label("read_loop")
	for k, r := range acc {
		VADDPS(Mem{Base: p[k/2], Disp: 32 * (k % 2)}, r, r)
	}
	for _, r := range p {
		ADDQ(U8(64), r)
	}
	DECQ(n)
	JNZ(LabelRef("read_loop"))
	Label("read_done")
	sumTree(acc)
	Store(hsum(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genCalibRead1 is the read as one stream, eight 64-byte lines an
// iteration into eight accumulators, as Dot and the row kernels walk a
// row. Which of the two patterns a cache level serves faster depends on
// the core and the width (on Zen 5, ymm loads read an 8 MiB set about a
// tenth faster as one stream than as four), and a limit must be the
// faster, so the calibration runs both.
func genCalibRead1(name, kind string, vec func() VecVirtual, width int) {
	TEXT(name, NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc(name+" returns the sum of x[i] for i < len(x) rounded down to a",
		"multiple of 128, reading x from start to end with "+kind+" loads; the",
		"order of the additions is unspecified.")
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	acc := zeroedOf(vec, width, 8)
	label := name + "_"
	SHRQ(U8(7), n) // whole blocks of 512 bytes
	JZ(LabelRef(label + "done"))
	Label(label + "loop")
	for i := range 512 / width {
		r := acc[i%len(acc)]
		VADDPS(Mem{Base: x, Disp: width * i}, r, r)
	}
	ADDQ(U32(512), x)
	DECQ(n)
	JNZ(LabelRef(label + "loop"))
	Label(label + "done")
	returnSum(acc, width)
}

// genCalibFMAZ is genCalibFMA on 16 zmm chains of 16 lanes.
func genCalibFMAZ() {
	TEXT("fmaAVX512", NOSPLIT, "func(iters int, a, b float32) float32")
	Doc("fmaAVX512 runs iters rounds of acc += a*b on 16 independent chains of",
		"16 lanes (512 FLOPs a round) and returns the sum of the 256",
		"accumulators, which start at 0.")
	n := Load(Param("iters"), GP64())
	va, vb := ZMM(), ZMM()
	VBROADCASTSS(paramAddr("a"), va)
	VBROADCASTSS(paramAddr("b"), vb)
	acc := zerosZ(calibFMAChainsZ)
	TESTQ(n, n)
	JLE(LabelRef("fmaz_done"))
	Label("fmaz_loop")
	for _, r := range acc {
		VFMADD231PS(va, vb, r)
	}
	DECQ(n)
	JNZ(LabelRef("fmaz_loop"))
	Label("fmaz_done")
	sumTree(acc)
	Store(hsumZ(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genCalibReadZ is genCalibRead with 64-byte loads: four streams, each two
// lines an iteration into two accumulators, so that eight adds are in
// flight to cover the add latency at two loads a cycle.
func genCalibReadZ() {
	TEXT("readAVX512", NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc("readAVX512 returns the sum of x[i] for i < len(x) rounded down to a",
		"multiple of 128; the order of the additions is unspecified.")
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	acc := zerosZ(8)
	SHRQ(U8(7), n) // whole blocks: pairs of lines per quarter
	JZ(LabelRef("readz_done"))
	quarter := GP64() // bytes in a quarter: n pairs of 64-byte lines
	MOVQ(n, quarter)
	SHLQ(U8(7), quarter)
	p := []Register{x, GP64(), GP64(), GP64()}
	for i := 1; i < 4; i++ {
		LEAQ(Mem{Base: p[i-1], Index: quarter, Scale: 1}, p[i])
	}
	Label("readz_loop")
	for k, r := range acc {
		VADDPS(Mem{Base: p[k/2], Disp: 64 * (k % 2)}, r, r)
	}
	for _, r := range p {
		ADDQ(U32(128), r)
	}
	DECQ(n)
	JNZ(LabelRef("readz_loop"))
	Label("readz_done")
	sumTree(acc)
	Store(hsumZ(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// zeroedOf returns n vectors of width bytes made by vec, each set to 0.
func zeroedOf(vec func() VecVirtual, width, n int) []VecVirtual {
	acc := make([]VecVirtual, n)
	for i := range acc {
		acc[i] = vec()
		if width == 64 {
			VPXORD(acc[i], acc[i], acc[i])
		} else {
			VXORPS(acc[i], acc[i], acc[i])
		}
	}
	return acc
}

// returnSum returns the sum of the lanes of acc's vectors (width bytes
// each) and ends the function.
func returnSum(acc []VecVirtual, width int) {
	sumTree(acc)
	if width == 64 {
		Store(hsumZ(acc[0]), ReturnIndex(0))
	} else {
		Store(hsum(acc[0]), ReturnIndex(0))
	}
	VZEROUPPER()
	RET()
}
