// Package spec holds what every contract shares: operations as values and
// errors as kinds.
//
// A store operation is a Go value with a stable snake_case name (see Op); its
// outcome is a result value or an error carrying a Kind. The kit compares
// kinds, never message text, so a backend in any language can conform. Go
// callers match a kind with errors.Is(err, SomeKind).
//
// The contracts themselves live in the sub-packages (spec/continuity, ...);
// the Ginkgo suite that states their rules lives in spec/suite.
package spec

import (
	"context"
	"errors"
	"fmt"
)

// Op is one store operation as a value. Name is the operation's stable
// snake_case name, the same in reports, histories and the wire protocol.
// Result is the zero value of what the operation yields (a typed nil for a
// pointer, map or slice; untyped nil when it yields nothing), so a decoder
// or a checker knows the result's type without a table of its own.
type Op interface {
	Name() string
	Result() any
}

// Applier performs operation values: a store in process, a backend over the
// wire, or a wrapper that records or injects faults. The result's type is the
// one the operation names.
type Applier interface {
	Apply(ctx context.Context, op Op) (any, error)
}

// Kind names a class of error in a contract's closed set. A Kind is itself an
// error so that errors.Is(err, continuity.ErrStaleFencingToken) reads as the
// rule it checks.
type Kind string

func (k Kind) Error() string { return string(k) }

// ErrCrashed is the kit's kind for an operation whose backend process died
// under it (killed, or crashed at an armed point): it may or may not have
// taken effect.
const ErrCrashed Kind = "crashed"

// Error is a failed operation: its kind, and a message for people. Only the
// kind is part of the contract.
type Error struct {
	Kind    Kind
	Message string
	// Cause is the underlying error, when there is one (a SQLite error, a
	// context deadline); errors.Is and errors.As see through to it.
	Cause error
}

func (e *Error) Unwrap() error { return e.Cause }

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Kind)
	}
	return string(e.Kind) + ": " + e.Message
}

// Is reports whether target is this error's kind, or an *Error of the same
// kind.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Kind:
		return e.Kind == t
	case *Error:
		return e.Kind == t.Kind
	}
	return false
}

// Errorf builds an *Error of kind k. A %w verb in format sets its Cause.
func Errorf(k Kind, format string, args ...any) error {
	w := fmt.Errorf(format, args...)
	return &Error{Kind: k, Message: w.Error(), Cause: errors.Unwrap(w)}
}

// KindOf returns the kind err carries, or "" when it carries none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var k Kind
	if errors.As(err, &k) {
		return k
	}
	return ""
}
