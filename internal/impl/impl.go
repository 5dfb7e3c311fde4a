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
	"slices"
	"strings"
)

// Generic is the name of the pure-Go path, always available.
const Generic = "generic"

// EnvVar names the environment variable that, set to "generic" or to the
// name of an available implementation, chooses the path at init. Its value
// is matched in any case and trimmed of spaces (see Canonical); any other
// value is ignored, the default runs, and Request says why.
const EnvVar = "ATTENTION_IMPL"

// Canonical returns the name a value of EnvVar asks for: trimmed of spaces
// and lower case, as every registered name is.
//
// Only ASCII letters and spaces are folded (names are ASCII), so that the
// package links no Unicode tables into every program that uses a kernel.
func Canonical(value string) string {
	i, j := 0, len(value)
	for i < j && asciiSpace(value[i]) {
		i++
	}
	for j > i && asciiSpace(value[j-1]) {
		j--
	}
	b := []byte(value[i:j])
	for k, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[k] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

type entry struct {
	name    string
	id      uint8
	missing []string // features the CPU lacks; none if available
}

var (
	registry []entry
	active   *uint8 // the selection the kernels read
	initial  uint8  // its value after init, for Reset

	// requested is EnvVar as read when this package is initialized, before
	// any Register.
	requested = os.Getenv(EnvVar)
)

// Register records an implementation, fastest first: id (at least 1) is
// the value *sel takes when it is selected, requires the features it needs
// (by the names of avo's "// Requires:" lines, see Features). Call from
// init. The first available implementation becomes the selection, unless
// EnvVar names another available one, or generic: a name no implementation
// has, or one the CPU cannot run, never selects the generic path.
func Register(sel *uint8, id uint8, name string, requires ...string) {
	if name == Generic || name == "" || strings.ContainsAny(name, " /=") || name != Canonical(name) || id == 0 {
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
	*sel = choose()
	initial = *sel
}

// choose returns the id the registry so far selects for the request: the
// implementation it names if available, 0 for generic, else the first
// available one (0 if none is).
func choose() uint8 {
	want := Canonical(requested)
	if want == Generic {
		return 0
	}
	var first uint8
	for _, e := range registry {
		if e.missing != nil {
			continue
		}
		if e.name == want {
			return e.id
		}
		if first == 0 {
			first = e.id
		}
	}
	return first
}

// Rejection says why EnvVar's value was not honoured.
type Rejection struct {
	// Missing lists the CPU features the implementation of that name
	// needs and this CPU lacks; it is nil if no implementation has the
	// name.
	Missing []string
	// Instead names the implementation selected at init in its place.
	Instead string
}

// Request returns EnvVar's value as read at init ("" if unset) and, if it
// was set and not honoured, why; rej is nil if it was unset or honoured.
func Request() (value string, rej *Rejection) {
	want := Canonical(requested)
	if want == "" || want == Generic {
		return requested, nil
	}
	rej = &Rejection{Instead: nameOf(initial)}
	for _, e := range registry {
		if e.name == want {
			if e.missing == nil {
				return requested, nil
			}
			rej.Missing = slices.Clone(e.missing)
		}
	}
	return requested, rej
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
	if active == nil {
		return Generic
	}
	return nameOf(*active)
}

// nameOf returns the name of the implementation with the given id.
func nameOf(id uint8) string {
	for _, e := range registry {
		if id == e.id {
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
