package suite

import (
	"context"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Harness is what a backend author writes to run the suite: functions that
// open a fresh store of each contract the backend implements, and the
// optional capabilities it declares. A nil opener means the backend does not
// implement that store: its specs are skipped with that reason. A spec that
// needs a capability the harness does not declare is skipped, never guessed.
//
// The same harness runs every layer of the kit on the store, in this
// process: conformance.Test runs the specs, the linearizability check and
// the simulator from go test, and conformance.Serve serves the store over
// the wire protocol. The simulator pauses an operation at the yield points
// the store reaches (spec.Yield: before each transaction, after each
// commit) and crashes it at the crash points it declares in CrashPoints and
// reaches (spec.CrashPoint: between the writes of a transaction, after the
// commit). Both are calls a store makes from its own transaction helper;
// they do nothing when no check is running.
type Harness struct {
	// Name names the backend in reports.
	Name string
	// Capabilities are the optional features the backend has.
	Capabilities spec.Capabilities
	// StoreCapabilities, when a store is named there, are that store's own
	// capabilities, in place of Capabilities: its specs are checked by them
	// (a backend whose stores differ, as the seeds do: one safe across
	// processes, one designed for a single process).
	StoreCapabilities map[string]spec.Capabilities
	// CrashPoints are, by store name ("continuity"), the crash points the
	// store reaches through spec.CrashPoint, each named
	// "<operation>/<place>" after the operation it is in: the points the
	// simulator may crash it at (over the wire: the hello's crash_points). A store with
	// none declared is killed between and at its yield points only, and the
	// report says crashes inside its operations were not explored. The
	// suite itself crashes nothing.
	CrashPoints map[string][]string
	// Continuity opens a continuity store.
	Continuity func(ctx context.Context, o spec.OpenOptions) (c.Store, error)
	// Client opens a client store.
	Client func(ctx context.Context, o spec.OpenOptions) (cli.Store, error)
	// Runtime opens a runtime store.
	Runtime func(ctx context.Context, o spec.OpenOptions) (r.Store, error)
	// WriteClientSchema, when set, writes at path a client store file that
	// the backend's own open reads as carrying marker at version, in
	// whatever layout the backend keeps its marker (over the wire: the
	// capability client_schema_writer and the request write_foreign_schema).
	// The kit then opens the file to check the schema gate. Nil when the
	// backend cannot; then the gate's specs use ClientSchemaTable, or are
	// skipped.
	WriteClientSchema func(path, marker string, version int) error
	// OwnProcess, when set, starts a process of the backend's own for a
	// spec that cuts the power, so that what the cut does to it (a SIGBUS
	// on its mapped -shm, an exit after EIO at close) ends that process and
	// not the one every other spec runs on: it answers a harness whose
	// stores open in the new process, doom, which the spec calls just
	// before it cuts (from then on the process's end is the cut's, not a
	// backend failure), and end, which ends the process after the cut.
	// Over the wire conformance sets it; nil in process, where a Go store's
	// handles share the kit's own process.
	OwnProcess func(ctx context.Context) (h Harness, doom func(), end func() error, err error)
}

// forStore is h as store's specs see it: with the store's own capabilities
// when it has them.
func (h Harness) forStore(store string) Harness {
	if c, ok := h.StoreCapabilities[store]; ok {
		h.Capabilities = c
	}
	return h
}
