package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
)

// childEnv, set in the environment, makes the test binary run the command
// itself instead of the tests: see runLimited.
const childEnv = "ATTENTION_TEST_RUN_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// runLimited runs the command with args in a child process whose address
// space bash limits to limit bytes, so that an input which makes the
// command allocate without bound ends that process, with a failed test,
// rather than the tests. It returns the exit code and stderr, and skips
// the test where bash cannot set the limit.
func runLimited(t *testing.T, limit int64, args ...string) (code int, stderr string, ran bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to limit the child's memory")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const cannotLimit = 125
	script := "ulimit -v " + strconv.FormatInt(limit>>10, 10) + " || exit " + strconv.Itoa(cannotLimit) + `; exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, bash, append([]string{"-c", script, exe}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("attention %q: still running after a minute", args)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	switch code {
	case cannotLimit:
		t.Skipf("bash cannot limit the address space: %s", errOut.String())
	case cannotExecute:
		// A test binary for another architecture, run by an emulator:
		// the shell cannot start it again.
		t.Logf("no child process: the shell cannot execute %s (%s)", exe, strings.TrimSpace(errOut.String()))
		return code, errOut.String(), false
	}
	return code, errOut.String(), true
}

// cannotExecute is the shell's exit status for a file it found but cannot
// execute.
const cannotExecute = 126

func TestDemo(t *testing.T) {
	for _, args := range [][]string{nil, {"demo"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("run(%q) = %d, stderr:\n%s", args, code, stderr.String())
		}
		// Only an ignored ATTENTION_IMPL in the tests' own environment
		// may be reported on stderr.
		wantErr := ""
		if _, err := attention.ImplementationRequest(); err != nil {
			wantErr = err.Error() + "\n"
		}
		if stderr.String() != wantErr {
			t.Errorf("run(%q) wrote to stderr:\n%s", args, stderr.String())
		}
		out := stdout.String()
		for _, want := range []string{
			"implementation  " + attention.Implementation(),
			"e^2 ≈ 7.389", "e^1 ≈ 2.718", "e^0 = 1.000", "= 11.107",
			"[0.665 0.245 0.090]", "= 3.15", "context 3.15",
			"e^2.1 ≈ 8.166", "= 11.165", "0.12 / 0.73 / 0.15",
			"the      black    cat      sat",
			"  le  ", "  chat  ", "  noir  ", "  était  ", "  assis  ",
			"legend:",
			"speed (T=1024, d=64): ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("run(%q) output lacks %q; got:\n%s", args, want, out)
			}
		}
	}
}

// TestTranslationAlignment checks the point of the grid: every target word
// attends mostly to the source word it translates, reordering included.
func TestTranslationAlignment(t *testing.T) {
	want := []string{"the", "cat", "black", "sat", "sat"}
	grid, _, err := translate()
	if err != nil {
		t.Fatal(err)
	}
	n := len(grid.cols)
	for i, target := range grid.rows {
		row := grid.weights[i*n : (i+1)*n]
		best := 0
		for j, w := range row {
			if w > row[best] {
				best = j
			}
		}
		if grid.cols[best] != want[i] || row[best] < 0.5 {
			t.Errorf("%s attends most to %s (%.2f), want %s above 0.5", target, grid.cols[best], row[best], want[i])
		}
	}
}

func TestDeterministic(t *testing.T) {
	render := func() string {
		var out bytes.Buffer
		p := &printer{w: &out}
		for _, section := range []func(*printer) error{writeWorkedExample, writeSecondExample, writeTranslation} {
			if err := section(p); err != nil {
				t.Fatal(err)
			}
		}
		return out.String()
	}
	if a, b := render(), render(); a != b {
		t.Errorf("demo output differs between runs:\n%s\n---\n%s", a, b)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorExitsOne(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(nil, failingWriter{}, &stderr); code != 1 {
		t.Errorf("run with a failing stdout = %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "disk full") {
		t.Errorf("stderr = %q, want the write error", stderr.String())
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"help", "-h", "--help"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{arg}, &stdout, &stderr); code != 0 {
			t.Errorf("run(%q) = %d, want 0", arg, code)
		}
		if !strings.HasPrefix(stdout.String(), "usage: attention") || !strings.Contains(stdout.String(), "demo") {
			t.Errorf("run(%q) stdout = %q, want usage", arg, stdout.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("run(%q) wrote to stderr: %q", arg, stderr.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"demo", "extra"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
		if stdout.Len() != 0 {
			t.Errorf("run(%q) wrote to stdout: %q", args, stdout.String())
		}
		if !strings.Contains(stderr.String(), "usage: attention") {
			t.Errorf("run(%q) stderr = %q, want usage", args, stderr.String())
		}
	}
}

func TestDemoHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"demo", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("demo --help = %d", code)
	}
	if out := stdout.String(); !strings.HasPrefix(out, "usage: attention demo\n") || strings.Contains(out, "flags:") {
		t.Errorf("demo --help = %q", out)
	}
}

// runDemoWith runs the demo in a child process (the test binary, as
// TestMain lets it) with env added to its environment, and returns the
// second field of the first stdout line that has "implementation" (what
// .ci/run reads), that line, and stderr.
func runDemoWith(t *testing.T, env ...string) (name, line, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skip("no test executable:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "demo")
	cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if errors.Is(err, syscall.ENOEXEC) {
		t.Skip("test binary cannot be executed directly here (run under an emulator):", err)
	}
	if err != nil {
		t.Fatalf("attention demo with %q: %v\nstderr:\n%s", env, err, errOut.String())
	}
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, "implementation") {
			if f := strings.Fields(l); len(f) > 1 {
				name = f[1]
			}
			return name, strings.TrimSpace(l), errOut.String()
		}
	}
	t.Fatalf("attention demo with %q printed no implementation line:\n%s", env, out.String())
	return
}

// A value of ATTENTION_IMPL that names no available implementation runs
// the default, not generic, and the CLI says so on stderr and on the
// implementation line; a name in another case is honoured.
func TestIgnoredImplementationRequest(t *testing.T) {
	names := attention.Implementations()
	def := names[0] // the default whatever this process's environment says

	name, line, stderr := runDemoWith(t, impl.EnvVar+"=avx513")
	if name != def {
		t.Errorf("%s=avx513: implementation %q, want the default %q (line %q)", impl.EnvVar, name, def, line)
	}
	if want := `(ATTENTION_IMPL="avx513" ignored: unknown name)`; !strings.HasSuffix(line, want) {
		t.Errorf("%s=avx513: implementation line %q lacks %q", impl.EnvVar, line, want)
	}
	if want := `attention: ATTENTION_IMPL="avx513" ignored: no such name among `; !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, "; running "+def+"\n") {
		t.Errorf("%s=avx513: stderr = %q, want %q... running %s", impl.EnvVar, stderr, want, def)
	}

	// The last accelerated path (or generic), named in upper case with
	// spaces, is honoured and nothing is said.
	other := names[max(0, len(names)-2)]
	name, line, stderr = runDemoWith(t, impl.EnvVar+"= "+strings.ToUpper(other)+" ")
	if name != other || line != "implementation  "+other || stderr != "" {
		t.Errorf("%s=%q: implementation line %q, stderr %q; want %s, nothing on stderr", impl.EnvVar, strings.ToUpper(other), line, stderr, other)
	}

	// A path this CPU cannot run: x/sys/cpu's GODEBUG switches AVX-512 off.
	if runtime.GOARCH == "amd64" && slices.Contains(names, "avx512") {
		name, line, stderr = runDemoWith(t, impl.EnvVar+"=avx512", "GODEBUG=cpu.avx512f=off")
		if name == "avx512" || name == impl.Generic && slices.Contains(names, "avx2") ||
			!strings.HasSuffix(line, `(ATTENTION_IMPL="avx512" ignored: this CPU lacks AVX512F)`) ||
			!strings.Contains(stderr, "this CPU lacks AVX512F; running "+name+"\n") {
			t.Errorf("%s=avx512 without AVX512F: implementation line %q, stderr %q", impl.EnvVar, line, stderr)
		}
	}
}
