// Package runtime is the reference runtime store: the contract of
// spec/runtime on SQLite, after the lash sqlite store's RuntimePersistence.
// Every operation is one transaction through sqlitedb (BEGIN IMMEDIATE for
// writes), so its checks and writes cannot interleave with another writer's,
// from this process or another, and a failed operation leaves no trace.
package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

const schema = `
CREATE TABLE IF NOT EXISTS session_head (
	singleton              INTEGER PRIMARY KEY CHECK (singleton = 1),
	session_id             TEXT NOT NULL,
	head_revision          INTEGER NOT NULL,
	config                 BLOB,
	agent_frames           BLOB,
	current_agent_frame_id TEXT NOT NULL,
	checkpoint_ref         TEXT NOT NULL,
	leaf_node_id           TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
	checkpoint_ref TEXT PRIMARY KEY,
	data           BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS graph_nodes (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	node_id    TEXT NOT NULL UNIQUE,
	parent_id  TEXT NOT NULL,
	data       BLOB,
	tombstoned INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS usage_deltas (
	seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
	source              TEXT NOT NULL,
	model               TEXT NOT NULL,
	input_tokens        INTEGER NOT NULL,
	output_tokens       INTEGER NOT NULL,
	cached_input_tokens INTEGER NOT NULL,
	reasoning_tokens    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runtime_turn_commits (
	session_id       TEXT NOT NULL,
	turn_id          TEXT NOT NULL,
	turn_commit_hash TEXT NOT NULL,
	head_revision    INTEGER NOT NULL,
	checkpoint_ref   TEXT NOT NULL,
	committed_at_ms  INTEGER NOT NULL,
	PRIMARY KEY (session_id, turn_id)
);
CREATE TABLE IF NOT EXISTS session_execution_leases (
	session_id    TEXT PRIMARY KEY,
	owner_id      TEXT,
	lease_token   TEXT,
	fencing_token INTEGER NOT NULL,
	claimed_at_ms INTEGER NOT NULL,
	expires_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS queued_work_batches (
	enqueue_seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	batch_id            TEXT NOT NULL,
	session_id          TEXT NOT NULL,
	source_key          TEXT,
	delivery_policy     TEXT NOT NULL,
	slot_policy         TEXT NOT NULL,
	merge_key           TEXT NOT NULL,
	available_at_ms     INTEGER NOT NULL,
	enqueued_at_ms      INTEGER NOT NULL,
	claim_id            TEXT,
	claim_owner_id      TEXT,
	claim_token         TEXT,
	claim_fencing_token INTEGER NOT NULL DEFAULT 0,
	claim_claimed_at_ms INTEGER NOT NULL DEFAULT 0,
	claim_expires_at_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queued_work_batches_by_id ON queued_work_batches(batch_id);
CREATE UNIQUE INDEX IF NOT EXISTS queued_work_batches_by_source ON queued_work_batches(session_id, source_key)
	WHERE source_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS queued_work_items (
	batch_id   TEXT NOT NULL,
	item_index INTEGER NOT NULL,
	item_id    TEXT NOT NULL,
	payload    BLOB,
	PRIMARY KEY (batch_id, item_index)
);
CREATE TABLE IF NOT EXISTS session_meta (
	singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
	data      BLOB
);
CREATE TABLE IF NOT EXISTS attachments (
	attachment_id   TEXT PRIMARY KEY,
	session_id      TEXT NOT NULL,
	data            BLOB NOT NULL,
	committed_at_ms INTEGER
);`

// CrashPoints are the places inside this store's write transactions where a
// crash would leave a half-done operation if the transaction were not
// atomic (see spec.CrashPoint), and after every commit.
var CrashPoints = []string{
	"commit_runtime_state/after_graph",
	"commit_runtime_state/after_head",
	"commit_runtime_state/after_claims_delete",
	"commit_runtime_state/after_commit",
	"claim_ready_queued_work/after_batches_update",
	"claim_ready_queued_work/after_commit",
	"try_claim_session_execution_lease/after_commit",
	"renew_session_execution_lease/after_commit",
	"release_session_execution_lease/after_commit",
	"enqueue_queued_work/after_commit",
	"renew_queued_work_claim/after_commit",
	"abandon_queued_work_claim/after_commit",
	"cancel_queued_work_batch/after_commit",
	"tombstone_nodes/after_commit",
	"save_session_meta/after_commit",
	"stage_attachment/after_commit",
	"vacuum/after_commit",
	"gc_unreachable/after_commit",
}

