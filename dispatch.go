package attention

import "github.com/glancelab/attention/internal/impl"

// Dispatch: each unexported kernel picks its implementation by the bools the
// accelerated paths register. Until an accelerated path exists for this
// architecture, every kernel runs the generic code.

func dot(x, y []float32) float32 { return dotGeneric(x, y) }

func scoreRows(dst, k []float32, stride int, q []float32) {
	scoreRowsGeneric(dst, k, stride, q)
}

func axpy(alpha float32, x, y []float32) { axpyGeneric(alpha, x, y) }

func blendRows(acc, w, v []float32, stride int) { blendRowsGeneric(acc, w, v, stride) }

func maxf(x []float32) float32 { return maxGeneric(x) }

func expv(dst, x []float32) { expGeneric(dst, x) }

func expSum(dst, x []float32, m float32) float32 { return expSumGeneric(dst, x, m) }

func scale(s float32, x []float32) { scaleGeneric(s, x) }

func additiveScores(dst, u []float32, stride int, s, v []float32) {
	additiveScoresGeneric(dst, u, stride, s, v)
}

// Implementation returns the name of the kernel implementation in use:
// "generic" (pure Go) or the name of an accelerated path such as "avx2".
// The environment variable ATTENTION_IMPL=generic, read at program start,
// or the build tag purego force the generic path.
func Implementation() string { return impl.Active() }

// Implementations lists every implementation this CPU can run, the default
// first and "generic" last.
func Implementations() []string { return impl.List() }
