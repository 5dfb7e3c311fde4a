// Package impl is the registry of kernel implementations, in the manner of
// the Go tree's crypto/internal/impl: each accelerated path registers its
// name and a pointer to the bool that enables it, so tests, fuzzers and
// benchmarks can run every path the CPU supports, one at a time.
//
// The generic path is implicit: it runs whenever no registered path is
// enabled. Select and Reset are not safe for concurrent use with kernels;
// only tests and benchmarks call them.
package impl

import (
	"os"
	"strings"
)

// Generic is the name of the pure-Go path, always available.
const Generic = "generic"

// EnvVar names the environment variable that, set to "generic" (or to any
// registered name), chooses the path at init.
const EnvVar = "ATTENTION_IMPL"

type entry struct {
	name      string
	available bool // the CPU supports it
	initial   bool // enabled at init: available and not excluded by EnvVar
	toggle    *bool
}

var registry []entry

// Register records an implementation. *toggle must hold whether the CPU
// supports it; Register keeps that as its availability. Call from init.
// If EnvVar names another implementation (or generic), the toggle is
// cleared so that path stays off.
func Register(name string, toggle *bool) {
	available := *toggle
	if name == Generic || strings.ContainsAny(name, " /=") {
		panic("impl: invalid implementation name " + name)
	}
	for _, e := range registry {
		if e.name == name {
			panic("impl: duplicate implementation " + name)
		}
	}
	if want := os.Getenv(EnvVar); want != "" && want != name {
		*toggle = false
	}
	registry = append(registry, entry{name: name, available: available, initial: *toggle, toggle: toggle})
}

// List returns the names of every available implementation, generic last.
func List() []string {
	var names []string
	for _, e := range registry {
		if e.available {
			names = append(names, e.name)
		}
	}
	return append(names, Generic)
}

// Active returns the name of the implementation the kernels use now.
func Active() string {
	for _, e := range registry {
		if *e.toggle {
			return e.name
		}
	}
	return Generic
}

// Select enables the named implementation alone and reports whether it is
// available.
func Select(name string) bool {
	found := name == Generic
	for _, e := range registry {
		on := e.name == name && e.available
		*e.toggle = on
		found = found || on
	}
	return found
}

// Reset restores the selection made at init (honouring EnvVar).
func Reset() {
	for _, e := range registry {
		*e.toggle = e.initial
	}
}