// Options says how to open the store.
type Options struct {
	// Path is the database file; "" or ":memory:" is an in-memory store.
	Path string
	// BusyTimeout bounds the wait for another connection's lock (default 5s).
	BusyTimeout time.Duration
	// Clock is the store's only time source (default: the real clock).
	Clock clockwork.Clock
	// Rules are the decisions the store takes (Rules{}: the contract's).
	Rules Rules
	// Synchronous is SQLite's synchronous setting (sqlitedb.Options); ""
	// leaves SQLite's default, as the seeds do. Only deliberate bugs set it.
	Synchronous string
	// JournalMode is SQLite's journal_mode (sqlitedb.Options); "" is WAL.
	// The runtime seed does not show its connection setup, so a backend
	// may keep SQLite's default, DELETE: the kit's tests open it so.
	JournalMode string
}

// Store is the reference runtime store.
type Store struct {
	db    *sqlitedb.DB
	clock clockwork.Clock
	tier  r.DurabilityTier
	rules Rules
}

var _ r.Store = (*Store)(nil)

// Open opens (or creates) a store.
func Open(ctx context.Context, o Options) (*Store, error) {
	db, err := sqlitedb.Open(ctx, sqlitedb.Options{Path: o.Path, BusyTimeout: o.BusyTimeout, Synchronous: o.Synchronous, JournalMode: o.JournalMode, Schema: schema, IOKind: r.ErrIO})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, clock: o.Clock, tier: r.Durable, rules: o.Rules.complete()}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	if sqlitedb.InMemory(o.Path) {
		s.tier = r.Ephemeral
	}
	return s, nil
}

// WithRules is s deciding by rs: the same database (closing either closes
// it) and clock, other rules.
func (s *Store) WithRules(rs Rules) *Store {
	v := *s
	v.rules = rs.complete()
	return &v
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// now is the operation's one reading of the clock, in Unix milliseconds.
func (s *Store) now() int64 { return s.clock.Now().UnixMilli() }

// The ids this store mints where the seed's derivations are not shown (rule
// runtime.minted_ids): the contract leaves them to the store, and these are
// the reference's own choices.

// checkpointRef is the ref of a checkpoint: a content address, "sha256:" and
// the lowercase hex SHA-256 of the bytes, so equal bytes are one checkpoint.
func checkpointRef(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// batchID is the id of the store's seq-th enqueued batch (the enqueue
// sequence, never reused).
func batchID(session string, seq int64) string { return fmt.Sprintf("%s:batch:%d", session, seq) }

// claimID is the id of a claim whose first batch is first, at that batch's
// claim fencing token after the claim.
func claimID(session, first string, fence uint64) string {
	return fmt.Sprintf("%s:claim:%s:%d", session, first, fence)
}

// claimToken is the token of a claim made by owner at now.
func claimToken(claimID, owner string, now int64) string {
	return fmt.Sprintf("%s:%s:%d", claimID, owner, now)
}

// expiry is now + ttl, saturating.
func expiry(now int64, ttl uint64) int64 {
	if ttl > uint64(math.MaxInt64-now) {
		return math.MaxInt64
	}
	return now + int64(ttl)
}

// raw stores an opaque JSON value: empty is NULL.
func raw(v spec.RawJSON) any {
	if len(v) == 0 {
		return nil
	}
	return []byte(v)
}

// rawOut reads an opaque JSON value back: NULL or empty is nil.
func rawOut(b []byte) spec.RawJSON {
	if len(b) == 0 {
		return nil
	}
	return spec.RawJSON(b)
}

// bytesOut reads bytes back: never nil.
func bytesOut(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
