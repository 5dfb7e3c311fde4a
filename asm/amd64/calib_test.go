package main

import (
	"regexp"
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
	for _, name := range []string{"fmaAVX2", "readAVX2", "readOneAVX2", "fmaAVX512", "readAVX512", "readOneAVX512"} {
		if !strings.Contains(text, "TEXT ·"+name+"(SB), NOSPLIT, $0-") {
			t.Errorf("no NOSPLIT leaf %s", name)
		}
	}
	if strings.Contains(text, "dotAVX2") {
		t.Error("-calib also generated the attention kernels")
	}
	// The FMA loops hold at least 10 independent chains (12 to 16 on zmm),
	// of the width their name says.
	for _, c := range []struct {
		label, reg string
		chains     int
	}{{"fma", "Y", calibFMAChains}, {"fmaz", "Z", calibFMAChainsZ}} {
		loop := text[strings.Index(text, c.label+"_loop:"):strings.Index(text, c.label+"_done:")]
		if n := strings.Count(loop, "VFMADD231PS"); n != c.chains || n < 10 {
			t.Errorf("%s loop has %d FMAs, want %d (at least 10)", c.label, n, c.chains)
		}
		if n := strings.Count(loop, ", "+c.reg); n != 2*c.chains {
			t.Errorf("%s loop: %d %s register operands, want %d", c.label, n, c.reg, 2*c.chains)
		}
	}
	if calibFMAChainsZ < 12 || calibFMAChainsZ > 16 {
		t.Errorf("%d zmm chains, want 12 to 16", calibFMAChainsZ)
	}
	if n := strings.Count(text, "VZEROUPPER"); n != 6 {
		t.Errorf("%d VZEROUPPER, want one per kernel", n)
	}
	// The ymm kernels run on AVX2-only CPUs: no EVEX register (Z, K, or
	// X/Y 16–31) in them.
	ymm := text[:strings.Index(text, "TEXT ·fmaAVX512")]
	if m := regexp.MustCompile(`\b(Z[0-9]+|K[1-7]|[XY](1[6-9]|2[0-9]|3[01]))\b`).FindString(ymm); m != "" {
		t.Errorf("the ymm kernels use %s, an AVX-512 register", m)
	}
}

func TestCalibCommitted(t *testing.T) {
	asm, stubs := gentest.GenerateArgs(t, "calib_amd64.s", "calib_amd64.go", "-calib", "-pkg", "calib")
	gentest.CheckCommitted(t, map[string][]byte{"../../internal/calib/calib_amd64.s": asm, "../../internal/calib/calib_amd64.go": stubs})
}
