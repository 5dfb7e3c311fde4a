package main

import (
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

func genCalib() {
	genCalibFMA()
	genCalibRead()
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
