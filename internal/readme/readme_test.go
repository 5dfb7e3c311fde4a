package readme

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// maxLines is the README's budget: what a user needs, the rest in docs/.
const maxLines = 400

func readme(t *testing.T) (root string, lines []string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return root, lines
}

// goBlocks returns the README's ```go blocks and the line each starts on.
func goBlocks(lines []string) (blocks []string, starts []int) {
	in := false
	var cur []string
	for i, l := range lines {
		switch {
		case !in && strings.TrimSpace(l) == "```go":
			in, cur = true, nil
			starts = append(starts, i+2)
		case in && strings.TrimSpace(l) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, l)
		}
	}
	return blocks, starts
}

func TestReadmeLength(t *testing.T) {
	_, lines := readme(t)
	if len(lines) > maxLines {
		t.Errorf("README.md has %d lines, more than %d: move what is not for users to docs/", len(lines), maxLines)
	}
}

// TestReadmeCompiles builds every Go block of the README, each a whole
// program, in a module of its own that requires this one from the working
// tree.
func TestReadmeCompiles(t *testing.T) {
	root, lines := readme(t)
	blocks, starts := goBlocks(lines)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block")
	}
	programs := map[string]string{}
	var pkgs []string
	for i, b := range blocks {
		if !strings.HasPrefix(b, "package main\n") {
			t.Errorf("README.md:%d: a Go block is not a whole program (package main): users copy them as they are", starts[i])
			continue
		}
		name := fmt.Sprintf("block%d_line%d", i, starts[i])
		programs[name] = b
		pkgs = append(pkgs, "./"+name)
	}
	dir, goCmd := testutil.ProgramModule(t, root, programs)
	// The build runs for the host (the test may run under an emulator with
	// another GOARCH).
	cmd := exec.Command(goCmd, append([]string{"vet"}, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), testutil.OfflineGo...), "GOARCH=", "GOOS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the README's Go blocks do not build (go vet %s): %v\n%s", strings.Join(pkgs, " "), err, out)
	}
}
