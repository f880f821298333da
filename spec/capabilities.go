package spec

import (
	"fmt"
	"strings"
)

// CapabilityInfo is one capability a backend may declare in its hello: its
// wire name, what it promises, and what the kit does with it and without
// it. CapabilityTable is the one list: docs/protocol.md is generated from
// it, and the suite's skip messages name capabilities through it.
type CapabilityInfo struct {
	// Name is the capability's member in the hello's capabilities.
	Name string
	// Value is the JSON the member takes.
	Value string
	// Means is what a backend that declares it promises.
	Means string
	// With is what the kit checks because of it.
	With string
	// Without is what the kit skips (or explores less) without it; never a
	// refusal to run.
	Without string
}

// What a simulator sweep's "not explored" says a capability's absence left
// out: the sweep's notes (conformance, sim) and the table below share them,
// so the page quotes the report word for word.
const (
	// NoteOneProcess is shared_files's: what is not checked.
	NoteOneProcess = "two processes on one file"
	// NoteRacesInsideProcess is the note of a run on one process with one
	// operation in flight at a time.
	NoteRacesInsideProcess = "races inside the process were not explored"
)

// Capability names, as the hello spells them.
const (
	CapFiles              = "files"
	CapSharedFiles        = "shared_files"
	CapInMemory           = "in_memory"
	CapSQLiteLocking      = "sqlite_locking"
	CapClientSchemaTable  = "client_schema_table"
	CapClientSchemaWriter = "client_schema_writer"
	CapSnapshotRevision   = "snapshot_revision"
	CapDurability         = "durability"
	CapAtomicReads        = "atomic_reads"
	CapConcurrent         = "concurrent_requests"
	CapYields             = "yields"
	CapCrashPoints        = "crash_points"
	CapStores             = "stores"
)

