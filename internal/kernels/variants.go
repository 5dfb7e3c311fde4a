package kernels

import (
	"fmt"
	"strconv"
	"strings"
)

// A variant is code that computes what another kernel or code path does,
// kept because it was measured faster: a function per row count of a
// multi-row kernel, a copy that asks for the next call's lines, a kernel of
// two blocks or of five to eight rows, a kernel over rows in pair order.
// Each generated variant function has a tier in each implementation (see
// docs/kernel-variants.md).

// Tier says in which builds a generated function's assembly is built.
type Tier uint8

const (
	// Production: built by default. It needs the Gain that earned it its
	// lines.
	Production Tier = iota
	// Experimental: built only with the attention_experimental build tag.
	// Without it the function of the same name and signature runs its
	// Fallback, in Go, so the fronts call the same names in either build.
	Experimental
)

func (t Tier) String() string {
	switch t {
	case Production:
		return "production"
	case Experimental:
		return "experimental"
	}
	return "Tier(?)"
}

// ExperimentalTag is the build tag that builds the experimental functions.
const ExperimentalTag = "attention_experimental"

// Gain is the recorded measurement that earns a production variant its
// place: where its figure comes from and what it is, quoted from the
// record.
type Gain struct {
	Shape  string // what was timed
	CPU    string // where, as the record names it
	Date   string // of the record, yyyy-mm-dd
	Ratio  string // the median time with the variant over the time without it
	Source string // the commit, and the doc, that record the figure
	// Note says what the figure leaves open, if anything; a production
	// gain may not be one still to be measured again ("re-measure:").
	Note string
}

func (g *Gain) String() string {
	s := fmt.Sprintf("%s; %s; %s; %s (%s)", g.Shape, g.CPU, g.Date, g.Ratio, g.Source)
	if g.Note != "" {
		s = g.Note + " " + s
	}
	return s
}

// Tiered is a variant's tier in one implementation, with the gain that
// earns a production one its place.
type Tiered struct {
	Tier Tier
	Gain *Gain
}

// ByRows describes a kernel with a function per row count: its front
// switches on the int parameter Param and calls the function of that row
// count, which does not take it; with Ask, a slice parameter, not empty,
// the row count's asking copy where the implementation has one.
type ByRows struct {
	Param, Ask string
	Variants   []Variant
}

// Variant is one generated function of a kernel with a function per row
// count (see ByRows).
type Variant struct {
	// Rows is the row count the function computes; the front sends the
	// kernel's last row count every count that has no function of its own.
	Rows int
	// Asks marks the copy for a non-empty ByRows.Ask, which asks for its
	// lines as it goes; the copy without takes no such parameter.
	Asks bool
	// Impls gives, by implementation, its tier there; an implementation
	// it does not name has no such function.
	Impls map[string]Tiered
}

// Width is a section of a kernel's functions for rows of Cols columns
// (Cols/16 full vectors, and any tail of fewer than 16): code that runs
// in place of the general loop for that width, kept because it was
// measured faster. A section lives inside its function, so it has no
// experimental tier: a width that does not earn its lines is deleted.
type Width struct {
	Cols int
	Gain *Gain
}

// WidthsOf returns the widths, in columns, that implementation im's
// functions of kernel name have sections for, in the table's order; it
// panics on a kernel the table lacks, so a generator cannot ask for a
// misspelt one.
func WidthsOf(name, im string) []int {
	for _, k := range All {
		if k.Name == name {
			var c []int
			for _, w := range k.Widths[im] {
				c = append(c, w.Cols)
			}
			return c
		}
	}
	panic("kernels: no kernel " + name)
}

// Suffix is what the variant adds to its kernel's stem: "R3", "R3Ask".
func (v Variant) Suffix() string {
	s := "R" + strconv.Itoa(v.Rows)
	if v.Asks {
		s += "Ask"
	}
	return s
}

// Func is one generated assembly function of a kernel, before the
// implementation's suffix is added to its Stem.
type Func struct {
	Stem, Params, Results, Doc string
	// Rows and Asks are the variant's, for a kernel with a function per
	// row count (Rows 0 otherwise).
	Rows int
	Asks bool
	// Tier and Gain are the function's in its implementation: the
	// kernel's Tiers and the variant's, Experimental if either is.
	Tier Tier
	Gain *Gain
	// Fallback is the Go statement a build without ExperimentalTag runs in
	// place of an Experimental function, with its parameters: for an
	// asking copy the plain copy of its row count, for a row count or a
	// whole kernel the generic twin (which calls the fronts of the
	// kernels it is made of).
	Fallback string
}

// Sig returns the function's signature as avo and the stubs spell it.
func (f Func) Sig() string {
	s := "func(" + f.Params + ")"
	if f.Results != "" {
		s += " " + f.Results
	}
	return s
}

