//go:build !purego

package attention

import (
	"golang.org/x/sys/cpu"

	"github.com/glancelab/attention/internal/impl"
)

// avx2Features are the CPU features the generated kernels use, by the names
// their "// Requires:" lines give (a test checks every such line against
// this table). SSE and SSE2 are part of the amd64 baseline.
var avx2Features = map[string]bool{
	"SSE":  true,
	"SSE2": true,
	// avo's name for the prefetch instructions' extension, which came
	// with SSE: part of the amd64 baseline.
	"MMX+": true,
	"AVX":  cpu.X86.HasAVX,
	"AVX2": cpu.X86.HasAVX2,
	"FMA3": cpu.X86.HasFMA,
}

// useAsm selects the AVX2+FMA kernels.
var useAsm = allTrue(avx2Features)

func allTrue(m map[string]bool) bool {
	for _, ok := range m {
		if !ok {
			return false
		}
	}
	return true
}

func init() { impl.Register("avx2", &useAsm) }

func dotAsm(x, y []float32) float32                          { return dotAVX2(x, y) }
func scoreRowsAsm(dst, k []float32, stride int, q []float32) { scoreRowsAVX2(dst, k, stride, q) }
func axpyAsm(alpha float32, x, y []float32)                  { axpyAVX2(alpha, x, y) }
func blendRowsAsm(acc, w, v []float32, stride int)           { blendRowsAVX2(acc, w, v, stride) }
func maxAsm(x []float32) float32                             { return maxAVX2(x) }
func scaleAsm(s float32, x []float32)                        { scaleAVX2(s, x) }

// The exp kernels come in pairs: the fast one stops at the first block
// holding a large, infinite or NaN input, the special one takes over until
// the inputs are ordinary again. Both always make progress.
func expAsm(dst, x []float32) {
	for len(x) > 0 {
		k := expAVX2(dst, x)
		if k < len(x) {
			k += expSpecialAVX2(dst[k:], x[k:])
		}
		dst, x = dst[k:], x[k:]
	}
}

func expSumAsm(dst, x []float32, m float32) float32 {
	var s float32
	for len(x) > 0 {
		part, k := expSumAVX2(dst, x, m)
		s += part
		if k < len(x) {
			part, k2 := expSumSpecialAVX2(dst[k:], x[k:], m)
			s += part
			k += k2
		}
		dst, x = dst[k:], x[k:]
	}
	return s
}

func blockScoresAsm(st, qt, k []float32, stride int) { blockScoresAVX2(st, qt, k, stride) }
func blockBlendAsm(ot, st, v []float32, stride int, c []float32) {
	blockBlendAVX2(ot, st, v, stride, c)
}

func blockSoftmaxAsm(st, ml []float32) {
	blockMaxAVX2(st, ml)
	blockExpAsm(st, ml)
}

func blockExpAsm(st, ml []float32) {
	for len(st) > 0 {
		k := blockExpSumAVX2(st, ml)
		if k < len(st) {
			k += blockExpSumSpecialAVX2(st[k:], ml)
		}
		st = st[k:]
	}
}

func blockInAsm(qt, q []float32, stride, rows int)            { blockInAVX2(qt, q, stride, rows) }
func blockOutAsm(o []float32, stride, rows int, ot []float32) { blockOutAVX2(o, stride, rows, ot) }
func prefetchRowsAsm(x []float32, stride, rows, cols int)     { prefetchRowsAVX2(x, stride, rows, cols) }

// blockKeepAsm runs the AVX2 kernel on whole blocks of sixteen rows, in
// groups of sixteen keys; the last keys and partial blocks run the generic
// code.
func blockKeepAsm(st []float32, keep []byte, stride, rows int) {
	if rows == blockRows {
		n := len(st) / blockRows &^ 15
		blockKeepAVX2(st[:n*blockRows], keep, stride)
		st, keep = st[n*blockRows:], keep[n:]
	}
	blockKeepGeneric(st, keep, stride, rows)
}

func softcapPrepAsm(x, z []float32, inv float32) { softcapPrepAVX2(x, z, inv) }
func softcapFinishAsm(x, e []float32, c float32) { softcapFinishAVX2(x, e, c) }
func additivePrepAsm(x, z, u []float32, stride int, s []float32) {
	additivePrepAVX2(x, z, u, stride, s)
}