// CapabilityTable lists every capability of the hello (Capabilities, and
// the wire's own yields and crash_points), in the order the page shows.
var CapabilityTable = []CapabilityInfo{
	{Name: CapFiles, Value: "bool",
		Means:   "a store persists to the open request's `path`, and a store closed and opened again on the same path finds everything it acknowledged",
		With:    "specs open stores on files; the reopen specs (survival across close and open) run; a linearizability run uses a file",
		Without: "specs open in-memory stores (`in_memory` is then needed, or nothing can be opened); the reopen specs are skipped; a linearizability run has one in-memory handle"},
	{Name: CapSharedFiles, Value: "bool",
		Means:   "two handles may be open on one path at once (as two processes would be) and every rule holds across them",
		With:    "the two-handle specs; a linearizability run opens two handles (two backend processes) on one file; the simulator spreads its clients over two processes on one file",
		Without: "the two-handle specs are skipped; a linearizability run has one handle; the simulator runs one process, and its report says \"" + NoteOneProcess + " is not checked\". On that process, with `concurrent_requests`, up to two of its clients' operations are in flight at once, moving one at a time from yield point to yield point; without it, one operation at a time, and the report says \"" + NoteRacesInsideProcess + "\""},
	{Name: CapInMemory, Value: "bool",
		Means:   "an open request with `\"in_memory\": true` (and no path) opens a private in-memory database",
		With:    "used only when `files` is not declared",
		Without: "with `files` declared, nothing; with neither, no store can be opened and every spec fails"},
	{Name: CapSQLiteLocking, Value: "bool",
		Means:   "`path` is a SQLite database the kit may lock from its own connection",
		With:    "the locked-open spec: `open` waits for the lock no longer than `timeout_ms`",
		Without: "the locked-open spec is skipped"},
	{Name: CapClientSchemaTable, Value: "bool",
		Means:   "the client store's `path` is a SQLite database that keeps its schema marker as spec/client lays it out: a table `schema_meta(marker TEXT NOT NULL, version INTEGER NOT NULL)` of one row, so the kit may write files of another marker or version itself",
		With:    "the schema-gate specs with files the kit writes, the unmarked-file spec, and the check of the marker a new file gets",
		Without: "the unmarked-file spec is skipped; the schema-gate specs run only if `client_schema_writer` is declared"},
	{Name: CapClientSchemaWriter, Value: "bool",
		Means:   "the backend answers `write_foreign_schema`: it writes, at `path`, a new client store file that its own `open` reads as carrying `marker` at `version`, in whatever layout it keeps its marker",
		With:    "the schema-gate specs with files the backend writes, and the spec that opens a file it wrote with its own marker",
		Without: "those specs are skipped; the schema-gate specs run only if `client_schema_table` is declared (with neither, they are skipped)"},
	{Name: CapSnapshotRevision, Value: "string: `\"sha256\"` or `\"opaque\"`",
		Means:   "how the continuity store computes the revision `delete_session_snapshot_if_current_revision` compares: `\"sha256\"` (the default, when absent): the lowercase hex SHA-256 of the stored bytes; `\"opaque\"`: the backend's own, which the kit cannot compute",
		With:    "`\"sha256\"`: the delete-at-revision spec; the linearizability model and the simulator compute revisions",
		Without: "`\"opaque\"`: the delete-at-revision spec is skipped, the other-revision spec presents only revisions no backend computes, and the models accept false, `io`, or true with the snapshot deleted for any revision"},
	{Name: CapDurability, Value: "string: `\"power_loss\"` or `\"process_crash\"`",
		Means:   "what the store's acknowledged writes survive: `\"power_loss\"` (the default, when absent): a power cut, which keeps only what was synced (fsync, fdatasync), as SQLite's default `synchronous=FULL` gives; `\"process_crash\"`: the backend process's crash only (SQLite's WAL with `synchronous=NORMAL`, say). It counts for the runtime and client stores, whose seeds do not show whether a commit is synced before it is acknowledged; the continuity seed shows its store keeping SQLite's default, so a continuity store is held to power loss whatever is declared",
		With:    "`\"power_loss\"`: the simulator cuts the power of the files the runs keep their databases in (a forgetful FUSE file system: a power cut loses every write not synced), and the power-loss specs run",
		Without: "`\"process_crash\"`: for runtime and client the simulator cuts no power and the power-loss specs are skipped; the report says power loss was not explored, and why"},
	{Name: CapAtomicReads, Value: "bool",
		Means:   "every read operation reads one moment of the store (one transaction), including the reads the seeds run as several statements outside any transaction: runtime `load_session`, `list_queued_work` and `list_pending_queued_work`, continuity `resolve_many`, client `task_is_known`",
		With:    "the linearizability check and the simulator hold each of those reads to one moment: its whole answer is one state of the store",
		Without: "as the seeds read: each statement of those reads takes effect at its own moment of the call, each at or after the one before (rules `runtime.load_session.statements`, `runtime.list_queued_work.statements`, `continuity.resolve_many.one_read_per_identity`, `client.task_is_known.two_statements`), so a read may show a write that landed between two of its statements"},
	{Name: CapConcurrent, Value: "bool",
		Means:   "one process of the backend serves several `op` requests on one handle at once (each on a thread of its own, say), each pausing at its own yield points while the others go on: a paused request holds back no other",
		With:    "for a store simulated as one process (one without `shared_files`, or any under `--processes 1`), the simulator keeps up to two operations in flight on it, from two of its clients, and moves exactly one of them at a time from yield point to yield point, so a race between two callers of one process (a check in one transaction, its write in a second) is reproduced from one seed, shrunk and replayed; the interleaving's columns are those callers (`p0.c3`: process 0, client 3). A store with `shared_files` is simulated as two processes (the default `--processes 2`) with one operation in flight on each, as without it: races between the processes are explored, two callers of one process do not overlap",
		Without: "the simulator keeps one operation in flight per process: races between processes are explored where the store has two (`shared_files`); a store simulated as one process runs one operation at a time, and its report says \"" + NoteRacesInsideProcess + "\""},
	{Name: CapYields, Value: "bool",
		Means:   "an `op` request with `\"yields\": true` pauses at each of the operation's yield points until the kit resumes it (see Yield points)",
		With:    "the simulator interleaves operations at their yield points and kills processes there",
		Without: "the simulator interleaves operations whole, and its report says interleavings inside operations were not explored"},
	{Name: CapCrashPoints, Value: "object: store name to a list of crash point names",
		Means:   "per store, the crash points `arm_crash` accepts",
		With:    "the simulator arms them to crash processes inside operations' transactions",
		Without: "the simulator runs anyway and kills processes between operations (and at yield points) only; its report says crashes inside operations were not explored"},
	{Name: CapStores, Value: "object: store name to an object of the capabilities above but `crash_points` and `stores`",
		Means:   "a store named here has exactly these capabilities, in place of the backend-wide ones (absent is not declared, as there); a store not named has the backend-wide ones. Each store is checked by its own: one program may hold a store that is safe across processes and one designed for a single process",
		With:    "every layer reads the store's own: its specs, its linearizability run (handles, files) and its simulation (processes, yields)",
		Without: "every store has the backend-wide capabilities"},
}

// CapabilityNamed is the row of CapabilityTable named name.
func CapabilityNamed(name string) (CapabilityInfo, bool) {
	for _, c := range CapabilityTable {
		if c.Name == name {
			return c, true
		}
	}
	return CapabilityInfo{}, false
}

// MissingCapability is why something is not checked: the backend does not
// declare capability name (a name of CapabilityTable; an unknown one
// panics, so a skip message can never name a capability the page lacks).
// name may carry the value wanted after a space (`snapshot_revision
// "sha256"`). what says what is not checked.
func MissingCapability(name, what string) string {
	if _, ok := CapabilityNamed(strings.SplitN(name, " ", 2)[0]); !ok {
		panic(fmt.Sprintf("spec: no capability %q in CapabilityTable", name))
	}
	return "backend does not declare capability " + name + ": " + what + " is not checked"
}
