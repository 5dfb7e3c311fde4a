package main

import (
	"fmt"
	"log"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/glancelab/attention/internal/kernels"
)

// addTraits appends to internal/kernel's files each implementation's
// traits (kernels.Traits) as data, and activeTraits, which returns the
// ones in use; internal/kernel/traits.go defines the type (the table's,
// its names starting lower case) and the predicates that read it. A
// value indexed by active keeps each predicate a load or two, and plain
// data makes no kernel reachable.
func addTraits(files map[string]string, prefix string) {
	if pkg != kernels.Engine {
		return
	}
	if err := checkTraits(kernels.Impls, kernels.All); err != nil {
		log.Fatal(err)
	}
	files[prefix+"other.go"] += "\n// implTraits holds the generic code's traits, all zero.\nvar implTraits [1]traits\n\n" +
		"// activeTraits returns the traits of the implementation in use.\nfunc activeTraits() *traits { return &implTraits[0] }\n"
	for _, arch := range kernels.Arches() {
		var b strings.Builder
		fmt.Fprintf(&b, "\n// implTraits holds the traits of each implementation on %s, by its Impl\n// constant (internal/kernels.Impls says why each is so); the generic\n// code's, at 0, are all zero.\nvar implTraits = [...]traits{\n", arch)
		for _, im := range kernels.For(arch) {
			fmt.Fprintf(&b, "%s: {", id(im))
			fs := fields(reflect.ValueOf(im.Traits))
			for _, f := range fs {
				fmt.Fprintf(&b, "\n%s,", f)
			}
			if len(fs) > 0 {
				b.WriteString("\n")
			}
			b.WriteString("},\n")
		}
		b.WriteString("}\n\n// activeTraits returns the traits of the implementation in use.\nfunc activeTraits() *traits { return &implTraits[active] }\n")
		files[prefix+arch+".go"] += b.String()
	}
}

// literal returns v as a Go literal of internal/kernel's mirror of its
// type: the table's type and field names with their first letter lower
// case, zero fields left out; typed writes a struct's type, which a
// slice's elements leave out.
func literal(v reflect.Value, typed bool) string {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Slice:
		var elems []string
		for i := range v.Len() {
			elems = append(elems, literal(v.Index(i), false))
		}
		return mirror(v.Type()) + "{" + strings.Join(elems, ", ") + "}"
	case reflect.Struct:
		s := "{" + strings.Join(fields(v), ", ") + "}"
		if typed {
			s = mirror(v.Type()) + s
		}
		return s
	}
	log.Fatalf("dispatch: traits: no literal for a %s", v.Type())
	return ""
}

// fields returns the struct v's fields that are not zero, as "name:
// literal".
func fields(v reflect.Value) []string {
	var r []string
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			r = append(r, lowerFirst(v.Type().Field(i).Name)+": "+literal(v.Field(i), true))
		}
	}
	return r
}

// mirror names internal/kernel's mirror of a type of the table.
func mirror(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "[]" + mirror(t.Elem())
	case reflect.Struct:
		return lowerFirst(t.Name())
	}
	return t.String()
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// traitKernels names, by trait, the kernels an implementation claiming it
// must have code of its own for (Asm or Pair, its own or reused): a trait
// says how that code reads memory, and the generic twin reads it as the
// generic code does, whose traits are all zero.
var traitKernels = map[string][]string{
	"WholeTileBlend":     {"blockBlend"},
	"Blend16Cols":        {"blendRowsF16", "blendRowsBF16"},
	"MultiScoreStreams":  {"scoreRowsMulti"},
	"MultiBlendStreams":  {"blendRowsMultiF16", "blendRowsMultiBF16"},
	"MultiAsksAhead":     {"blendRowsMulti", "blendRowsMultiF16", "blendRowsMultiBF16"},
	"MultiWide":          {"scoreRowsMulti8", "blendRowsMulti8", "scoreRowsMulti8F16", "blendRowsMulti8F16", "scoreRowsMulti8BF16", "blendRowsMulti8BF16"},
	"PairedBF16":         {"scoreRowsMultiPairedBF16"},
	"MultiBlendSplits":   {"blendRowsMulti"},
	"MultiScoreRowMajor": {"scoreRowsMulti"},
	"PairedBlocks":       {"blockScores2", "blockBlend2"},
}

