// Command attention shows what the attention library does: by default it
// walks through one decoder step by hand, attends over a toy translation and
// draws the weights, and compares the speed of the kernel implementations.
//
// Usage:
//
//	attention [command]
//
// Commands are listed in the commands table; "help" prints them.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
)

// A command is one subcommand. New ones (bench, heatmap) are a line in
// commands plus a file with their run function; dispatch, usage and exit
// codes need no change.
type command struct {
	name    string
	summary string
	// run gets the arguments after the command's name; stdout is for the
	// results, stderr for progress.
	run func(stdout, stderr io.Writer, args []string) error
}

// commands is in the order usage lists them; the first is the default.
var commands = []command{
	{"demo", "walk through one attention step, a toy translation and a speed check", runDemo},
	{"bench", "measure this machine's limits, then time every kernel and attention shape", runBench},
	{"heatmap", "draw the attention weights as an SVG and PNG heatmap", runHeatmap},
}

// usageError is a mistake on the command line: it gets usage and exit 2,
// whereas any other error is a failure at run time (exit 1).
type usageError struct {
	msg   string
	usage func(io.Writer) // the command's own usage; nil for the list of commands
}

func (e *usageError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code, so tests can
// drive every path with buffers.
func run(args []string, stdout, stderr io.Writer) int {
	name := commands[0].name
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "help", "-h", "-help", "--help":
		if err := usage(stdout); err != nil {
			fmt.Fprintln(stderr, "attention:", err)
			return 1
		}
		return 0
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "attention: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	// An ATTENTION_IMPL value the library ignored is said first, on
	// stderr, so that a mistyped name is not silently the default.
	if _, err := attention.ImplementationRequest(); err != nil {
		fmt.Fprintln(stderr, err)
	}
	err := cmd.run(stdout, stderr, args)
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "attention %s: %v\n\n", cmd.name, err)
		if ue.usage != nil {
			ue.usage(stderr)
		} else {
			usage(stderr)
		}
		return 2
	default:
		fmt.Fprintf(stderr, "attention %s: %v\n", cmd.name, err)
		return 1
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage(w io.Writer) error {
	p := &printer{w: w}
	p.printf("usage: attention [command]\n\ncommands:\n")
	for i, c := range commands {
		def := ""
		if i == 0 {
			def = " (default)"
		}
		p.printf("  %-8s %s%s\n", c.name, c.summary, def)
	}
	p.printf("  %-8s %s\n", "help", "print this message")
	p.printf("\n\"attention COMMAND --help\" documents a command's flags.\n")
	p.printf("\n%s=%s in the environment forces the pure-Go kernels.\n", impl.EnvVar, impl.Generic)
	return p.err
}

// printer keeps the first write error, as bufio.Writer does, so the output
// code reads as a sequence of prints with one check at the end.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// parseFlags parses a command's flags. --help prints the command's usage
// to stdout and returns errHelp, which the command returns as success; a
// bad flag is a usageError carrying that usage.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	_, err := parseFlagsArgs(fs, args, stdout, 0)
	return err
}

// parseFlagsArgs is parseFlags for a command that takes up to maxArgs
// arguments besides its flags, which may come before or after them.
func parseFlagsArgs(fs *flag.FlagSet, args []string, stdout io.Writer, maxArgs int) ([]string, error) {
	fs.SetOutput(io.Discard)
	var rest []string
	err := fs.Parse(args)
	for err == nil && fs.NArg() > 0 && len(rest) < maxArgs {
		rest = append(rest, fs.Arg(0))
		err = fs.Parse(fs.Args()[1:])
	}
	return rest, flagError(fs, err, stdout)
}

func flagError(fs *flag.FlagSet, err error, stdout io.Writer) error {
	show := usageOf(fs)
	switch {
	case errors.Is(err, flag.ErrHelp):
		show(stdout)
		return errHelp
	case err != nil:
		return &usageError{msg: err.Error(), usage: show}
	case fs.NArg() > 0:
		return &usageError{msg: fmt.Sprintf("unexpected argument %q", fs.Arg(0)), usage: show}
	}
	return nil
}

// usageOf returns what prints a command's usage.
func usageOf(fs *flag.FlagSet) func(io.Writer) {
	return func(w io.Writer) {
		fs.SetOutput(w)
		fs.Usage()
	}
}

// errHelp ends a command that printed its usage on request.
var errHelp = errors.New("help requested")

// newFlagSet returns a flag set whose usage starts with the synopsis and
// description given, followed by the flags.
func newFlagSet(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.TrimSpace("attention "+name+" "+synopsis), description)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintf(w, "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}
