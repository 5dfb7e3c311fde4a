package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/glancelab/attention/asm/internal/gentest"
)

func TestGeneratedCode(t *testing.T) {
	asm, stubs := gentest.Generate(t, "zkernel_arm64.s", "zkernel_arm64.go")
	for _, f := range [][]byte{asm, stubs} {
		gentest.CheckHeader(t, f)
	}
	text := string(asm)
	// Registers Go's arm64 ABI reserves: platform, closure context,
	// assembler temporary, g, frame pointer, link register.
	if m := regexp.MustCompile(`\bR(18|26|27|28|29|30)\b|\bg\b`).FindString(text); m != "" {
		t.Errorf("generated code touches reserved register %s", m)
	}
	funcs := strings.Split(text, "\nTEXT ")[1:]
	if len(funcs) != len(neon) {
		t.Fatalf("found %d functions, want %d", len(funcs), len(neon))
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
		if strings.Contains(l, "WORD $") && !regexp.MustCompile(`WORD \$0x[0-9a-f]{8} // [a-z][a-z0-9]* `).MatchString(l) {
			t.Errorf("WORD without its mnemonic: %q", l)
		}
	}
}

// Every WORD in the generated file is one the encoding tests cover: its
// mnemonic is produced by an entry of wordOps.
func TestGeneratedWordsAreTested(t *testing.T) {
	asm, _ := gentest.Generate(t, "zkernel_arm64.s", "zkernel_arm64.go")
	known := map[string]bool{}
	for _, w := range allWords() {
		known[strings.Fields(w.GNU)[0]] = true
	}
	for _, m := range regexp.MustCompile(`WORD \$0x[0-9a-f]{8} // ([a-z][a-z0-9]*) `).FindAllStringSubmatch(string(asm), -1) {
		if !known[m[1]] {
			t.Errorf("generated WORD %s is not in the encoding tests", m[1])
		}
	}
}

// The committed files, internal/kernel's and the root's, are what the
// generator produces now.
func TestCommittedFilesAreCurrent(t *testing.T) {
	gentest.CheckCommittedKernels(t, "arm64")
}