// Funcs returns the assembly functions implementation im provides for k:
// none where it runs the generic twin (or another implementation's
// functions), one per variant it has for a kernel with Rows, the two
// halves of a Pair, or else one.
func (k Kernel) Funcs(im string) []Func {
	u := k.Use(im)
	switch u {
	case Asm:
		if k.Rows == nil {
			t := k.Tiers[im]
			return []Func{{Stem: k.Stem(), Params: k.Params, Results: k.Results, Doc: k.Doc,
				Tier: t.Tier, Gain: t.Gain, Fallback: k.genericCall(nil)}}
		}
		return k.variantFuncs(im)
	case Pair:
		res := "int"
		if k.Results != "" {
			res = "(sum " + k.Results + ", done int)"
		}
		return []Func{
			{Stem: k.Stem() + "Fast", Params: k.Params, Results: res, Doc: k.Pair.Fast},
			{Stem: k.Stem() + "Special", Params: k.Params, Results: res, Doc: k.Pair.Special},
		}
	}
	return nil
}

// variantFuncs returns the functions of k's variants that im has.
func (k Kernel) variantFuncs(im string) []Func {
	var suffix string
	if i, ok := Named(im); ok {
		suffix = i.Suffix
	}
	rp, ap := k.Rows.Param, k.Rows.Ask
	last := 0
	for _, v := range k.Rows.Variants {
		last = max(last, v.Rows)
	}
	kt := k.Tiers[im]
	var fs []Func
	for _, v := range k.Rows.Variants {
		vt, ok := v.Impls[im]
		if !ok {
			continue
		}
		drop := []string{rp}
		if !v.Asks {
			drop = append(drop, ap)
		}
		f := Func{
			Stem: k.Stem() + v.Suffix(), Params: DropParams(k.Params, drop...), Results: k.Results,
			Rows: v.Rows, Asks: v.Asks, Tier: max(kt.Tier, vt.Tier), Gain: vt.Gain,
		}
		rows := fmt.Sprintf("%s with %s = %d", k.Name, rp, v.Rows)
		if v.Rows == last {
			rows += " (the front's default)"
		}
		switch {
		case v.Asks:
			f.Doc = fmt.Sprintf("is %s and %s not empty: it asks for the lines of %s as it goes.", rows, ap, ap)
			plain := Variant{Rows: v.Rows}
			f.Fallback = fmt.Sprintf("%s%s%s(%s)", k.Stem(), plain.Suffix(), suffix,
				strings.Join(ParamNames(DropParams(k.Params, rp, ap)), ", "))
		case ap != "":
			f.Doc = fmt.Sprintf("is %s and %s empty.", rows, ap)
			f.Fallback = k.genericCall(map[string]string{rp: strconv.Itoa(v.Rows), ap: "nil"})
		default:
			f.Doc = fmt.Sprintf("is %s.", rows)
			f.Fallback = k.genericCall(map[string]string{rp: strconv.Itoa(v.Rows)})
		}
		fs = append(fs, f)
	}
	return fs
}

// genericCall is a call of k's generic twin with k's parameters, those
// that with are given replaced by their values there.
func (k Kernel) genericCall(with map[string]string) string {
	args := ParamNames(k.Params)
	for i, a := range args {
		if v, ok := with[a]; ok {
			args[i] = v
		}
	}
	ret := ""
	if k.Results != "" {
		ret = "return "
	}
	return fmt.Sprintf("%s%sGeneric(%s)", ret, k.Stem(), strings.Join(args, ", "))
}

// params splits a Go parameter list into its items: "name" or "name type".
func params(list string) []string {
	var items []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			items = append(items, p)
		}
	}
	return items
}

// ParamNames returns the names of a Go parameter list of simple types (no
// commas within a type), in order.
func ParamNames(list string) []string {
	var names []string
	for _, p := range params(list) {
		names = append(names, strings.Fields(p)[0])
	}
	return names
}

// DropParams returns the parameter list without the parameters named
// drop (empty names are ignored). Each must be written with its own type
// ("rows int", not "stride, rows int"), which the generators' check
// requires of ByRows.Param and Ask.
func DropParams(list string, drop ...string) string {
	var keep []string
	for _, p := range params(list) {
		name := strings.Fields(p)[0]
		dropped := false
		for _, d := range drop {
			dropped = dropped || d != "" && d == name
		}
		if !dropped {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ", ")
}

// ParamType returns the type of parameter name in list if it is written
// with a type of its own: empty if it shares its type with others ("a,
// name int", "name, b int") or there is no such parameter.
func ParamType(list, name string) string {
	shared := false // the previous item has no type: it shares this one's
	for _, p := range params(list) {
		f := strings.Fields(p)
		if f[0] == name && !shared {
			return strings.TrimSpace(strings.TrimPrefix(p, name))
		}
		shared = len(f) == 1
	}
	return ""
}
