package kernel

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The generated code's budget (see docs/kernel-variants.md). Each
// implementation's production assembly (what a default build assembles)
// may not grow past its line count of 2026-12-07 after the variants were
// re-measured (avx512 down from 35,518 to 20,714), rounded up a little; a
// variant that adds lines must first earn them (a recorded median gain of
// at least 5% on a production shape, its Gain in the kernel table), and
// the budget is then raised in the same change, with the figure in its
// commit. The experimental functions (built only with the
// attention_experimental tag) have a cap of their own, so that moving a
// variant there does not hide growth. A new cache type's kernels are no
// variant: avx512's one-row int8 score and blend raised it by their 492
// lines (21,138 used before them), its multi-row int8 kernels of two to
// four rows by their 1,923 (each a recorded gain: see their table entry),
// the int8 row quantiser and row rotation by their 281 (an int8 Append of
// one token 21 µs in Go, 1.0 µs with them), and the int8 rows' widening for
// the block path by its 50. avx2's int8 row kernels, quantiser, rotation
// and widening raised its budget by their 977 lines (19,582 used before)
// and its int8 multi-row kernels by their 2,453 (each a recorded gain),
// neon's int8 score and blend rows its budget by their 516 (3,183 before)
// and its row rotation and int8 widening by their 127. avx512's fused
// rotation and quantiser of 128-wide rows raised it by its 359 lines (an
// int8 Append of one token 0.64 of its time without it: see its table
// entry). The rotary-embedding kernels, an operation of their own, raised
// avx512's by their 282 lines and avx2's by their 260 (four rows an
// iteration where the rows are whole vectors: a decode step's interleaved
// rotation 0.82 of its time with two on avx512, 0.65 on avx2), neon's by
// their 130. avx2's fused rotation and quantiser of 128-wide rows raised
// it by its 419 lines (an int8 Append of one token 0.63 of its time
// without it, 16 tokens 0.45: 2.5 and 4.3 times a bf16 Append before, 1.6
// and 1.9 after; see its table entry).
var (
	productionBudget   = map[string]int{"AVX512": 24550, "AVX2": 23700, "NEON": 3960}
	experimentalBudget = map[string]int{"AVX512": 13000, "AVX2": 0, "NEON": 0}
)

// No generated function may pass maxFuncLines.
const maxFuncLines = 2000

// rootBudget bounds the root package's generated files: the exported
// family only (Dot, Axpy, Exp, Softmax and what they run).
const rootBudget = 4500

// textFuncs returns the lines of each TEXT symbol of an assembly file,
// from its TEXT line to the next one.
func textFuncs(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]int{}
	for _, f := range strings.Split(string(data), "\nTEXT ")[1:] {
		name := strings.TrimPrefix(f[:strings.Index(f, "(")], "·")
		funcs[name] = strings.Count(f, "\n")
	}
	return funcs
}

// isaOf returns the implementation suffix a generated function's name
// ends in.
func isaOf(name string) string {
	for _, isa := range []string{"AVX512", "AVX2", "NEON"} {
		if strings.HasSuffix(name, isa) {
			return isa
		}
	}
	return ""
}

func TestGeneratedBudget(t *testing.T) {
	for _, tier := range []struct {
		name   string
		files  []string
		budget map[string]int
	}{
		{"production", []string{"zkernel_amd64.s", "zkernel_arm64.s"}, productionBudget},
		{"experimental", []string{"zkernel_exp_amd64.s"}, experimentalBudget},
	} {
		perISA := map[string]int{}
		largest, largestName := 0, ""
		for _, file := range tier.files {
			funcs := textFuncs(t, file)
			names := make([]string, 0, len(funcs))
			for name := range funcs {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				n := funcs[name]
				isa := isaOf(name)
				if _, ok := tier.budget[isa]; !ok {
					t.Errorf("%s: %s is of no implementation the budget knows", file, name)
				}
				perISA[isa] += n
				if n > maxFuncLines {
					t.Errorf("%s: %d generated lines, more than %d", name, n, maxFuncLines)
				}
				if n > largest {
					largest, largestName = n, name
				}
			}
		}
		if largestName != "" {
			t.Logf("%s: largest function %s, %d lines", tier.name, largestName, largest)
		}
		for _, isa := range []string{"AVX512", "AVX2", "NEON"} {
			budget := tier.budget[isa]
			t.Logf("%s %s: %d generated lines of %d", tier.name, isa, perISA[isa], budget)
			if perISA[isa] > budget {
				t.Errorf("%s %s: %d generated lines, more than its budget of %d", tier.name, isa, perISA[isa], budget)
			}
		}
	}
	root := 0
	for _, pattern := range []string{"../../*.s", "../../*.go"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data[:min(len(data), 200)]), "Code generated by command") {
				root += strings.Count(string(data), "\n")
			}
		}
	}
	t.Logf("root package: %d generated lines of %d", root, rootBudget)
	if root > rootBudget {
		t.Errorf("the root package holds %d generated lines, more than %d: only the exported family belongs there", root, rootBudget)
	}
}
