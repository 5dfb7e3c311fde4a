package linkcost

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
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
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir, goCmd := testutil.ProgramModule(t, root, programs)
	size := map[string]int64{}
	for name := range programs {
		cmd := exec.Command(goCmd, "build", "-o", name+".bin", "./"+name)
		cmd.Dir = dir
		// One target for every run (the test may run under an emulator or
		// for another GOARCH): the budget is amd64's.
		cmd.Env = append(append(os.Environ(), testutil.OfflineGo...), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
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
