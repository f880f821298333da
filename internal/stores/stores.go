// Package stores is where a store is registered: one Store value per
// store, holding everything storecheck knows of it, and the one list every
// command and every test reads.
//
// Why a package of its own, and why here. The registration names a store's
// contract (spec/<store>), its model and workload (linearizability), its
// reference and crash points (reference/<store>) and its deliberate bugs
// (internal/bugs): it sits above all of them, and none of them may import
// it back. adapters, the seam every backend passes through, takes the
// contracts it speaks as values (an InProcess backend's stores, an Exec
// backend's ExecOptions.Contracts) instead of keeping a list of its own; the
// suite, the checkers and the simulator take a backend. So the list lives
// above them, once, and package conformance (the check the command and go
// test run) hands its parts down. It is internal because it wires the kit's
// own reference and bugs: a backend author registers nothing here; they
// hand conformance a Harness or a program over the wire, and read what they
// need of a store (its contract, model, workload, events) from
// conformance.Stores.
//
// Adding a fourth store touches this file (one value in All) and the
// store's own packages: spec/<store> (its contract, its operations, its
// Proxy), its specs in spec/suite, its model and workload, reference/<store>
// and its bugs in internal/bugs.
package stores

import (
	"context"
	"math/rand/v2"
	"slices"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Store is everything storecheck knows of one store.
type Store struct {
	// Contract is the store's name, operations, error kinds and rules.
	Contract spec.Contract
	// Model states the contract as a sequential function: the oracle of
	// the linearizability check and of the simulator. A store without one
	// yet is checked by its specs only; its other layers report skipped.
	Model model.Model
	// Workload makes one run's operations, the store's races likely.
	Workload func() linearizability.Workload
	// Events are the coverage events of the model the default simulator
	// sweep must reach (the simulator adds its own: crashes, kills).
	Events []string
	// Unreachable are the cells of the store's coverage matrix
	// (spec.Contract.Cells, by "<operation>:<answer>") that the default
	// simulator sweep and the default linearizability run are not meant
	// to reach, each with the reason (io cells have one by default:
	// IOUnreachable). Every other cell they must reach.
	Unreachable map[string]string
	// Unexplorable, when set, are the rare events a backend's declared
	// choices put out of the simulator's reach, each with the reason, so
	// the report says why rather than calling them rare.
	Unexplorable func(spec.Capabilities) map[string]string
	// CrashPoints are the reference's crash points inside this store's
	// transactions (a program over the wire declares its own).
	CrashPoints []string
	// Reference opens the reference store as an in-process Target.
	Reference adapters.Opener
	// Bugs are the deliberately broken variants of the reference.
	Bugs []bugs.Bug
	// Rival makes an operation that contends with another, for the
	// simulator to try races where they matter (sim.Subject.Rival).
	Rival func(op spec.Op, r *rand.Rand) spec.Op
	// WriteSchema writes a file of the store that the reference reads as
	// carrying another schema marker or version (the client store's gate;
	// nil for a store without one).
	WriteSchema func(ctx context.Context, path, marker string, version int) error
}

// All are the registered stores, in report order.
var All = []Store{
	{
		Contract:    c.Contract,
		Model:       model.Continuity{},
		Workload:    linearizability.DefaultContinuityWorkload.New,
		Events:      append(slices.Clone(model.ContinuityEvents), model.ContinuitySizes...),
		Unreachable: linearizability.ContinuityUnreachable,
		Unexplorable: func(caps spec.Capabilities) map[string]string {
			if caps.SnapshotRevision != "opaque" {
				return nil
			}
			return map[string]string{model.EventSnapshotDeletedAtRevision: "the backend declares opaque snapshot revisions " +
				"(hello's snapshot_revision), which the kit cannot compute, so it cannot tell a delete at the current revision"}
		},
		CrashPoints: refcontinuity.CrashPoints,
		Reference:   refcontinuity.OpenTarget,
		Bugs:        bugs.Continuity,
		Rival:       linearizability.ContinuityRival,
	},
	{
		Contract:    r.Contract,
		Model:       model.Runtime{},
		Workload:    linearizability.DefaultRuntimeWorkload.New,
		Events:      append(slices.Clone(model.RuntimeEvents), model.RuntimeSizes...),
		Unreachable: linearizability.RuntimeUnreachable,
		CrashPoints: refruntime.CrashPoints,
		Reference:   refruntime.OpenTarget,
		Bugs:        bugs.Runtime,
		Rival:       linearizability.RuntimeRival,
	},
	{
		Contract:    cli.Contract,
		Model:       model.Client{},
		Workload:    linearizability.DefaultClientWorkload.New,
		Events:      append(slices.Clone(model.ClientEvents), model.ClientSizes...),
		Unreachable: linearizability.ClientUnreachable,
		CrashPoints: refclient.CrashPoints,
		Reference:   refclient.OpenTarget,
		Bugs:        bugs.Client,
		Rival:       linearizability.ClientRival,
		WriteSchema: refclient.WriteSchema,
	},
}

// Name is the store's name.
func (s Store) Name() string { return s.Contract.Name }

// Lookup finds a registered store by name.
func Lookup(name string) (Store, bool) {
	i := slices.IndexFunc(All, func(s Store) bool { return s.Name() == name })
	if i < 0 {
		return Store{}, false
	}
	return All[i], true
}

// Names are the registered stores' names, in report order.
func Names() []string {
	var out []string
	for _, s := range All {
		out = append(out, s.Name())
	}
	return out
}

// Contracts are the registered stores' contracts, in report order: what
// an Exec backend speaks and a saved file is read with.
func Contracts() []spec.Contract {
	var out []spec.Contract
	for _, s := range All {
		out = append(out, s.Contract)
	}
	return out
}

// Bugs are every registered store's deliberate bugs, store by store.
func Bugs() []bugs.Bug {
	var out []bugs.Bug
	for _, s := range All {
		out = append(out, s.Bugs...)
	}
	return out
}

// Options choose a variant of the reference backend, for storecheck's own
// tests and selftest.
type Options struct {
	// InMemory declares no files: every store is opened in memory.
	InMemory bool
	// Bug opens its store broken (the others stay correct).
	Bug bugs.Bug
	// Runtime, when set, opens the runtime store in place of the
	// reference's (a store done another way, for the kit's own tests:
	// bugs.SideFilesCorrect).
	Runtime func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error)
}

