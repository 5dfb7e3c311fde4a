package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// generate runs this program into a temporary directory and returns the
// assembly and the stubs.
func generate(t *testing.T) (asm, stubs []byte) {
	t.Helper()
	dir := t.TempDir()
	s, g := filepath.Join(dir, "dot_amd64.s"), filepath.Join(dir, "dot_amd64.go")
	cmd := exec.Command("go", "run", ".", "-out", s, "-stubs", g, "-pkg", "attention")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generator failed: %v\n%s", err, out)
	}
	asm, err := os.ReadFile(s)
	if err != nil {
		t.Fatal(err)
	}
	stubs, err = os.ReadFile(g)
	if err != nil {
		t.Fatal(err)
	}
	return asm, stubs
}

func TestGeneratedCode(t *testing.T) {
	asm, stubs := generate(t)
	text := string(asm)

	for _, f := range [][]byte{asm, stubs} {
		if !bytes.HasPrefix(f, []byte("// Code generated")) || !bytes.Contains(f, []byte("DO NOT EDIT.")) {
			t.Error("generated file lacks the Code generated … DO NOT EDIT. header")
		}
		if !bytes.Contains(f, []byte("//go:build !purego")) {
			t.Error("generated file lacks //go:build !purego")
		}
	}

	// Only the 16 registers AVX2 can encode: X16–X31/Y16–Y31 would need
	// AVX-512 (EVEX) and fault on the CPUs this path targets.
	if m := regexp.MustCompile(`\b[XYZ](1[6-9]|2[0-9]|3[01])\b|\bZ[0-9]+\b|\bK[0-7]\b`).FindString(text); m != "" {
		t.Errorf("generated code uses %s, which needs AVX-512", m)
	}

	funcs := strings.Split(text, "\nTEXT ")[1:]
	if len(funcs) < 8 {
		t.Fatalf("found %d functions, want the 8 kernels", len(funcs))
	}
	frame := regexp.MustCompile(`^·\w+\(SB\), NOSPLIT, \$0-\d+\n`)
	for _, f := range funcs {
		name := f[:strings.Index(f, "(")]
		if !frame.MatchString(f) {
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

// The committed files are what the generator produces now.
func TestCommittedFilesAreCurrent(t *testing.T) {
	asm, stubs := generate(t)
	for name, want := range map[string][]byte{"../../dot_amd64.s": asm, "../../dot_amd64.go": stubs} {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// The header names the output paths, which differ; the rest must not.
		if !bytes.Equal(afterHeader(got), afterHeader(want)) {
			t.Errorf("%s differs from the generator's output: run go generate in the root package", name)
		}
	}
}

func afterHeader(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[i:]
	}
	return b
}
