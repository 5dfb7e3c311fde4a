//go:build !race

package testutil

// Race reports whether the tests run under the race detector.
const Race = false
