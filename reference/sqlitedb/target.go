package sqlitedb

import (
	"context"
	"sync"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
)

// Target is a store built on this package as an adapters.Target: apply is
// its contract's Apply. It is an adapters.Armer: after Arm, the next
// operation runs with ArmCrash's context, so that it crashes at the point
// as a process killed there would, without ending this process.
func Target[S interface{ Close() error }](s S, apply func(ctx context.Context, s S, op spec.Op) (any, error)) adapters.Target {
	return &target{Target: adapters.Local(s, apply), store: s}
}

type target struct {
	adapters.Target
	store any
	mu    sync.Mutex
	armed string
}

var _ adapters.Armer = (*target)(nil)

func (t *target) Arm(point string) error {
	t.mu.Lock()
	t.armed = point
	t.mu.Unlock()
	return nil
}

func (t *target) Apply(ctx context.Context, op spec.Op) (any, error) {
	t.mu.Lock()
	if t.armed != "" {
		ctx = ArmCrash(ctx, t.armed)
		t.armed = ""
	}
	t.mu.Unlock()
	return t.Target.Apply(ctx, op)
}

func (t *target) Crash() error { return adapters.Crash(t.store) }
