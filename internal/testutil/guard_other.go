//go:build !unix

package testutil

import "testing"

// GuardSupported reports whether guard-page buffers are available here.
const GuardSupported = false

// Guarded is only available on unix; elsewhere it returns a plain slice.
func Guarded(t testing.TB, n int, after bool) []float32 { return make([]float32, n) }

// GuardedRows is only available on unix; elsewhere it returns the same
// layout (one row per 4 KiB) with nothing hidden.
func GuardedRows(t testing.TB, rows, cols int, hide func(i int) bool) (data []float32, stride int) {
	stride = 1024
	if rows == 0 {
		return nil, stride
	}
	return make([]float32, (rows-1)*stride+cols), stride
}
