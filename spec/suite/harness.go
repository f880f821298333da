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
//
// What the specs and the simulator require of a store, every one (a test,
// TestHarnessDocNamesEveryRequirement, holds this list to what the code of
// this package reads):
//
//   - Opening: an opener gets a spec.OpenOptions and the context of the
//     spec. On a fresh Path it opens an empty store. Path is "" only for a
//     harness that declares InMemory and not Files (one that declares
//     neither fails every spec: nothing can be opened). Clock is the only
//     time source the store may read; the specs move it by hand, from
//     Epoch.
//   - Close: every spec closes the store it opened and fails when Close
//     errs; a spec may close a store early and open another on the path.
//   - Refusals: an operation the contract refuses answers an error of the
//     contract's kind (spec.Errorf, conformance.Errorf: the kit reads
//     spec.KindOf) and changes nothing a later read can observe.
//   - Files: a store closed and opened again on its path finds everything
//     it acknowledged (the reopen specs need it, else they are skipped).
//   - SharedFiles: two stores open on one path at once (as two processes
//     would be) keep every rule across them.
//   - SQLiteLocking: Path is a SQLite database the kit may lock. The
//     locked-open spec creates it in WAL mode and holds its write lock
//     (BEGIN IMMEDIATE) from a connection of its own while the store opens
//     with Timeout LockedOpenTimeout: the open must wait for the lock (not
//     give up before Timeout less 50 ms), must fail while the lock is held
//     (an open that succeeds fails the spec, even within the time), and must
//     answer before Timeout plus spec.LockedOpenSlack; once the lock is
//     released an open on the same path succeeds and the store works.
//   - ClientSchemaTable, WriteClientSchema (ClientSchemaWriter over the
//     wire, which sets it; a Go harness sets the function, not the
//     capability): the client store's schema gate
//     refuses a file of another marker or version with schema_mismatch and
//     leaves every file at the path byte for byte as it was; the file the
//     store's own open writes carries its marker and version (as
//     spec/client lays it out, read back by the kit, under
//     ClientSchemaTable); a file WriteClientSchema writes with the store's
//     own marker and version opens. With neither, the gate's specs are
//     skipped.
//   - SnapshotRevision: "" or "sha256" promises the continuity revision is
//     the lowercase hex SHA-256 of the stored bytes (the kit computes it);
//     "opaque" skips the delete-at-the-current-revision spec, and a revision
//     the store cannot read may answer io.
//   - Durability and power loss: a store with Files that is not declared
//     spec.DurabilityProcessCrash (where its seed allows it) keeps what it
//     acknowledged through a power cut that loses every write never synced:
//     the spec opens it on a FUSE mount (fault/lossyfs) and calls Close while
//     the power is off, where it may fail. OwnProcess, when set, is where
//     such a store opens, so that the cut ends a process of its own.
//   - Crash(): a store handle may have a method Crash() error, which the
//     simulator's in-process crash calls in place of Close (spec.CrashTarget):
//     it drops the handle as a killed process would, writing nothing it has
//     not written yet. Without it Close is called.
//   - Yield and crash points: a store calls spec.Yield (conformance.Yield)
//     with the context of the operation before each transaction, after each
//     commit and before each statement it runs outside a transaction, while
//     it holds no lock; and spec.CrashPoint between two writes of a
//     transaction and after its commit, a point it reaches only if CrashPoints
//     declares it (an undeclared point fails the operation, naming it).
//     An error from either must end the operation at once, committing
//     nothing more; with a transaction begun on the operation's context, a
//     crash leaves it uncommitted.
//   - ConcurrentRequests: one handle serves several operations at once, each
//     waiting at its own yield points while the others move, so it must
//     hold no lock of its own at a yield point. AtomicReads: every read
//     reads one moment of the store (one transaction).
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
