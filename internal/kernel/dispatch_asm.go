//go:build (amd64 || arm64) && !purego

package kernel

// The kernels' fronts (zdispatch_GOARCH.go, generated from the kernel table
// in internal/kernels) switch on active, which internal/impl sets at init
// to the fastest implementation the CPU supports: a compare and a direct
// call into the assembly, with no function value (and its ABI wrapper) on
// the hot path. Without assembly (zdispatch_other.go) there is nothing to
// switch on.
//
// active is the one selection of the process: the fronts of package
// attention's exported family (its dispatch_GOARCH.go) read it through
// Active, so impl.Select and ATTENTION_IMPL change both packages at once.
var active uint8

// Active returns the selected implementation: one of the Impl constants of
// zdispatch_GOARCH.go, 0 for the generic code.
func Active() uint8 { return active }

// rowsPerCall is how many rows of d columns fit in one call's budget.
func rowsPerCall(d int) int { return max(1, maxCall/max(d, 1)) }
