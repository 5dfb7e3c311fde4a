package main

import (
	"bytes"
	"fmt"
)

// The calibration kernels of package internal/calib (generated with
// -calib): they measure the machine's own limits, the peak FMA rate and the
// read bandwidth, against which `attention bench` sets its figures.

// calibFMAChains is the number of independent FMLA chains. Arm cores issue
// two to four 128-bit FMLAs per cycle with a latency of 4, so 16 chains
// (V0–V15, the operands in V16–V17) keep every pipe busy.
const calibFMAChains = 16

// calibReadBlock is the number of floats readNEON sums per loop iteration:
// two 64-byte VLD1 loads feeding eight accumulators.
const calibReadBlock = 32

var calibKernels = []kernel{
	{"fmaNEON", "iters int, a, b float32", "float32",
		"fmaNEON runs iters rounds of acc += a*b on 16 independent chains of 4\n// lanes (128 FLOPs a round) and returns the sum of the 64 accumulators,\n// which start at 0.",
		20, genCalibFMA},
	{"readNEON", "x []float32", "float32",
		"readNEON returns the sum of x[i] for i < len(x) rounded down to a\n// multiple of 32; the order of the additions is unspecified.",
		28, genCalibRead},
}

// generateCalib is generate for the calibration kernels, which need no
// read-only data.
func generateCalib() (asm, decls string) {
	a := &Asm{}
	a.b.WriteString("#include \"textflag.h\"\n")
	var d bytes.Buffer
	for _, k := range calibKernels {
		sig := "(" + k.params + ")"
		if k.results != "" {
			sig += " " + k.results
		}
		a.TEXT(k.name, sig, k.args)
		k.body(a)
		fmt.Fprintf(&d, "\n// %s\n//\n//go:noescape\nfunc %s%s\n", k.doc, k.name, sig)
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

// genCalibRead: the sum of a buffer streamed through eight accumulators.
func genCalibRead(a *Asm) {
	x, n, cnt := R(0), R(1), R(2)
	a.Op("MOVD x_base+0(FP), %s", x)
	a.Op("MOVD x_len+8(FP), %s", n)
	acc := regs(0, 8)
	zero(a, acc...)
	loop, done := a.NewLabel("loop"), a.NewLabel("done")
	a.Op("LSR $5, %s, %s", n, cnt) // whole blocks of calibReadBlock floats
	a.Op("CBZ %s, %s", cnt, done)
	a.Label(loop)
	a.Op("VLD1.P 64(%s), %s", x, list(16, 4))
	a.Op("VLD1.P 64(%s), %s", x, list(20, 4))
	for i, v := range acc {
		a.W(FADD(v, v, 16+V(i)))
	}
	a.Op("SUB $1, %s, %s", cnt, cnt)
	a.Op("CBNZ %s, %s", cnt, loop)
	a.Label(done)
	addTree(a, acc)
	hsum(a, 0)
	a.Op("FMOVS F0, ret+24(FP)")
	a.Op("RET")
}
