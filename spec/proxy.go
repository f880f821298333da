package spec

import "fmt"

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
