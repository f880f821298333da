package main

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/runtime"
	"github.com/storecheck/storecheck/spec/suite"
)

// kit is what storecheck knows of one store: its contract, its model, the
// workload that makes its races likely, and how to open it as a Target from
// a harness. A store without a model yet is checked by its specs only, and
// its linearizability check is reported as skipped with that reason.
type kit struct {
	contract spec.Contract
	model    model.Model
	workload func() linearizability.Workload
	// crashPoints are the reference store's crash points (an exec backend
	// declares its own); rareEvents what the default sweep must reach.
	crashPoints []string
	rareEvents  []string
	// target opens the store of h at path as a Target; nil when h does not
	// implement the store.
	target func(h suite.Harness) func(ctx context.Context, o suite.Options) (adapters.Target, error)
}

// kits are the stores storecheck checks, in report order.
var kits = []kit{
	{
		contract:    continuity.Contract,
		model:       model.Continuity{},
		workload:    linearizability.DefaultContinuityWorkload.New,
		crashPoints: refcontinuity.CrashPoints,
		rareEvents:  append(slices.Clone(model.ContinuityEvents), sim.EventCrashInside, sim.EventAnswerLost, sim.EventKill),
		target: func(h suite.Harness) func(context.Context, suite.Options) (adapters.Target, error) {
			if h.Continuity == nil {
				return nil
			}
			return func(ctx context.Context, o suite.Options) (adapters.Target, error) {
				s, err := h.Continuity(ctx, o)
				if err != nil {
					return nil, err
				}
				return adapters.Continuity(s), nil
			}
		},
	},
	{
		contract:    runtime.Contract,
		crashPoints: refruntime.CrashPoints,
		model:       model.Runtime{},
		workload:    linearizability.DefaultRuntimeWorkload.New,
		rareEvents:  append(slices.Clone(model.RuntimeEvents), sim.EventCrashInside, sim.EventAnswerLost, sim.EventKill),
		target: func(h suite.Harness) func(context.Context, suite.Options) (adapters.Target, error) {
			if h.Runtime == nil {
				return nil
			}
			return func(ctx context.Context, o suite.Options) (adapters.Target, error) {
				s, err := h.Runtime(ctx, o)
				if err != nil {
					return nil, err
				}
				return adapters.Runtime(s), nil
			}
		},
	},
	{
		contract:    client.Contract,
		crashPoints: refclient.CrashPoints,
		model:       model.Client{},
		workload:    linearizability.DefaultClientWorkload.New,
		rareEvents:  append(slices.Clone(model.ClientEvents), sim.EventCrashInside, sim.EventAnswerLost, sim.EventKill),
		target: func(h suite.Harness) func(context.Context, suite.Options) (adapters.Target, error) {
			if h.Client == nil {
				return nil
			}
			return func(ctx context.Context, o suite.Options) (adapters.Target, error) {
				s, err := h.Client(ctx, o)
				if err != nil {
					return nil, err
				}
				return adapters.Client(s), nil
			}
		},
	},
}

// stores are the kits' names.
var stores = func() []string {
	var names []string
	for _, k := range kits {
		names = append(names, k.contract.Name)
	}
	return names
}()

func kitOf(store string) (kit, bool) {
	for _, k := range kits {
		if k.contract.Name == store {
			return k, true
		}
	}
	return kit{}, false
}

func contracts() []spec.Contract {
	var cs []spec.Contract
	for _, k := range kits {
		cs = append(cs, k.contract)
	}
	return cs
}

// opener opens every handle of a linearizability run on one database in dir
// (or in memory when the harness keeps no files: then one handle only).
func (k kit) opener(h suite.Harness, dir string) (linearizability.Opener, int) {
	open := k.target(h)
	if open == nil {
		return nil, 0
	}
	path, handles := "", 1
	if h.Capabilities.Files {
		path = filepath.Join(dir, k.contract.Name+".db")
		if h.Capabilities.SharedFiles {
			handles = 2
		}
	}
	return func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error) {
		return open(ctx, suite.Options{Path: path, Clock: clock})
	}, handles
}

// subject is the kit as the simulator needs it; crashPoints are the
// backend's (nil: the reference's).
func (k kit) subject(crashPoints []string) sim.Subject {
	if crashPoints == nil {
		crashPoints = k.crashPoints
	}
	return sim.Subject{Model: k.model, NewWorkload: k.workload, CrashPoints: crashPoints, RareEvents: k.rareEvents}
}
