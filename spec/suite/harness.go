package suite

import (
	"context"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	cont "github.com/storecheck/storecheck/spec/continuity"
	rt "github.com/storecheck/storecheck/spec/runtime"
)

// Harness is what a backend author writes to run the suite: functions that
// open a fresh store of each contract the backend implements, and the
// optional capabilities it declares. A nil opener means the backend does not
// implement that store: its specs are skipped with that reason. A spec that
// needs a capability the harness does not declare is skipped, never guessed.
type Harness struct {
	// Name names the backend in reports.
	Name string
	// Capabilities are the optional features the backend has.
	Capabilities Capabilities
	// StoreCapabilities, when a store is named there, are that store's own
	// capabilities, in place of Capabilities: its specs are checked by them
	// (a backend whose stores differ, as the seeds do: one safe across
	// processes, one designed for a single process).
	StoreCapabilities map[string]Capabilities
	// Continuity opens a continuity store.
	Continuity func(ctx context.Context, o Options) (cont.Store, error)
	// Client opens a client store.
	Client func(ctx context.Context, o Options) (cli.Store, error)
	// Runtime opens a runtime store.
	Runtime func(ctx context.Context, o Options) (rt.Store, error)
	// WriteClientSchema, when set, writes at path a client store file that
	// the backend's own open reads as carrying marker at version, in
	// whatever layout the backend keeps its marker (over the wire: the
	// capability client_schema_writer and the request write_foreign_schema).
	// The kit then opens the file to check the schema gate. Nil when the
	// backend cannot; then the gate's specs use ClientSchemaTable, or are
	// skipped.
	WriteClientSchema func(path, marker string, version int) error
}

// Options is what the suite asks of an opener (spec.OpenOptions: the kit
// asks every backend the same).
type Options = spec.OpenOptions

// Capabilities are a backend's optional features (spec.Capabilities).
type Capabilities = spec.Capabilities

// forStore is h as store's specs see it: with the store's own capabilities
// when it has them.
func (h Harness) forStore(store string) Harness {
	if c, ok := h.StoreCapabilities[store]; ok {
		h.Capabilities = c
	}
	return h
}
