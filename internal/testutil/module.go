package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// OfflineGo is the environment, added to the process's, under which the go
// command builds a ProgramModule: dependencies from the module cache, sums
// from this module's go.sum, no network, no workspace.
var OfflineGo = []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off"}

// ProgramModule writes programs (a directory name each, and the source of
// its main.go) into a module in a temporary directory that requires this
// module from the working tree at root, and returns the directory and the
// path of the go command. It skips the test if the go command is not on
// PATH: the programs cannot be built then.
func ProgramModule(t testing.TB, root string, programs map[string]string) (dir, goCmd string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot build the programs")
	}
	dir = t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"go.mod": fmt.Appendf(nil, "module programs\n\ngo 1.26.0\n\nrequire github.com/glancelab/attention v0.0.0\n\nreplace github.com/glancelab/attention => %s\n", root),
		"go.sum": sum,
	}
	for name, src := range programs {
		files[filepath.Join(name, "main.go")] = []byte(src)
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, goCmd
}
