package main

import (
	"bytes"
)

// The calibration kernels of package internal/calib (generated with
// -calib): they measure the machine's own limits, the peak FMA rate and the
// read bandwidth, against which `attention bench` sets its figures.

// calibFMAChains is the number of independent FMLA chains. Arm cores issue
// two to four 128-bit FMLAs per cycle with a latency of 4, so 16 chains
// (V0–V15, the operands in V16–V17) keep every pipe busy.
const calibFMAChains = 16

var calibKernels = []kernel{
	{"fmaNEON", "iters int, a, b float32", "float32",
		"runs iters rounds of acc += a*b on 16 independent chains of 4 lanes (128 FLOPs a round) and returns the sum of the 64 accumulators, which start at 0.",
		genCalibFMA},
	{"readNEON", "x []float32", "float32",
		"returns the sum of x[i] for i < len(x) rounded down to a multiple of 64; the order of the additions is unspecified.",
		genCalibRead},
}

// generateCalib is generate for the calibration kernels, which need no
// read-only data.
func generateCalib() (asm, decls string) {
	a := &Asm{}
	a.b.WriteString("#include \"textflag.h\"\n")
	var d bytes.Buffer
	for _, k := range calibKernels {
		emit(a, &d, k)
	}
	return a.b.String(), d.String()
}

// genCalibFMA: iters rounds of acc[c] += a*b on every chain, no memory
// traffic, so the loop runs at the FMA pipes' rate.
func genCalibFMA(a *Asm) {
	n := R(0)
	a.Op("MOVD iters+0(FP), %s", n)
	a.Op("FMOVS a+8(FP), %s", V(16).F())
	a.Op("FMOVS b+12(FP), %s", V(17).F())
	a.Op("VDUP %s, %s", V(16).Lane(0), V(16).S4())
	a.Op("VDUP %s, %s", V(17).Lane(0), V(17).S4())
	acc := regs(0, calibFMAChains)
	zero(a, acc...)
	loop, done := a.NewLabel("loop"), a.NewLabel("done")
	a.Op("CMP $0, %s", n)
	a.Op("BLE %s", done)
	a.Label(loop)
	for _, v := range acc {
		a.Op("VFMLA %s, %s, %s", V(16).S4(), V(17).S4(), v.S4())
	}
	a.Op("SUB $1, %s, %s", n, n)
	a.Op("CBNZ %s, %s", n, loop)
	a.Label(done)
	addTree(a, acc)
	hsum(a, 0)
	a.Op("FMOVS F0, ret+16(FP)")
	a.Op("RET")
}

// genCalibRead: the sum of a buffer read as four streams at once, one per
// quarter, as the attention kernels read several rows (a single stream
// leaves the hardware prefetchers idle): 64 bytes from each stream an
// iteration, into eight accumulators.
func genCalibRead(a *Asm) {
	x, n, quarter := R(0), R(1), R(2)
	p := []R{x, 3, 4, 5}
	a.Op("MOVD x_base+0(FP), %s", x)
	a.Op("MOVD x_len+8(FP), %s", n)
	acc := regs(0, 8)
	zero(a, acc...)
	loop, done := a.NewLabel("loop"), a.NewLabel("done")
	a.Op("LSR $6, %s, %s", n, n) // whole blocks: 64-byte pieces per quarter
	a.Op("CBZ %s, %s", n, done)
	a.Op("LSL $6, %s, %s", n, quarter) // bytes in a quarter
	for i := 1; i < 4; i++ {
		a.Op("ADD %s, %s, %s", quarter, p[i-1], p[i])
	}
	a.Label(loop)
	for i, r := range p {
		a.Op("VLD1.P 64(%s), %s", r, list(16+4*V(i), 4))
	}
	for i := range 16 {
		a.W(FADD(acc[i%8], acc[i%8], 16+V(i)))
	}
	a.Op("SUB $1, %s, %s", n, n)
	a.Op("CBNZ %s, %s", n, loop)
	a.Label(done)
	addTree(a, acc)
	hsum(a, 0)
	a.Op("FMOVS F0, ret+24(FP)")
	a.Op("RET")
}
