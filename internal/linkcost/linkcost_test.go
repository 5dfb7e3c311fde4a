package linkcost

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// dotBudget is how many bytes a program calling only attention.Dot may
// grow over the same program without it: the dot family, the
// implementation registry and golang.org/x/sys/cpu, nothing of the
// engines (package state built at init would make every kernel reachable).
const dotBudget = 50 << 10

var programs = map[string]string{
	"hello": `package main

import "fmt"

func main() { fmt.Println(1 * float32(2)) }
`,
	"dot": `package main

import (
	"fmt"

	"github.com/glancelab/attention"
)

func main() { fmt.Println(attention.Dot([]float32{1}, []float32{2})) }
`,
	"decode": `package main

import (
	"fmt"

	"github.com/glancelab/attention"
)

func main() {
	c, _ := attention.NewKVCache(1, 1, 4, 4, 4, attention.BF16)
	_ = c.Append(0, make([]float32, 4), make([]float32, 4), 1)
	e := attention.NewBatched(1)
	defer e.Close()
	q, _ := attention.NewTensor(1, 1, 1, 4, make([]float32, 4))
	out, _ := attention.NewTensor(1, 1, 1, 4, make([]float32, 4))
	fmt.Println(e.AttendCache(attention.BatchOutputs{Out: out}, q, c, nil))
}
`,
}

// TestLinkCost builds each program for linux/amd64 in a module of its own
// that requires this one from the working tree, and compares their sizes.
func TestLinkCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three programs: not in -short")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot build the programs")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module linkcost\n\ngo 1.26.0\n\nrequire github.com/glancelab/attention v0.0.0\n\nreplace github.com/glancelab/attention => %s\n", root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte(gomod))
	write("go.sum", sum)
	size := map[string]int64{}
	for name, src := range programs {
		write(name+"/main.go", []byte(src))
		cmd := exec.Command(goCmd, "build", "-o", name+".bin", "./"+name)
		cmd.Dir = dir
		// One target for every run (the test may run under an emulator or
		// for another GOARCH): the budget is amd64's.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
		st, err := os.Stat(filepath.Join(dir, name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		size[name] = st.Size()
	}
	dot, decode := size["dot"]-size["hello"], size["decode"]-size["hello"]
	t.Logf("growth over hello-world (linux/amd64): Dot only %d bytes, Batched + KVCache %d bytes", dot, decode)
	if dot > dotBudget {
		t.Errorf("a program calling only Dot grows by %d bytes, more than %d: something at package level makes more of the package reachable (go build -ldflags=-dumpdep shows what)", dot, dotBudget)
	}
}
