package attention

import (
	"errors"
	"fmt"
	"strings"

	"github.com/glancelab/attention/internal/impl"
)

// Sentinel errors, for errors.Is. Every error the engine returns wraps one
// of them.
var (
	// ErrShape reports dimensions that do not fit together.
	ErrShape = errors.New("attention: shape mismatch")
	// ErrArgument reports a value outside its domain, such as a negative
	// length or a non-finite scale.
	ErrArgument = errors.New("attention: invalid argument")
	// ErrClosed reports a call on a Batched after Close.
	ErrClosed = errors.New("attention: Batched is closed")
	// ErrCapacity reports an Append to a KVCache entry with no room left
	// for the rows (a ring cache never fills).
	ErrCapacity = errors.New("attention: KV cache is full")
)

// ShapeError names the dimension that did not fit: in Op, What had size Got
// where Want was required. It matches ErrShape under errors.Is.
type ShapeError struct {
	Op   string // the call that failed, e.g. "Attend"
	What string // the operand, e.g. "len(query)"
	Got  int
	Want int
	Why  string // what Want is, e.g. "key dimension"
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("attention: %s: %s = %d, want %d (%s)", e.Op, e.What, e.Got, e.Want, e.Why)
}

// Is reports whether target is ErrShape.
func (e *ShapeError) Is(target error) bool { return target == ErrShape }

// ImplementationError reports a value of the environment variable
// ATTENTION_IMPL that was ignored: no implementation has that name, or
// this CPU lacks features it needs. It matches ErrArgument under errors.Is.
type ImplementationError struct {
	Value   string   // the variable's value, as read
	Missing []string // the CPU features the named implementation needs and this CPU lacks; nil if no implementation has the name
	Names   []string // the implementations of this build, available or not, generic last
	Running string   // the implementation that runs instead, the default
}

func (e *ImplementationError) Error() string {
	why := "no such name among " + strings.Join(e.Names, ", ")
	if e.Missing != nil {
		why = "this CPU lacks " + strings.Join(e.Missing, ", ")
	}
	return fmt.Sprintf("attention: %s=%q ignored: %s; running %s", impl.EnvVar, e.Value, why, e.Running)
}

// Is reports whether target is ErrArgument.
func (e *ImplementationError) Is(target error) bool { return target == ErrArgument }

func shapeErr(op, what string, got, want int, why string) error {
	return &ShapeError{Op: op, What: what, Got: got, Want: want, Why: why}
}

func argErr(op, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrArgument, op, fmt.Sprintf(format, args...))
}
