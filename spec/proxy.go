package spec

import (
	"context"
	"fmt"
)

// Answer is what a Proxy makes of a backend's answer to op: its error, or
// its result asserted to be of type T, the type op.Result declares. A result
// of another type is an error that names the store, the operation, and both
// types.
func Answer[T any](store string, op Op, v any, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("%s: backend answered %s with %T, want %T", store, op.Name(), v, zero)
	}
	return t, nil
}

// CrashTarget ends a Proxy's target as a killed process would, when the
// target can (a Crash method), and otherwise closes it.
func CrashTarget(target Applier) error {
	switch t := target.(type) {
	case interface{ Crash() error }:
		return t.Crash()
	case interface{ Close() error }:
		return t.Close()
	}
	return nil
}

// Call applies op through target and answers its result as T (see Answer):
// the body of every Proxy method of an operation that yields a result.
func Call[T any](ctx context.Context, target Applier, store string, op Op) (T, error) {
	v, err := target.Apply(ctx, op)
	return Answer[T](store, op, v, err)
}

// Do applies op, which yields nothing, through target.
func Do(ctx context.Context, target Applier, op Op) error {
	_, err := target.Apply(ctx, op)
	return err
}

// CloseTarget closes target when it can be closed.
func CloseTarget(target Applier) error {
	if c, ok := target.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
