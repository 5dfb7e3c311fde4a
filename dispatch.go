package attention

import (
	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/kernel"
)

// Implementation returns the name of the kernel implementation in use:
// "generic" (pure Go) or an accelerated path, "avx512", "avx2" or "neon".
// By default it is the first of Implementations, the fastest this CPU runs.
//
// The environment variable ATTENTION_IMPL, read once at program start,
// chooses another: "generic", or any name Implementations lists. Its value
// is trimmed of spaces and matched in any case (" AVX2" is "avx2"). Any
// other value, a name no implementation has or one this CPU lacks the
// features for, is ignored: the default runs (generic only if nothing
// faster is available), and ImplementationRequest says why. Built with the
// tag purego, the package has only the generic implementation.
func Implementation() string { return impl.Active() }

// ImplementationRequest returns the value of ATTENTION_IMPL as read at
// program start ("" if unset) and, if the value was ignored, an
// *ImplementationError (matching ErrArgument) that names the value, why it
// was ignored and the implementation that runs instead. err is nil if the
// variable is unset or empty, or was honoured.
func ImplementationRequest() (requested string, err error) {
	requested, rej := impl.Request()
	if rej == nil {
		return requested, nil
	}
	var names []string
	for _, in := range impl.All() {
		names = append(names, in.Name)
	}
	return requested, &ImplementationError{Value: requested, Missing: rej.Missing, Names: names, Running: rej.Instead}
}

// Implementations lists every implementation this CPU can run, the default
// first and "generic" last.
func Implementations() []string { return impl.List() }

// maxCall is the budget of one assembly call (see kernel.MaxCall), under the
// name the kernel table's fronts use.
const maxCall = kernel.MaxCall
