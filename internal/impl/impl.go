// Package impl is the registry of kernel implementations, in the manner of
// the Go tree's crypto/internal/impl: each accelerated path registers its
// name, the CPU features it needs and the value that selects it, so tests,
// fuzzers and benchmarks can run every path the CPU supports, one at a
// time, and say which they could not.
//
// Selection is one small integer (0 is the generic path), read by the
// kernels' fronts on every call: a compare and a direct call into the
// assembly, with no function value on the hot path. Select and Reset are
// not safe for concurrent use with kernels; only tests and benchmarks call
// them.
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
	name    string
	id      uint8
	missing []string // features the CPU lacks; none if available
}

var (
	registry []entry
	active   *uint8 // the selection the kernels read
	initial  uint8  // its value after init, for Reset
)

// Register records an implementation, fastest first: id (at least 1) is
// the value *sel takes when it is selected, requires the features it needs
// (by the names of avo's "// Requires:" lines, see Features). Call from
// init. The first available implementation becomes the selection, unless
// EnvVar names another one (or generic).
func Register(sel *uint8, id uint8, name string, requires ...string) {
	if name == Generic || name == "" || strings.ContainsAny(name, " /=") || id == 0 {
		panic("impl: invalid implementation " + name)
	}
	if active != nil && active != sel {
		panic("impl: implementations of one package share one selection")
	}
	for _, e := range registry {
		if e.name == name || e.id == id {
			panic("impl: duplicate implementation " + name)
		}
	}
	e := entry{name: name, id: id, missing: Missing(requires)}
	registry = append(registry, e)
	active = sel
	want := os.Getenv(EnvVar)
	if e.missing == nil && (want == name || want == "" && *sel == 0) {
		*sel = id
	}
	initial = *sel
}

// Info describes a registered implementation.
type Info struct {
	Name    string
	Missing []string // the CPU features it needs and this CPU lacks
}

// All returns every registered implementation, available or not, in the
// order of registration, and generic last.
func All() []Info {
	var all []Info
	for _, e := range registry {
		all = append(all, Info{e.name, e.missing})
	}
	return append(all, Info{Name: Generic})
}

// List returns the names of every available implementation, generic last.
func List() []string {
	var names []string
	for _, in := range All() {
		if in.Missing == nil {
			names = append(names, in.Name)
		}
	}
	return names
}

// Active returns the name of the implementation the kernels use now.
func Active() string {
	for _, e := range registry {
		if *active == e.id {
			return e.name
		}
	}
	return Generic
}

// Select makes the named implementation the one the kernels use and
// reports whether it is available; if it is not, nothing changes.
func Select(name string) bool {
	if name == Generic {
		if active != nil {
			*active = 0
		}
		return true
	}
	for _, e := range registry {
		if e.name == name && e.missing == nil {
			*active = e.id
			return true
		}
	}
	return false
}

// Reset restores the selection made at init (honouring EnvVar).
func Reset() {
	if active != nil {
		*active = initial
	}
}
