package suite

import (
	"context"

	"github.com/jonboulle/clockwork"

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
	// Continuity opens a continuity store.
	Continuity func(ctx context.Context, o Options) (cont.Store, error)
	// Client opens a client store.
	Client func(ctx context.Context, o Options) (cli.Store, error)
	// Runtime opens a runtime store.
	Runtime func(ctx context.Context, o Options) (rt.Store, error)
}

// Options is what the suite asks of an opener.
type Options struct {
	// Path is the database file to open, created if missing. "" asks for an
	// in-memory store (only when Capabilities.InMemory is declared).
	Path string
	// Clock is the only time source a store may use. Specs move it by hand.
	Clock clockwork.Clock
}

// Capabilities are a backend's optional features.
type Capabilities struct {
	// Files: the store persists to Options.Path, and a store closed and
	// opened again on the same path finds everything it acknowledged.
	Files bool
	// SharedFiles: two stores may be open on one path at once (as two
	// processes would be) and every rule holds across them.
	SharedFiles bool
	// InMemory: an empty Options.Path opens a private in-memory store.
	InMemory bool
	// SQLiteLocking: Options.Path is a SQLite database that the kit may lock
	// from its own connection, to check that opening waits for the lock no
	// longer than the caller's context allows.
	SQLiteLocking bool
	// ClientSchemaTable: the client store's Options.Path is a SQLite
	// database that keeps its schema marker as spec/client lays it out, so
	// the kit may write files of another marker or version to check the
	// schema gate at open.
	ClientSchemaTable bool
	// SnapshotRevision is how the continuity store computes the revision
	// delete_session_snapshot_if_current_revision compares (the seed leaves
	// it to meerkat's session_projection_cas_token): "" or "sha256" for the
	// lowercase hex SHA-256 of the stored bytes (continuity.SnapshotRevision),
	// "opaque" for a revision the kit cannot compute.
	SnapshotRevision string
}
