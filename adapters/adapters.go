// Package adapters is the one seam between the kit and a backend. A Target
// is one open store that applies operation values; the suite, the checkers
// and the simulator drive every backend through it, whether the store is a Go
// value in this process or a program at the other end of a pipe.
package adapters

import (
	"context"
	"fmt"
	"sync"

	"github.com/storecheck/storecheck/spec"
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

// Armer is a Target that can arm a crash point in process: the next
// operation it applies crashes at point, ending as a process killed there
// would (its transaction uncommitted, or, at an "/after_commit" point, its
// answer lost): with a spec.ErrCrashed error. The simulator arms the
// in-process backends it crashes through it; over the wire, arm_crash does
// the same to a real process.
type Armer interface {
	Arm(point string) error
}

// Arm arms point on t when t is an Armer, else it says t cannot. A Target
// that wraps another forwards Arm with it, as it forwards Crash with Crash.
func Arm(t any, point string) error {
	if a, ok := t.(Armer); ok {
		return a.Arm(point)
	}
	return fmt.Errorf("the in-process target (%T) cannot arm crash point %s: it is no adapters.Armer", t, point)
}

// local is a Target over a store in this process.
type local[S interface{ Close() error }] struct {
	store S
	apply func(ctx context.Context, s S, op spec.Op) (any, error)
	mu    sync.Mutex
	armed string
	// points are the crash points the backend declares for the store,
	// when it runs under one (declares): reaching another fails.
	points   []string
	declares bool
}

func (l *local[S]) Apply(ctx context.Context, op spec.Op) (any, error) {
	l.mu.Lock()
	point := l.armed
	l.armed = ""
	l.mu.Unlock()
	// The store's hooks may name only the place: the operation is this one.
	ctx = spec.WithOperation(ctx, op.Name())
	if l.declares {
		ctx = spec.DeclareCrashPoints(ctx, l.points)
	}
	if point != "" {
		var release func()
		ctx, release = spec.ArmCrash(ctx, point)
		defer release()
	}
	return l.apply(ctx, l.store, op)
}

func (l *local[S]) Close() error { return l.store.Close() }

// declare holds the store to the crash points its backend declares.
func (l *local[S]) declare(points []string) {
	l.points, l.declares = points, true
}
func (l *local[S]) Crash() error { return Crash(l.store) }

// Arm makes the next operation crash at point: it runs with a context armed
// there (spec.ArmCrash), so that when the store reaches the point
// (spec.CrashPoint) it ends as a process killed there would.
func (l *local[S]) Arm(point string) error {
	l.mu.Lock()
	l.armed = point
	l.mu.Unlock()
	return nil
}

// Local is the in-process Target of a Go store s: apply is its contract's
// Apply (continuity.Apply, ...), which calls the store's method of each
// operation value. Crash is the store's when it has one. It is an Armer: a
// store that reaches its crash points through spec.CrashPoint can be
// crashed at them in this process.
func Local[S interface{ Close() error }](s S, apply func(ctx context.Context, s S, op spec.Op) (any, error)) Target {
	return &local[S]{store: s, apply: apply}
}