// multiRows is the most rows the four-row kernels (scoreRowsMulti,
// blendRowsMulti) take.
const multiRows = 4

// checkTraits refuses traits the engine would act on wrongly: one whose
// kernels the implementation runs the generic twin of, or groups of rows
// the multi-row kernels do not take.
func checkTraits(impls []kernels.Impl, all []kernels.Kernel) error {
	byName := map[string]kernels.Kernel{}
	for _, k := range all {
		byName[k.Name] = k
	}
	ft := reflect.TypeFor[kernels.Traits]()
	for i := range ft.NumField() {
		if _, ok := traitKernels[ft.Field(i).Name]; !ok {
			return fmt.Errorf("dispatch: trait %s names no kernels in traitKernels", ft.Field(i).Name)
		}
	}
	for _, im := range impls {
		t := reflect.ValueOf(im.Traits)
		for i := range ft.NumField() {
			if t.Field(i).IsZero() {
				continue
			}
			name := ft.Field(i).Name
			for _, kn := range traitKernels[name] {
				k, ok := byName[kn]
				if !ok {
					return fmt.Errorf("dispatch: %s's trait %s needs kernel %s, which the table lacks", im.Name, name, kn)
				}
				if _, u := k.Runs(im); u != kernels.Asm && u != kernels.Pair {
					return fmt.Errorf("dispatch: %s's trait %s needs code of its own for %s, which it runs as %s", im.Name, name, kn, k.Use(im.Name))
				}
			}
		}
		tr := im.Traits
		if tr.Blend16Cols < 0 {
			return fmt.Errorf("dispatch: %s's Blend16Cols is negative", im.Name)
		}
		if s := tr.MultiBlendSplits; !reflect.ValueOf(s).IsZero() {
			if s.MinRows < 1 || s.MinRows > s.MaxRows || s.MaxRows > multiRows || len(s.Widths) == 0 {
				return fmt.Errorf("dispatch: %s's MultiBlendSplits takes rows %d to %d of %d widths: want 1 <= MinRows <= MaxRows <= %d and a width", im.Name, s.MinRows, s.MaxRows, len(s.Widths), multiRows)
			}
			if err := distinctWidths(im.Name, "MultiBlendSplits", s.Widths); err != nil {
				return err
			}
			if err := sectionsFor(im.Name, "MultiBlendSplits", byName["blendRowsMulti"], s.Widths); err != nil {
				return err
			}
		}
		var cols []int
		for _, g := range tr.MultiScoreRowMajor {
			if g.MaxRows < 1 || g.MaxRows > multiRows {
				return fmt.Errorf("dispatch: %s's MultiScoreRowMajor takes up to %d rows of %d: want 1 to %d", im.Name, g.MaxRows, g.Cols, multiRows)
			}
			cols = append(cols, g.Cols)
		}
		if err := distinctWidths(im.Name, "MultiScoreRowMajor", cols); err != nil {
			return err
		}
		if err := sectionsFor(im.Name, "MultiScoreRowMajor", byName["scoreRowsMulti"], cols); err != nil {
			return err
		}
	}
	return nil
}

// sectionsFor refuses a trait that tells the engine k has a section for a
// width the table gives implementation impl none for (kernels.Width).
func sectionsFor(impl, trait string, k kernels.Kernel, widths []int) error {
	for _, w := range widths {
		if !slices.Contains(kernels.WidthsOf(k.Name, impl), w) {
			return fmt.Errorf("dispatch: %s's %s plans by a width-%d section of %s, which the table's Widths do not give it", impl, trait, w, k.Name)
		}
	}
	return nil
}

func distinctWidths(impl, trait string, widths []int) error {
	seen := map[int]bool{}
	for _, w := range widths {
		if w < 1 || seen[w] {
			return fmt.Errorf("dispatch: %s's %s lists width %d twice or not positive", impl, trait, w)
		}
		seen[w] = true
	}
	return nil
}
