//go:build (amd64 || arm64) && !purego

package attention

// The kernels' fronts (dispatch_GOARCH.go, generated from the kernel table
// in internal/kernels) switch on active, which internal/impl sets at init
// to the fastest implementation the CPU supports: a compare and a direct
// call into the assembly, with no function value (and its ABI wrapper) on
// the hot path. Without assembly (dispatch_other.go) there is nothing to
// switch on.
var active uint8

// rowsPerCall is how many rows of d columns fit in one call's budget.
func rowsPerCall(d int) int { return max(1, maxCall/max(d, 1)) }
