// Package adapters is the one seam between the kit and a backend. A Target
// is one open store that applies operation values; the suite, the checkers
// and the simulator drive every backend through it, whether the store is a Go
// value in this process or a program at the other end of a pipe.
package adapters

import (
	"context"

	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/runtime"
)

// Target is one open store of a backend.
type Target interface {
	spec.Applier
	Close() error
}

// Crasher is a Target (or a store) that can end as a killed process would:
// without writing anything it has not written yet. A store with nothing
// buffered has no need of it: Close is the same.
type Crasher interface {
	Crash() error
}

// Crash ends t as a killed process would: Crash when it can, else Close.
func Crash(t any) error {
	if c, ok := t.(Crasher); ok {
		return c.Crash()
	}
	if c, ok := t.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// local is a Target over a store in this process.
type local struct {
	store any
	apply func(ctx context.Context, op spec.Op) (any, error)
	close func() error
}

func (l local) Apply(ctx context.Context, op spec.Op) (any, error) { return l.apply(ctx, op) }
func (l local) Close() error                                       { return l.close() }
func (l local) Crash() error                                       { return Crash(l.store) }

// Continuity is the in-process Target of a Go continuity store.
func Continuity(s continuity.Store) Target {
	return local{
		store: s,
		apply: func(ctx context.Context, op spec.Op) (any, error) { return continuity.Apply(ctx, s, op) },
		close: s.Close,
	}
}

// Client is the in-process Target of a Go client store.
func Client(s client.Store) Target {
	return local{
		store: s,
		apply: func(ctx context.Context, op spec.Op) (any, error) { return client.Apply(ctx, s, op) },
		close: s.Close,
	}
}

// Runtime is the in-process Target of a Go runtime store.
func Runtime(s runtime.Store) Target {
	return local{
		store: s,
		apply: func(ctx context.Context, op spec.Op) (any, error) { return runtime.Apply(ctx, s, op) },
		close: s.Close,
	}
}
