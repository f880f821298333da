package main

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// The stores storecheck checks are the registration's (internal/stores):
// every command reads them from there.

// storeNames are the registered stores' names, in report order.
var storeNames = stores.Names()

// opener opens every handle of a linearizability run of store s on one
// database in dir, through backend b (in memory when b keeps no files: then
// one handle only); nil when b does not implement the store. A program over
// the wire gets a process of its own for every handle after the first, so
// that races between processes are real whatever the backend's own
// concurrency; closing the handle ends its process.
func opener(b adapters.Backend, s stores.Store, dir string) (linearizability.Opener, int) {
	info := b.Info()
	if !slices.Contains(info.Stores, s.Name()) {
		return nil, 0
	}
	path, handles := "", 1
	if info.Capabilities.Files {
		path = filepath.Join(dir, s.Name()+".db")
		if info.Capabilities.SharedFiles {
			handles = 2
		}
	}
	var mu sync.Mutex
	opened := 0
	return func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error) {
		o := spec.OpenOptions{Path: path, Clock: clock}
		mu.Lock()
		opened++
		first := opened == 1
		mu.Unlock()
		sib, ok := siblings(b)
		if first || !ok {
			return b.Open(ctx, s.Name(), o)
		}
		e, err := sib.Sibling(ctx)
		if err != nil {
			return nil, err
		}
		t, err := e.Open(ctx, s.Name(), o)
		if err != nil {
			e.Close()
			return nil, err
		}
		return ownProcess{t, e}, nil
	}, handles
}

// ownProcess is a handle with a backend process of its own, which ends
// with it.
type ownProcess struct {
	adapters.Target
	e *adapters.Exec
}

func (t ownProcess) Close() error { return errors.Join(t.Target.Close(), t.e.Close()) }

// rareEvents are what the default sweep of store s must reach: its model's
// events and the simulator's own.
func rareEvents(s stores.Store) []string {
	return append(slices.Clone(s.Events), sim.EventCrashInside, sim.EventAnswerLost, sim.EventKill, sim.EventPowerCut)
}

// subject is store s as the simulator needs it (the crash points are the
// backend's own: sim.Backend.CrashPoints).
func subject(s stores.Store) sim.Subject {
	return sim.Subject{Model: s.Model, NewWorkload: s.Workload, RareEvents: rareEvents(s), Rival: s.Rival}
}

// subjectFor is store s as the simulator needs it for a backend that
// declared caps: its model configured by the choices it declares.
func subjectFor(s stores.Store, caps spec.Capabilities) sim.Subject {
	subj := subject(s)
	subj.Model, subj.Capabilities = model.For(s.Model, caps), caps
	return subj
}
