package spec

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// OpenOptions is what the kit asks of a backend when it opens a store: the
// suite, the checkers and the simulator alike, in process or over the wire.
type OpenOptions struct {
	// Path is the database file to open, created if missing. "" asks for an
	// in-memory store (only when Capabilities.InMemory is declared).
	Path string
	// Clock is the only time source a store may use. Specs move it by hand.
	Clock clockwork.Clock
	// Timeout, when set, is how long the open may wait for a lock another
	// connection holds: by then it gives up with an error and opens
	// nothing (the context's deadline, when earlier, bounds it too). Over
	// the wire it is the open request's timeout_ms. The caller may wait
	// longer for the answer: the locked-open spec does, and fails a store
	// that answers after Timeout plus LockedOpenSlack.
	Timeout time.Duration
}

// LockedOpenSlack is how long past OpenOptions.Timeout the locked-open
// spec lets a store take to answer that it gave up (a process's
// scheduling, a busy handler's last sleep); an answer later than that fails
// the spec.
const LockedOpenSlack = 2 * time.Second

// Capabilities are a backend's optional features. The kit checks nothing a
// backend does not declare, and guesses nothing: a spec that needs one the
// backend lacks is skipped with that reason. Over the wire they are the
// hello's capabilities, every one optional there: one left out is not
// declared.
type Capabilities struct {
	// Files: the store persists to OpenOptions.Path, and a store closed and
	// opened again on the same path finds everything it acknowledged.
	Files bool `json:"files,omitempty"`
	// SharedFiles: two stores may be open on one path at once (as two
	// processes would be) and every rule holds across them.
	SharedFiles bool `json:"shared_files,omitempty"`
	// InMemory: an empty OpenOptions.Path opens a private in-memory store.
	InMemory bool `json:"in_memory,omitempty"`
	// SQLiteLocking: OpenOptions.Path is a SQLite database that the kit may
	// lock from its own connection, to check that opening waits for the lock
	// and gives up by OpenOptions.Timeout (timeout_ms).
	SQLiteLocking bool `json:"sqlite_locking,omitempty"`
	// ClientSchemaTable: the client store's OpenOptions.Path is a SQLite
	// database that keeps its schema marker as spec/client lays it out, so
	// the kit may write files of another marker or version to check the
	// schema gate at open.
	ClientSchemaTable bool `json:"client_schema_table,omitempty"`
	// ClientSchemaWriter: the backend writes a client store file of another
	// schema marker or version itself when asked (the wire request
	// write_foreign_schema; in Go, suite.Harness.WriteClientSchema), in
	// whatever layout it keeps its marker, so that the kit can check the
	// schema gate at open of any backend.
	ClientSchemaWriter bool `json:"client_schema_writer,omitempty"`
	// SnapshotRevision is how the continuity store computes the revision
	// delete_session_snapshot_if_current_revision compares (the seed leaves
	// it to meerkat's session_projection_cas_token): "" or "sha256" for the
	// lowercase hex SHA-256 of the stored bytes (continuity.SnapshotRevision),
	// "opaque" for a revision the kit cannot compute.
	SnapshotRevision string `json:"snapshot_revision,omitempty"`
	// Durability is what the backend's acknowledged writes survive, for
	// the stores whose seed does not say (Contract.DurabilityDeclared):
	// "" or DurabilityPowerLoss (a power cut: the default) or
	// DurabilityProcessCrash (a process crash only; no power is cut).
	Durability string `json:"durability,omitempty"`
	// AtomicReads: every read operation reads one moment of the store (one
	// transaction), including the reads a seed runs as several statements
	// outside any transaction (runtime load_session and the queue lists,
	// continuity resolve_many, client task_is_known): the checkers then
	// judge each such read as one step, not statement by statement.
	AtomicReads bool `json:"atomic_reads,omitempty"`
	// ConcurrentRequests: one process of the backend (one handle, in
	// process) serves several operations at once, from several callers,
	// each reaching its own yield points while the others wait at theirs,
	// as the seeds' stores serve their callers (one process, a writer
	// lock, concurrent callers). The simulator then keeps several
	// operations in flight on one process, so races between two callers
	// of one process are explored (for a store without SharedFiles, which
	// runs as one process).
	ConcurrentRequests bool `json:"concurrent_requests,omitempty"`
}
