//go:build !purego

package attention

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every feature a generated function declares in its "// Requires:" line
// must be one the dispatch checks before enabling that code.
func TestRequiresCoveredByDispatch(t *testing.T) {
	f, err := os.Open("dot_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		rest, ok := strings.CutPrefix(sc.Text(), "// Requires:")
		if !ok {
			continue
		}
		seen++
		for _, feat := range strings.Split(rest, ",") {
			feat = strings.TrimSpace(feat)
			if _, ok := avx2Features[feat]; !ok {
				t.Errorf("dot_amd64.s:%d requires %s, which the avx2 dispatch does not check", line, feat)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no // Requires: lines found in dot_amd64.s")
	}
}

// Avo's register allocator may use X16–X31 and Y16–Y31 when a function runs
// out of the sixteen AVX2 vector registers; the assembler then emits
// AVX-512 (EVEX) encodings, which fault on an AVX2-only CPU, and no
// "// Requires:" line says so. Every generated amd64 file must stay within
// X0–X15/Y0–Y15, with no ZMM or mask registers.
func TestGeneratedAsmUsesOnlyAVX2Registers(t *testing.T) {
	high := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z([0-9]|[12][0-9]|3[01])|K[0-7])\b`)
	for _, name := range []string{"dot_amd64.s", "internal/calib/calib_amd64.s"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if r := high.FindString(code); r != "" {
				t.Errorf("%s:%d uses %s, which only AVX-512 encodes: %s", name, i+1, r, strings.TrimSpace(line))
			}
		}
	}
}