// Reference is the embedded reference as an adapters.Driver: every
// registered store, opened as an in-process Target by its Reference. It is
// what every command checks when no backend is named, what "storecheck
// serve" serves, and what the tests check: the suite through
// suite.HarnessOf, the checkers and the simulator through Open.
func Reference() adapters.Driver { return Backend(Options{}) }

// Backend is the reference backend as o asks.
func Backend(o Options) adapters.Driver {
	name := "reference"
	// Every read of the reference is one transaction (sqlitedb.DB.Read),
	// the reads the seeds run as several statements included: it declares
	// atomic_reads, and is held to one moment for each.
	caps := spec.Capabilities{Files: true, SharedFiles: true, SQLiteLocking: true, InMemory: true, ClientSchemaTable: true, ClientSchemaWriter: true, AtomicReads: true, ConcurrentRequests: true}
	if o.InMemory {
		name += " (in memory)"
		caps = spec.Capabilities{InMemory: true, AtomicReads: true, ConcurrentRequests: true}
	}
	if o.Bug.Name() != "" {
		name += " with bug " + o.Bug.Name()
	}
	var local []adapters.LocalStore
	points := map[string][]string{}
	for _, s := range All {
		open := s.Reference
		if o.Bug.Store() == s.Name() {
			open = o.Bug.Open
		}
		if o.Runtime != nil && s.Name() == "runtime" {
			open = o.Runtime
		}
		local = append(local, adapters.LocalStore{Contract: s.Contract, Open: open, WriteSchema: s.WriteSchema})
		points[s.Name()] = s.CrashPoints
	}
	hello := adapters.Hello{Name: name, Capabilities: adapters.Capabilities{Capabilities: caps, Yields: true, CrashPoints: points}}
	if own, ok := o.Bug.Declares(caps); ok {
		hello.Capabilities.Stores = adapters.StoreCapabilityMap{o.Bug.Store(): {Capabilities: own, Yields: true}}
	}
	return adapters.InProcess(hello, local...)
}
