//go:build !unix

package testutil

import "testing"

// GuardSupported reports whether guard-page buffers are available here.
const GuardSupported = false

// Guarded is only available on unix; elsewhere it returns a plain slice.
func Guarded(t testing.TB, n int, after bool) []float32 { return make([]float32, n) }
