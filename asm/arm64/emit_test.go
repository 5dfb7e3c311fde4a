package main

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
)

// sampleRegs exercises every bit of each register field.
var sampleRegs = [][3]V{{0, 0, 0}, {1, 2, 3}, {31, 30, 29}, {5, 17, 8}, {16, 4, 27}}

func allWords() []Word {
	names := make([]string, 0, len(wordOps))
	for name := range wordOps {
		names = append(names, name)
	}
	sort.Strings(names)
	var ws []Word
	for _, name := range names {
		for _, r := range sampleRegs {
			ws = append(ws, wordOps[name](r[0], r[1], r[2]))
		}
	}
	return ws
}

// TestEncodingsMatchGNUAs assembles every instruction the emitter can
// encode with GNU as and compares the words.
func TestEncodingsMatchGNUAs(t *testing.T) {
	as, err := exec.LookPath("aarch64-linux-gnu-as")
	if err != nil {
		t.Skip("aarch64-linux-gnu-as not installed (Debian: binutils-aarch64-linux-gnu)")
	}
	objcopy, err := exec.LookPath("aarch64-linux-gnu-objcopy")
	if err != nil {
		t.Skip("aarch64-linux-gnu-objcopy not installed")
	}
	ws := allWords()
	var src strings.Builder
	for _, w := range ws {
		src.WriteString(w.GNU + "\n")
	}
	dir := t.TempDir()
	s, o, bin := filepath.Join(dir, "in.s"), filepath.Join(dir, "in.o"), filepath.Join(dir, "in.bin")
	if err := os.WriteFile(s, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "-j", ".text", o, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(code) != 4*len(ws) {
		t.Fatalf("as produced %d bytes for %d instructions", len(code), len(ws))
	}
	for i, w := range ws {
		if got := binary.LittleEndian.Uint32(code[4*i:]); got != w.Bits {
			t.Errorf("%s: emitter 0x%08x, GNU as 0x%08x", w.GNU, w.Bits, got)
		}
	}
}

// TestEncodingsDecode decodes every encoding with x/arch's disassembler,
// which must print the same instruction (GNU syntax).
func TestEncodingsDecode(t *testing.T) {
	for _, w := range allWords() {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], w.Bits)
		inst, err := arm64asm.Decode(b[:])
		if err != nil {
			t.Errorf("%s (0x%08x): %v", w.GNU, w.Bits, err)
			continue
		}
		if got := normalize(arm64asm.GNUSyntax(inst)); got != normalize(w.GNU) {
			t.Errorf("0x%08x decodes as %q, want %q", w.Bits, got, w.GNU)
		}
	}
}

// normalize makes the two spellings comparable: lower case, single spaces,
// "#0" for the zero immediate.
func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.ReplaceAll(s, "#0.0", "#0")
}
