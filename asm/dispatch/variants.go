package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/glancelab/attention/asm/internal/doc"
	"github.com/glancelab/attention/internal/kernels"
)

// expArches are the architectures whose generator emits the experimental
// functions (asm/amd64 -experimental); check refuses an Experimental tier
// elsewhere.
var expArches = []string{"amd64"}

// rowsCase returns the code of im's case in the front of a kernel with a
// function per row count: a switch on the row count, the last row count
// taking every count without a function of its own, and within a row count
// that has an asking copy, that copy where the Ask slice is not empty.
func rowsCase(k kernels.Kernel, im kernels.Impl) string {
	plain, ask := map[int]kernels.Func{}, map[int]kernels.Func{}
	var rows []int
	for _, f := range k.Funcs(im.Name) {
		if f.Asks {
			ask[f.Rows] = f
			continue
		}
		plain[f.Rows] = f
		rows = append(rows, f.Rows)
	}
	slices.Sort(rows)
	call := func(f kernels.Func) string {
		return fmt.Sprintf("%s%s(%s)\n", f.Stem, im.Suffix, strings.Join(kernels.ParamNames(f.Params), ", "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "switch %s {\n", k.Rows.Param)
	for i, R := range rows {
		if i == len(rows)-1 {
			b.WriteString("default:\n")
		} else {
			fmt.Fprintf(&b, "case %d:\n", R)
		}
		if a, ok := ask[R]; ok {
			fmt.Fprintf(&b, "if len(%s) > 0 {\n%s} else {\n%s}\n", k.Rows.Ask, call(a), call(plain[R]))
		} else {
			b.WriteString(call(plain[R]))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// fallbacks returns the file that, in a build without the experimental
// tag, defines each experimental function of arch as its production
// fallback, so that the fronts call the same names in either build.
func fallbacks(arch string) string {
	var b strings.Builder
	fmt.Fprintf(&b, header, strings.Join(os.Args[1:], " "), "!purego && !"+kernels.ExperimentalTag, pkgName)
	fmt.Fprintf(&b, "\n// Without the %s tag the functions the kernel table makes\n// experimental are not assembled: each of their names runs its\n// production fallback, which the table names.\n", kernels.ExperimentalTag)
	for _, im := range kernels.For(arch) {
		for _, k := range kernels.In(pkg) {
			for _, f := range k.Funcs(im.Name) {
				if f.Tier != kernels.Experimental {
					continue
				}
				name := f.Stem + im.Suffix
				b.WriteString("\n" + doc.Comment(fmt.Sprintf("%s %s Experimental: without the %s tag it runs %s.", name, f.Doc, kernels.ExperimentalTag, strings.TrimPrefix(f.Fallback, "return "))))
				fmt.Fprintf(&b, "func %s(%s) %s {\n%s\n}\n", name, f.Params, f.Results, f.Fallback)
			}
		}
	}
	return b.String()
}

// checkVariants checks a kernel's tiers and its functions per row count
// (all is the table, for the range of row counts of the kernel k's Doc
// says it is a form of).
func checkVariants(k kernels.Kernel, all []kernels.Kernel) error {
	if err := checkWidths(k); err != nil {
		return err
	}
	for name, t := range k.Tiers {
		if err := checkTier(k, name, t); err != nil {
			return fmt.Errorf("tier: %v", err)
		}
	}
	if k.Rows == nil {
		return nil
	}
	r := k.Rows
	switch {
	case kernels.ParamType(k.Params, r.Param) != "int":
		return fmt.Errorf("the row count %q must be a parameter of its own, of type int", r.Param)
	case r.Ask != "" && !strings.HasPrefix(kernels.ParamType(k.Params, r.Ask), "[]"):
		return fmt.Errorf("the ask parameter %q must be a slice parameter of its own", r.Ask)
	case k.Results != "" || k.Split != nil || k.Pair != nil || k.In(kernels.Root):
		return errors.New("a kernel with a function per row count has no result, split or pair, and is internal/kernel's")
	}
	lo, hi, ok := docRange(k, r.Param, all)
	if !ok {
		return fmt.Errorf("the Doc states no range %q of its row count", "lo <= "+r.Param+" <= hi")
	}
	seen := map[string]bool{}
	plain, ask := map[string][]int{}, map[string][]int{}
	for _, v := range r.Variants {
		if v.Rows < lo || v.Rows > hi {
			return fmt.Errorf("variant %s: outside the Doc's %d..%d", v.Suffix(), lo, hi)
		}
		if seen[v.Suffix()] {
			return fmt.Errorf("variant %s listed twice", v.Suffix())
		}
		seen[v.Suffix()] = true
		if v.Asks && r.Ask == "" {
			return fmt.Errorf("variant %s asks, but the kernel names no ask parameter", v.Suffix())
		}
		for name, t := range v.Impls {
			if k.Use(name) != kernels.Asm {
				return fmt.Errorf("variant %s: %s has no code of its own for the kernel (%v)", v.Suffix(), name, k.Use(name))
			}
			if err := checkTier(k, name, t); err != nil {
				return fmt.Errorf("variant %s: %v", v.Suffix(), err)
			}
			if v.Asks {
				ask[name] = append(ask[name], v.Rows)
			} else {
				plain[name] = append(plain[name], v.Rows)
			}
		}
	}
	for name, u := range k.Impls {
		if u != kernels.Asm {
			continue
		}
		p := plain[name]
		slices.Sort(p)
		if len(p) != hi-lo+1 || p[0] != lo || p[len(p)-1] != hi {
			return fmt.Errorf("%s has functions for row counts %v, not for each of the Doc's %d..%d", name, p, lo, hi)
		}
		if a := ask[name]; len(a) > 0 && len(a) != len(p) {
			return fmt.Errorf("%s has asking copies for row counts %v: for each of %d..%d, or none", name, a, lo, hi)
		}
	}
	return nil
}

// docRange returns the range "lo <= param <= hi" k's Doc states, or that
// of the kernel it says k is a form of ("is scoreRowsMultiBF16 with ...").
func docRange(k kernels.Kernel, param string, all []kernels.Kernel) (lo, hi int, ok bool) {
	m := regexp.MustCompile(`(\d+) <= ` + regexp.QuoteMeta(param) + ` <= (\d+)`).FindStringSubmatch(k.Doc)
	if m != nil {
		lo, _ = strconv.Atoi(m[1])
		hi, _ = strconv.Atoi(m[2])
		return lo, hi, true
	}
	if f := strings.Fields(k.Doc); len(f) > 1 && f[0] == "is" {
		for _, o := range all {
			if o.Name == f[1] && o.Name != k.Name {
				return docRange(o, param, all)
			}
		}
	}
	return 0, 0, false
}

var date = regexp.MustCompile(`^\d{4}-\d\d-\d\d$`)

// checkTier checks implementation name's tier t of a variant of k: a
// production one needs its gain, an experimental one a generator that
// emits it.
func checkTier(k kernels.Kernel, name string, t kernels.Tiered) error {
	im, ok := kernels.Named(name)
	switch {
	case !ok:
		return fmt.Errorf("no implementation %q", name)
	case k.Use(name) != kernels.Asm:
		return fmt.Errorf("%s has no code of its own for the kernel (%v) to tier", name, k.Use(name))
	case t.Tier == kernels.Experimental:
		if !slices.Contains(expArches, im.Arch) {
			return fmt.Errorf("%s: the %s generator emits no experimental functions", name, im.Arch)
		}
		return nil
	case t.Tier != kernels.Production:
		return fmt.Errorf("%s: no tier %v", name, t.Tier)
	}
	g := t.Gain
	switch {
	case g == nil:
		return fmt.Errorf("%s: production, without the gain that earns it", name)
	case g.Shape == "" || g.CPU == "" || g.Ratio == "" || g.Source == "":
		return fmt.Errorf("%s: a gain needs its shape, CPU, ratio and source: %+v", name, *g)
	case !date.MatchString(g.Date):
		return fmt.Errorf("%s: a gain's date is yyyy-mm-dd, not %q", name, g.Date)
	case strings.HasPrefix(g.Note, "re-measure:"):
		return fmt.Errorf("%s: a production gain is settled, not %q", name, g.Note)
	}
	if r, ok := firstRatio(g.Ratio); !ok || r > maxRatio {
		return fmt.Errorf("%s: a production gain's ratio (time with the variant over time without) is at most %.2f, not %q", name, maxRatio, g.Ratio)
	}
	return nil
}

// maxRatio is the most a production variant's time may be of the time
// without it: a gain of at least 5% on a production shape.
const maxRatio = 0.95

var ratio = regexp.MustCompile(`\d+\.\d+`)

// firstRatio returns the first decimal figure of a gain's Ratio, the
// median it is judged by.
func firstRatio(s string) (float64, bool) {
	m := ratio.FindString(s)
	if m == "" {
		return 0, false
	}
	r, err := strconv.ParseFloat(m, 64)
	return r, err == nil
}

// checkWidths checks the width sections the table gives k: each for an
// implementation with code of its own, a positive multiple of 16 columns
// once, and earned by a production gain.
func checkWidths(k kernels.Kernel) error {
	for name, ws := range k.Widths {
		seen := map[int]bool{}
		for _, w := range ws {
			if w.Cols <= 0 || w.Cols%16 != 0 || seen[w.Cols] {
				return fmt.Errorf("%s: %s's width %d is not a new positive multiple of 16", k.Name, name, w.Cols)
			}
			seen[w.Cols] = true
			if err := checkTier(k, name, kernels.Tiered{Tier: kernels.Production, Gain: w.Gain}); err != nil {
				return fmt.Errorf("%s width %d: %w", k.Name, w.Cols, err)
			}
		}
	}
	return nil
}
