//go:build (amd64 || arm64) && !purego

package attention

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"testing"
)

// The exported kernels sit just under the compiler's inlining budget (80),
// which spares short calls a frame (about a nanosecond of an 11 ns Dot at
// n = 128). A small edit can push them over without any test failing, so
// this test asks the compiler.
func TestExportedKernelsInline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with -gcflags=-m; not run with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to ask the compiler: %v", err)
	}
	cmd := exec.Command(goTool, "build", "-gcflags=-m", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, name := range []string{"Dot", "Axpy", "Exp", "Softmax"} {
		if !regexp.MustCompile(`(?m)^\./kernels\.go:\d+:\d+: can inline ` + name + `\b`).Match(out) {
			t.Errorf("%s is no longer inlinable: keep its body within the budget (see lengthError)", name)
		}
	}
}
