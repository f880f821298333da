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

// local is a Target over a store in this process.
type local struct {
	apply func(ctx context.Context, op spec.Op) (any, error)
	close func() error
}

func (l local) Apply(ctx context.Context, op spec.Op) (any, error) { return l.apply(ctx, op) }
func (l local) Close() error                                       { return l.close() }

// Continuity is the in-process Target of a Go continuity store.
func Continuity(s continuity.Store) Target {
	return local{
		apply: func(ctx context.Context, op spec.Op) (any, error) { return continuity.Apply(ctx, s, op) },
		close: s.Close,
	}
}

// Client is the in-process Target of a Go client store.
func Client(s client.Store) Target {
	return local{
		apply: func(ctx context.Context, op spec.Op) (any, error) { return client.Apply(ctx, s, op) },
		close: s.Close,
	}
}

// Runtime is the in-process Target of a Go runtime store.
func Runtime(s runtime.Store) Target {
	return local{
		apply: func(ctx context.Context, op spec.Op) (any, error) { return runtime.Apply(ctx, s, op) },
		close: s.Close,
	}
}
