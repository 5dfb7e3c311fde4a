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

func generateFiles(t *testing.T) (asm, stubs []byte) {
	t.Helper()
	dir := t.TempDir()
	s, g := filepath.Join(dir, "dot_arm64.s"), filepath.Join(dir, "dot_arm64.go")
	if out, err := exec.Command("go", "run", ".", "-out", s, "-stubs", g, "-pkg", "attention").CombinedOutput(); err != nil {
		t.Fatalf("generator failed: %v\n%s", err, out)
	}
	asm, err := os.ReadFile(s)
	if err != nil {
		t.Fatal(err)
	}
	if stubs, err = os.ReadFile(g); err != nil {
		t.Fatal(err)
	}
	return asm, stubs
}

func TestGeneratedCode(t *testing.T) {
	asm, stubs := generateFiles(t)
	for _, f := range [][]byte{asm, stubs} {
		if !bytes.HasPrefix(f, []byte("// Code generated")) || !bytes.Contains(f, []byte("DO NOT EDIT.")) {
			t.Error("generated file lacks the Code generated … DO NOT EDIT. header")
		}
		if !bytes.Contains(f, []byte("//go:build !purego")) {
			t.Error("generated file lacks //go:build !purego")
		}
	}
	text := string(asm)
	// Registers Go's arm64 ABI reserves: platform, closure context,
	// assembler temporary, g, frame pointer, link register.
	if m := regexp.MustCompile(`\bR(18|26|27|28|29|30)\b|\bg\b`).FindString(text); m != "" {
		t.Errorf("generated code touches reserved register %s", m)
	}
	funcs := strings.Split(text, "\nTEXT ")[1:]
	if len(funcs) != len(kernels) {
		t.Fatalf("found %d functions, want %d", len(funcs), len(kernels))
	}
	frame := regexp.MustCompile(`^·\w+\(SB\), NOSPLIT, \$0-\d+\n`)
	for _, f := range funcs {
		name := f[:strings.Index(f, "(")]
		if !frame.MatchString(f) {
			t.Errorf("%s: not a NOSPLIT leaf with a $0 frame", name)
		}
		if !strings.Contains(f, "\tRET\n") {
			t.Errorf("%s: no RET", name)
		}
	}
	// Every WORD carries its instruction as a comment.
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "WORD $") && !regexp.MustCompile(`WORD \$0x[0-9a-f]{8} // [a-z]+ `).MatchString(l) {
			t.Errorf("WORD without its mnemonic: %q", l)
		}
	}
}

// Every WORD in the generated file is one the encoding tests cover: its
// mnemonic is produced by an entry of wordOps.
func TestGeneratedWordsAreTested(t *testing.T) {
	asm, _ := generateFiles(t)
	known := map[string]bool{}
	for _, w := range allWords() {
		known[strings.Fields(w.GNU)[0]] = true
	}
	for _, m := range regexp.MustCompile(`WORD \$0x[0-9a-f]{8} // ([a-z]+)`).FindAllStringSubmatch(string(asm), -1) {
		if !known[m[1]] {
			t.Errorf("generated WORD %s is not in the encoding tests", m[1])
		}
	}
}

// The committed files are what the generator produces now.
func TestCommittedFilesAreCurrent(t *testing.T) {
	asm, stubs := generateFiles(t)
	for name, want := range map[string][]byte{"../../dot_arm64.s": asm, "../../dot_arm64.go": stubs} {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
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
