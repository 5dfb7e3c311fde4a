package attention

import "github.com/glancelab/attention/internal/impl"

// Implementation returns the name of the kernel implementation in use:
// "generic" (pure Go) or the name of an accelerated path such as "avx2".
// The environment variable ATTENTION_IMPL=generic, read at program start,
// or the build tag purego force the generic path.
func Implementation() string { return impl.Active() }

// Implementations lists every implementation this CPU can run, the default
// first and "generic" last.
func Implementations() []string { return impl.List() }

// additiveScores has no accelerated version yet on any architecture.
func additiveScores(dst, u []float32, stride int, s, v []float32) {
	additiveScoresGeneric(dst, u, stride, s, v)
}
