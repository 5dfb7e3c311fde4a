package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/glancelab/attention/asm/internal/gentest"
)

func TestCalibCode(t *testing.T) {
	ymm, ymmStubs := gentest.GenerateArgs(t, "calib_amd64.s", "calib_amd64.go", "-calib", "-pkg", "calib")
	zmm, zmmStubs := gentest.GenerateArgs(t, "calib_avx512_amd64.s", "calib_avx512_amd64.go", "-calib", "-zmm", "-pkg", "calib")
	for _, f := range [][]byte{ymm, ymmStubs, zmm, zmmStubs} {
		gentest.CheckHeader(t, f)
	}
	for _, c := range []struct {
		text, label, reg string
		funcs            []string
		chains           int
	}{
		{string(ymm), "fma", "Y", []string{"fmaAVX2", "readAVX2", "readOneAVX2", "pairsAVX2"}, calibFMAChains},
		{string(zmm), "fmaz", "Z", []string{"fmaAVX512", "readAVX512", "readOneAVX512", "pairsAVX512"}, calibFMAChainsZ},
	} {
		for _, name := range c.funcs {
			if !strings.Contains(c.text, "TEXT ·"+name+"(SB), NOSPLIT, $0-") {
				t.Errorf("no NOSPLIT leaf %s", name)
			}
		}
		if strings.Contains(c.text, "dotAVX2") {
			t.Error("-calib also generated the attention kernels")
		}
		// The FMA loops hold at least 10 independent chains (12 to 16 on
		// zmm), of the width their name says.
		loop := c.text[strings.Index(c.text, c.label+"_loop:"):strings.Index(c.text, c.label+"_done:")]
		if n := strings.Count(loop, "VFMADD231PS"); n != c.chains || n < 10 {
			t.Errorf("%s loop has %d FMAs, want %d (at least 10)", c.label, n, c.chains)
		}
		if n := strings.Count(loop, ", "+c.reg); n != 2*c.chains {
			t.Errorf("%s loop: %d %s register operands, want %d", c.label, n, c.reg, 2*c.chains)
		}
		if n := strings.Count(c.text, "VZEROUPPER"); n != len(c.funcs) {
			t.Errorf("%d VZEROUPPER, want one per kernel", n)
		}
	}
	if calibFMAChainsZ < 12 || calibFMAChainsZ > 16 {
		t.Errorf("%d zmm chains, want 12 to 16", calibFMAChainsZ)
	}
	// The ymm kernels run on AVX2-only CPUs: no EVEX register (Z, K, or
	// X/Y 16–31) in them.
	if m := regexp.MustCompile(`\b(Z[0-9]+|K[0-7]|[XY](1[6-9]|2[0-9]|3[01]))\b`).FindString(string(ymm)); m != "" {
		t.Errorf("the ymm kernels use %s, an AVX-512 register", m)
	}
}

func TestCalibCommitted(t *testing.T) {
	ymm, ymmStubs := gentest.GenerateArgs(t, "calib_amd64.s", "calib_amd64.go", "-calib", "-pkg", "calib")
	zmm, zmmStubs := gentest.GenerateArgs(t, "calib_avx512_amd64.s", "calib_avx512_amd64.go", "-calib", "-zmm", "-pkg", "calib")
	gentest.CheckCommitted(t, map[string][]byte{
		"../../internal/calib/calib_amd64.s": ymm, "../../internal/calib/calib_amd64.go": ymmStubs,
		"../../internal/calib/calib_avx512_amd64.s": zmm, "../../internal/calib/calib_avx512_amd64.go": zmmStubs,
	})
}
