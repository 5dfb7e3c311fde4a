package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"slices"
	"strings"

	"github.com/glancelab/attention/internal/kernels"
)

// sig is a kernel's signature as the generated code uses it.
type sig struct {
	names   []string // parameter names
	args    string   // them, as a call's arguments
	results string
}

func (s sig) void() bool { return s.results == "" }

// ret is "return " for a kernel with a result.
func (s sig) ret() string {
	if s.void() {
		return ""
	}
	return "return "
}

// named is the result list with the result named r, for the generated
// functions that accumulate it.
func (s sig) named() string {
	if s.void() {
		return ""
	}
	return "(r " + s.results + ")"
}

func parse(k kernels.Kernel) sig {
	ft, err := funcType(k.Params, k.Results)
	if err != nil {
		panic(fmt.Sprintf("kernel %s: %v", k.Name, err))
	}
	var names []string
	for _, f := range ft.Params.List {
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	return sig{names: names, args: strings.Join(names, ", "), results: k.Results}
}

func funcType(params, results string) (*ast.FuncType, error) {
	e, err := parser.ParseExpr("func(" + params + ") " + results)
	if err != nil {
		return nil, err
	}
	ft, ok := e.(*ast.FuncType)
	if !ok {
		return nil, errors.New("not a function type")
	}
	return ft, nil
}

// reserved are the names the generated code declares itself.
var reserved = []string{"r", "n", "per", "lo", "hi", "part", "done", "more", "active"}

// check refuses a table the generated code would get wrong.
func check(all []kernels.Kernel) error {
	seen := map[string]bool{}
	for _, k := range all {
		if seen[k.Name] {
			return fmt.Errorf("kernel %s: listed twice", k.Name)
		}
		seen[k.Name] = true
		ft, err := funcType(k.Params, k.Results)
		if err != nil {
			return fmt.Errorf("kernel %s: %v", k.Name, err)
		}
		if ft.Results != nil && (len(ft.Results.List) != 1 || len(ft.Results.List[0].Names) != 0) {
			return fmt.Errorf("kernel %s: one unnamed result at most", k.Name)
		}
		for _, name := range parse(k).names {
			if contains(reserved, name) {
				return fmt.Errorf("kernel %s: parameter %s clashes with the generated code's own names", k.Name, name)
			}
		}
		if err := checkUses(k); err != nil {
			return fmt.Errorf("kernel %s: %v", k.Name, err)
		}
		if err := checkVariants(k, all); err != nil {
			return fmt.Errorf("kernel %s: %v", k.Name, err)
		}
	}
	return nil
}

func checkUses(k kernels.Kernel) error {
	noop := k.Generic == kernels.NoOp
	if k.Generic != kernels.Generic && !noop {
		return fmt.Errorf("the generic use must be Generic or NoOp, not %v", k.Generic)
	}
	for name, u := range k.Impls {
		found := false
		for _, im := range kernels.Impls {
			found = found || im.Name == name
		}
		im, _ := kernels.Named(name)
		switch {
		case !found:
			return fmt.Errorf("no implementation %q", name)
		case u == kernels.Reuse:
			if err := checkReuse(k, im); err != nil {
				return err
			}
		case u == kernels.NoOp:
			noop = true
		case u == kernels.Pair && (k.Pair == nil || len(k.Pair.Advance) == 0):
			return errors.New("a Pair needs its PairDoc and the parameters it advances")
		case u == kernels.Pair && k.Results != "" && k.Results != "float32":
			return errors.New("a Pair's result is a float32 sum")
		}
	}
	if noop && (k.Results != "" || k.Split != nil) {
		return errors.New("a no-op implementation needs a kernel without result or split")
	}
	if sp := k.Split; sp != nil && (sp.Reduce == "") != (k.Results == "") {
		return errors.New("a split kernel with a result needs a Reduce, one without has none")
	}
	return nil
}

// checkReuse checks that im can run the functions of the implementation it
// reuses for k: one of the same architecture, with code of its own for k,
// whose required features im requires too.
func checkReuse(k kernels.Kernel, im kernels.Impl) error {
	r, ok := kernels.Named(im.Reuses)
	if !ok || r.Arch != im.Arch || r.Name == im.Name {
		return fmt.Errorf("%s reuses %q, not another implementation of %s", im.Name, im.Reuses, im.Arch)
	}
	if u := k.Use(r.Name); u != kernels.Asm && u != kernels.Pair && u != kernels.NoOp {
		return fmt.Errorf("%s reuses %s, which has no code of its own (%v)", im.Name, r.Name, u)
	}
	for _, f := range r.Requires {
		if !slices.Contains(im.Requires, f) {
			return fmt.Errorf("%s reuses %s, which requires %s and it does not", im.Name, r.Name, f)
		}
	}
	return nil
}
