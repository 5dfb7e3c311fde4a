//go:build !purego

package attention

import (
	"golang.org/x/sys/cpu"

	"github.com/glancelab/attention/internal/impl"
)

// useAsm selects the NEON kernels. Advanced SIMD is part of every ARMv8-A
// core Go supports, but the check keeps the registry honest.
var useAsm = cpu.ARM64.HasASIMD

func init() { impl.Register("neon", &useAsm) }

func dotAsm(x, y []float32) float32                          { return dotNEON(x, y) }
func scoreRowsAsm(dst, k []float32, stride int, q []float32) { scoreRowsNEON(dst, k, stride, q) }
func axpyAsm(alpha float32, x, y []float32)                  { axpyNEON(alpha, x, y) }
func blendRowsAsm(acc, w, v []float32, stride int)           { blendRowsNEON(acc, w, v, stride) }
func maxAsm(x []float32) float32                             { return maxNEON(x) }
func scaleAsm(s float32, x []float32)                        { scaleNEON(s, x) }
func expAsm(dst, x []float32)                                { expNEON(dst, x) }
func expSumAsm(dst, x []float32, m float32) float32          { return expSumNEON(dst, x, m) }

func blockScoresAsm(st, qt, k []float32, stride int) { blockScoresNEON(st, qt, k, stride) }
func blockBlendAsm(ot, st, v []float32, stride int, c []float32) {
	blockBlendNEON(ot, st, v, stride, c)
}

func blockSoftmaxAsm(st, ml []float32) {
	blockMaxNEON(st, ml)
	blockExpSumNEON(st, ml)
}

func blockExpAsm(st, ml []float32) { blockExpSumNEON(st, ml) }

// The transposes into and out of the lanes run the generic code on arm64.
func blockInAsm(qt, q []float32, stride, rows int)            { blockInGeneric(qt, q, stride, rows) }
func blockOutAsm(o []float32, stride, rows int, ot []float32) { blockOutGeneric(o, stride, rows, ot) }

// Without arm64 hardware to measure it on, the engine's prefetch hint is a
// no-op there.
func prefetchRowsAsm(x []float32, stride, rows, cols int) {}

func blockKeepAsm(st []float32, keep []byte, stride, rows int) {
	blockKeepGeneric(st, keep, stride, rows)
}

// The tanh steps around the Exp kernel (softcap, additive scores) run the
// generic code on arm64.
func softcapPrepAsm(x, z []float32, inv float32) { softcapPrepGeneric(x, z, inv) }
func softcapFinishAsm(x, e []float32, c float32) { softcapFinishGeneric(x, e, c) }
func additivePrepAsm(x, z, u []float32, stride int, s []float32) {
	additivePrepGeneric(x, z, u, stride, s)
}
