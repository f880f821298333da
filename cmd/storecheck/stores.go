package main

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// The stores storecheck checks are the registration's (internal/stores):
// every command reads them from there.

// storeNames are the registered stores' names, in report order.
var storeNames = stores.Names()

// opener opens every handle of a linearizability run of store s on one
// database in dir, through backend b (in memory when b keeps no files: then
// one handle only); nil when b does not implement the store.
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
	return func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error) {
		return b.Open(ctx, s.Name(), spec.OpenOptions{Path: path, Clock: clock})
	}, handles
}

// rareEvents are what the default sweep of store s must reach: its model's
// events and the simulator's own.
func rareEvents(s stores.Store) []string {
	return append(slices.Clone(s.Events), sim.EventCrashInside, sim.EventAnswerLost, sim.EventKill)
}

// subject is store s as the simulator needs it; crashPoints are the
// backend's (nil: the reference's).
func subject(s stores.Store, crashPoints []string) sim.Subject {
	if crashPoints == nil {
		crashPoints = s.CrashPoints
	}
	return sim.Subject{Model: s.Model, NewWorkload: s.Workload, CrashPoints: crashPoints, RareEvents: rareEvents(s)}
}
