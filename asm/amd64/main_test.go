package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glancelab/attention/asm/internal/gentest"
)

func TestGeneratedCode(t *testing.T) {
	asm, stubs := gentest.Generate(t, "zkernel_amd64.s", "zkernel_amd64.go")
	text := string(asm)

	for _, f := range [][]byte{asm, stubs} {
		gentest.CheckHeader(t, f)
	}

	funcs := strings.Split(text, "\nTEXT ")[1:]
	if len(funcs) < 8 {
		t.Fatalf("found %d functions, want the 8 kernels", len(funcs))
	}
	evex := regexp.MustCompile(`\b[XYZ](1[6-9]|2[0-9]|3[01])\b|\bZ[0-9]+\b|\bK[0-7]\b`)
	frame := regexp.MustCompile(`^·\w+\(SB\), NOSPLIT, \$(\d+)-\d+\n`)
	// Frames of at most 512 bytes where a kernel keeps values in memory
	// of its own: the avx2 int8 multi-row blends' chunk of scaled weights
	// (see blendMultiI8Y).
	framed := regexp.MustCompile(`^blendRowsMultiI8R[1-4]AVX2$`)
	for _, f := range funcs {
		name := f[:strings.Index(f, "(")]
		// Only the 16 registers AVX2 can encode: X16–X31/Y16–Y31 would
		// need AVX-512 (EVEX) and fault on the CPUs the AVX2 functions
		// target. The avx512 implementation's functions may use them.
		if !strings.HasSuffix(name, "AVX512") {
			if m := evex.FindString(f); m != "" {
				t.Errorf("%s uses %s, which needs AVX-512", name, m)
			}
		}
		m := frame.FindStringSubmatch(f)
		switch {
		case m == nil:
			t.Errorf("%s: not a NOSPLIT function: %q", name, f[:strings.Index(f, "\n")])
		case framed.MatchString(strings.TrimPrefix(name, "·")):
			if n, _ := strconv.Atoi(m[1]); n > 512 {
				t.Errorf("%s: a frame of %d bytes, more than 512", name, n)
			}
		case m[1] != "0":
			t.Errorf("%s: not a NOSPLIT leaf with a $0 frame: %q", name, f[:strings.Index(f, "\n")])
		}
		// Every return leaves the upper YMM halves clean, so SSE code in
		// the caller pays no transition penalty.
		lines := strings.Split(f, "\n")
		for i, l := range lines {
			if strings.TrimSpace(l) == "RET" && (i == 0 || strings.TrimSpace(lines[i-1]) != "VZEROUPPER") {
				t.Errorf("%s: RET without VZEROUPPER before it", name)
			}
		}
		if !strings.Contains(f, "// Requires:") && !strings.Contains(text, "// Requires:") {
			t.Errorf("%s: no Requires line", name)
		}
	}
}

// The committed files, internal/kernel's and the root's, are what the
// generator produces now; so are internal/kernel's experimental ones
// (empty while every variant is in production).
func TestCommittedFilesAreCurrent(t *testing.T) {
	gentest.CheckCommittedKernels(t, "amd64")
	asm, stubs := gentest.GenerateArgs(t, "e.s", "e.go", "-experimental", "-pkg", "kernel")
	for _, f := range [][]byte{asm, stubs} {
		if !strings.Contains(string(f), "//go:build !purego && attention_experimental") {
			t.Error("an experimental file lacks //go:build !purego && attention_experimental")
		}
	}
	gentest.CheckCommitted(t, map[string][]byte{
		"../../internal/kernel/zkernel_exp_amd64.s":  asm,
		"../../internal/kernel/zkernel_exp_amd64.go": stubs,
	})
}
