//go:build !purego

package attention

import (
	"bufio"
	"os"
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
