package main

import (
	"strings"
	"testing"

	"github.com/glancelab/attention/asm/internal/gentest"
)

func TestCalibCode(t *testing.T) {
	asm, stubs := gentest.GenerateArgs(t, "calib_amd64.s", "calib_amd64.go", "-calib", "-pkg", "calib")
	for _, f := range [][]byte{asm, stubs} {
		gentest.CheckHeader(t, f)
	}
	text := string(asm)
	for _, name := range []string{"fmaAVX2", "readAVX2"} {
		if !strings.Contains(text, "TEXT ·"+name+"(SB), NOSPLIT, $0-") {
			t.Errorf("no NOSPLIT leaf %s", name)
		}
	}
	if strings.Contains(text, "dotAVX2") {
		t.Error("-calib also generated the attention kernels")
	}
	// The FMA loop holds at least 10 independent chains.
	loop := text[strings.Index(text, "fma_loop:"):strings.Index(text, "fma_done:")]
	if n := strings.Count(loop, "VFMADD231PS"); n != calibFMAChains || n < 10 {
		t.Errorf("FMA loop has %d FMAs, want %d (at least 10)", n, calibFMAChains)
	}
	if n := strings.Count(text, "VZEROUPPER"); n != 2 {
		t.Errorf("%d VZEROUPPER, want one per kernel", n)
	}
}

func TestCalibCommitted(t *testing.T) {
	asm, stubs := gentest.GenerateArgs(t, "calib_amd64.s", "calib_amd64.go", "-calib", "-pkg", "calib")
	gentest.CheckCommitted(t, map[string][]byte{"../../internal/calib/calib_amd64.s": asm, "../../internal/calib/calib_amd64.go": stubs})
}
