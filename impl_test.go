package attention

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
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

// ImplementationRequest reports this process's ATTENTION_IMPL: honoured if
// it is unset or names an available implementation in any case, else an
// *ImplementationError and the default runs. TestEnvIgnored runs it in
// child processes with such values.
func TestImplementationRequest(t *testing.T) {
	requested, err := ImplementationRequest()
	if requested != os.Getenv(impl.EnvVar) {
		t.Fatalf("ImplementationRequest() = %q, but %s=%q", requested, impl.EnvVar, os.Getenv(impl.EnvVar))
	}
	names := Implementations()
	want := impl.Canonical(requested)
	if honoured := want == "" || slices.Contains(names, want); honoured != (err == nil) {
		t.Fatalf("%s=%q: ImplementationRequest() error = %v, with %v available", impl.EnvVar, requested, err, names)
	}
	// Only the child processes of TestEnvIgnored run this test alone,
	// where no other test changes the selection.
	alone := os.Getenv(childRequest) == "1"
	if err == nil {
		if alone && want != "" && Implementation() != want {
			t.Fatalf("%s=%q honoured, but Implementation() = %q", impl.EnvVar, requested, Implementation())
		}
		return
	}
	var ie *ImplementationError
	if !errors.Is(err, ErrArgument) || !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *ImplementationError matching ErrArgument", err, err)
	}
	known := slices.ContainsFunc(impl.All(), func(in impl.Info) bool { return in.Name == want })
	if ie.Value != requested || ie.Running != names[0] || known != (ie.Missing != nil) || ie.Names[len(ie.Names)-1] != impl.Generic {
		t.Fatalf("%s=%q: %#v, want the value, the default %q running, Missing only for a known name", impl.EnvVar, requested, ie, names[0])
	}
	if msg := err.Error(); !strings.Contains(msg, impl.EnvVar+"="+strconv.Quote(requested)+" ignored: ") || !strings.HasSuffix(msg, "; running "+names[0]) {
		t.Fatalf("error %q does not name the value and what runs", msg)
	}
	if alone && Implementation() != names[0] {
		t.Fatalf("%s=%q ignored, but Implementation() = %q, not the default %q", impl.EnvVar, requested, Implementation(), names[0])
	}
}

// childRequest marks the child processes of TestEnvIgnored.
const childRequest = "ATTENTION_TEST_REQUEST_CHILD"

// A mistyped or wrong-case value of ATTENTION_IMPL, in a fresh process:
// the first is ignored for the default, the second honoured.
func TestEnvIgnored(t *testing.T) {
	if os.Getenv(childRequest) != "" {
		t.Skip("already a child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip("no test executable:", err)
	}
	names := Implementations()
	for _, value := range []string{"avx513", strings.ToUpper(names[0]), " " + names[len(names)-1] + "\t", "generic2"} {
		cmd := exec.Command(exe, "-test.run=^TestImplementationRequest$", "-test.v")
		cmd.Env = append(os.Environ(), impl.EnvVar+"="+value, childRequest+"=1")
		out, err := cmd.CombinedOutput()
		if errors.Is(err, syscall.ENOEXEC) {
			t.Skip("test binary cannot be executed directly here (run under an emulator):", err)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestImplementationRequest") {
			t.Fatalf("%s=%q run failed: %v\n%s", impl.EnvVar, value, err, out)
		}
	}
}

func TestImplementationErrorMessage(t *testing.T) {
	for _, c := range []struct {
		err  ImplementationError
		want string
	}{
		{ImplementationError{Value: "avx513", Names: []string{"avx512", "avx2", "generic"}, Running: "avx512"},
			`attention: ATTENTION_IMPL="avx513" ignored: no such name among avx512, avx2, generic; running avx512`},
		{ImplementationError{Value: " AVX512", Missing: []string{"AVX512F", "AVX512BW"}, Names: []string{"avx512", "avx2", "generic"}, Running: "avx2"},
			`attention: ATTENTION_IMPL=" AVX512" ignored: this CPU lacks AVX512F, AVX512BW; running avx2`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		if !errors.Is(&c.err, ErrArgument) || errors.Is(&c.err, ErrShape) {
			t.Errorf("%v does not match ErrArgument alone", &c.err)
		}
	}
}
