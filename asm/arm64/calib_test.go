package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/glancelab/attention/asm/internal/gentest"
)

func TestCalibCode(t *testing.T) {
	asm, stubs := gentest.GenerateArgs(t, "calib_arm64.s", "calib_arm64.go", "-calib", "-pkg", "calib")
	for _, f := range [][]byte{asm, stubs} {
		gentest.CheckHeader(t, f)
	}
	text := string(asm)
	if m := regexp.MustCompile(`\bR(18|26|27|28|29|30)\b|\bg\b`).FindString(text); m != "" {
		t.Errorf("generated code touches reserved register %s", m)
	}
	funcs := strings.Split(text, "\nTEXT ")[1:]
	if len(funcs) != len(calibKernels) {
		t.Fatalf("found %d functions, want %d", len(funcs), len(calibKernels))
	}
	// The FMA loop holds at least 10 independent chains: distinct
	// accumulators.
	fma := funcs[0]
	accs := map[string]bool{}
	for _, m := range regexp.MustCompile(`VFMLA V16\.S4, V17\.S4, (V\d+)\.S4`).FindAllStringSubmatch(fma, -1) {
		accs[m[1]] = true
	}
	if len(accs) != calibFMAChains || len(accs) < 10 {
		t.Errorf("FMA loop has %d chains, want %d (at least 10)", len(accs), calibFMAChains)
	}
	known := map[string]bool{}
	for _, w := range allWords() {
		known[strings.Fields(w.GNU)[0]] = true
	}
	for _, m := range regexp.MustCompile(`WORD \$0x[0-9a-f]{8} // ([a-z]+)`).FindAllStringSubmatch(text, -1) {
		if !known[m[1]] {
			t.Errorf("generated WORD %s is not in the encoding tests", m[1])
		}
	}
}

func TestCalibCommitted(t *testing.T) {
	asm, stubs := gentest.GenerateArgs(t, "calib_arm64.s", "calib_arm64.go", "-calib", "-pkg", "calib")
	gentest.CheckCommitted(t, map[string][]byte{"../../internal/calib/calib_arm64.s": asm, "../../internal/calib/calib_arm64.go": stubs})
}
