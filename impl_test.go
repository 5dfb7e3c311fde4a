package attention

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/glancelab/attention/internal/impl"
)

func TestImplementationIsListed(t *testing.T) {
	list := Implementations()
	if len(list) == 0 || list[len(list)-1] != impl.Generic {
		t.Fatalf("Implementations() = %v, want generic last", list)
	}
	if !slices.Contains(list, Implementation()) {
		t.Fatalf("Implementation() = %q is not among %v", Implementation(), list)
	}
	if os.Getenv(impl.EnvVar) == impl.Generic && Implementation() != impl.Generic {
		t.Fatalf("%s=generic but Implementation() = %q", impl.EnvVar, Implementation())
	}
}

// The environment variable forces the generic path in a fresh process.
func TestEnvForcesGeneric(t *testing.T) {
	if os.Getenv(impl.EnvVar) != "" {
		t.Skip("already running under " + impl.EnvVar)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip("no test executable:", err)
	}
	cmd := exec.Command(exe, "-test.run=^TestImplementationIsListed$", "-test.v")
	cmd.Env = append(os.Environ(), impl.EnvVar+"="+impl.Generic)
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.ENOEXEC) {
		t.Skip("test binary cannot be executed directly here (run under an emulator):", err)
	}
	if err != nil {
		t.Fatalf("%s=generic run failed: %v\n%s", impl.EnvVar, err, out)
	}
}
