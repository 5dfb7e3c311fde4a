package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glancelab/attention/internal/impl"
)

// Dispatch knows every feature avo can write in a "// Requires:" line, so
// a kernel that starts using a new extension cannot slip past the check
// of its implementation's dispatch condition (the root package's
// TestRequiresCoveredByDispatch). Avo's instruction table is internal to
// avo, so the test reads its source from the module cache.
func TestDispatchKnowsEveryAvoFeature(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/mmcloughlin/avo").Output()
	if err != nil {
		t.Fatalf("go list avo: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "internal", "inst", "ztable.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, list := range regexp.MustCompile(`ISA:\s*\[\]string\{([^}]*)\}`).FindAllSubmatch(src, -1) {
		for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(list[1], -1) {
			seen[string(q[1])] = true
		}
	}
	if len(seen) < 30 {
		t.Fatalf("found only %d feature names in avo's table: has its format changed?", len(seen))
	}
	for name := range seen {
		if _, ok := impl.Features[name]; !ok {
			t.Errorf("avo can require %s, which internal/impl's Features does not name", name)
		}
	}
}
