package kernel

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/kernels"
)

// asmFunc is one function of a generated amd64 file: its name, the
// features of its "// Requires:" line and its lines of code.
type asmFunc struct {
	name     string
	line     int
	requires []string
	code     []string
}

// expFile holds the functions the kernel table makes experimental: none,
// and then the file is empty, while every variant is in production.
const expFile = "zkernel_exp_amd64.s"

// readAsm splits a generated file into its functions; avo writes each
// one's "// Requires:" line just above its TEXT line.
func readAsm(t *testing.T, name string) []asmFunc {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var funcs []asmFunc
	var requires []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if rest, ok := strings.CutPrefix(text, "// Requires:"); ok {
			for _, feat := range strings.Split(rest, ",") {
				requires = append(requires, strings.TrimSpace(feat))
			}
			continue
		}
		if rest, ok := strings.CutPrefix(text, "TEXT ·"); ok {
			funcs = append(funcs, asmFunc{name: rest[:strings.Index(rest, "(")], line: line, requires: requires})
			requires = nil
			continue
		}
		if code, _, _ := strings.Cut(text, "//"); len(funcs) > 0 && strings.TrimSpace(code) != "" {
			last := &funcs[len(funcs)-1]
			last.code = append(last.code, code)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(funcs) == 0 && name != expFile {
		t.Fatalf("no functions found in %s", name)
	}
	return funcs
}

// implOf returns the implementation of arch whose function, per the
// kernel table, name is.
func implOf(arch, name string) (kernels.Impl, bool) {
	for _, im := range kernels.For(arch) {
		for _, k := range kernels.All {
			for _, f := range k.Funcs(im.Name) {
				if f.Stem+im.Suffix == name {
					return im, true
				}
			}
		}
	}
	return kernels.Impl{}, false
}

// Every feature a generated function declares in its "// Requires:" line
// must be one its implementation's dispatch condition checks (or part of
// the amd64 baseline), and every feature a condition names must be one
// x/sys/cpu can check: else code could run on a CPU without the
// instructions it uses.
func TestRequiresCoveredByDispatch(t *testing.T) {
	for _, file := range []string{"zkernel_amd64.s", expFile, "../../dot_amd64.s"} {
		seen := 0
		for _, f := range readAsm(t, file) {
			im, ok := implOf("amd64", f.name)
			if !ok {
				t.Errorf("%s:%d: %s is no function of the kernel table", file, f.line, f.name)
				continue
			}
			for _, feat := range f.requires {
				seen++
				_, known := impl.Features[feat]
				switch {
				case !known:
					t.Errorf("%s:%d: %s requires %s, a feature internal/impl does not know", file, f.line, f.name, feat)
				case impl.Baseline(feat):
				case !slices.Contains(im.Requires, feat):
					t.Errorf("%s:%d: %s requires %s, which the %s dispatch condition %v does not check", file, f.line, f.name, feat, im.Name, im.Requires)
				}
			}
		}
		if seen == 0 && file != expFile {
			t.Fatalf("no // Requires: lines found in %s", file)
		}
	}
	for _, im := range kernels.Impls {
		for _, feat := range im.Requires {
			if _, checkable := impl.Has(feat); !checkable {
				t.Errorf("implementation %s requires %s, which dispatch cannot check", im.Name, feat)
			}
		}
	}
}

// The registry holds each implementation of the table for this
// architecture, available exactly when the CPU has what the table says it
// requires.
func TestRegistryMatchesTable(t *testing.T) {
	all := impl.All()
	for _, im := range kernels.Impls {
		i := slices.IndexFunc(all, func(in impl.Info) bool { return in.Name == im.Name })
		if i < 0 {
			continue // another architecture's, or a purego build
		}
		if want := impl.Missing(im.Requires); !slices.Equal(all[i].Missing, want) {
			t.Errorf("%s: the registry says it misses %v, the table's requirements %v give %v", im.Name, all[i].Missing, im.Requires, want)
		}
	}
}

// Every function the table gives an amd64 implementation is in the
// generated file of its package and tier (this one's, its experimental
// one's, and the root's for the exported family), and nothing else is.
func TestGeneratedFunctionsMatchTable(t *testing.T) {
	for _, c := range []struct {
		file string
		pkg  kernels.Pkg
		tier kernels.Tier
	}{
		{"zkernel_amd64.s", kernels.Engine, kernels.Production},
		{expFile, kernels.Engine, kernels.Experimental},
		{"../../dot_amd64.s", kernels.Root, kernels.Production},
	} {
		file := c.file
		var want, got []string
		for _, im := range kernels.For("amd64") {
			for _, k := range kernels.In(c.pkg) {
				for _, f := range k.Funcs(im.Name) {
					if f.Tier == c.tier {
						want = append(want, f.Stem+im.Suffix)
					}
				}
			}
		}
		for _, f := range readAsm(t, file) {
			got = append(got, f.name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has %v, the table %v", file, got, want)
		}
	}
}

// Avo's register allocator may use X16–X31 and Y16–Y31 when a function runs
// out of the sixteen AVX2 vector registers; the assembler then emits
// AVX-512 (EVEX) encodings, which fault on an AVX2-only CPU, and no
// "// Requires:" line says so. Every generated function of an
// implementation that does not require AVX512F must stay within
// X0–X15/Y0–Y15, with no ZMM or mask registers; so must the calibration
// kernels.
func TestGeneratedAsmUsesOnlyAVX2Registers(t *testing.T) {
	high := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z([0-9]|[12][0-9]|3[01])|K[0-7])\b`)
	checked := 0
	for _, name := range []string{"zkernel_amd64.s", expFile, "../../dot_amd64.s", "../calib/calib_amd64.s"} {
		for _, f := range readAsm(t, name) {
			if im, ok := implOf("amd64", f.name); ok && slices.Contains(im.Requires, "AVX512F") {
				continue
			}
			checked++
			for _, code := range f.code {
				if r := high.FindString(code); r != "" {
					t.Errorf("%s: %s uses %s, which only AVX-512 encodes: %s", name, f.name, r, strings.TrimSpace(code))
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no AVX2 function checked")
	}
}
