//go:build purego

package attention

import "testing"

// Built with -tags purego, no accelerated path may be compiled in.
func TestPuregoIsGenericOnly(t *testing.T) {
	if got := Implementations(); len(got) != 1 || got[0] != "generic" || Implementation() != "generic" {
		t.Fatalf("purego build: Implementations() = %v, Implementation() = %q", got, Implementation())
	}
}
