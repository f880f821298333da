// Package client is the reference client store: the contract of spec/client
// on SQLite, after onlyne's ClientStore and its SessionLedger. Unlike the
// seed, every operation (the session upsert and its binding included) is one
// transaction through the store's one writer, so two handles on one file, as
// two processes would have, keep every rule between them; and every time is
// kept as INTEGER Unix milliseconds, so the due order cannot depend on how a
// timestamp happens to be spelled.
package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	session_id        TEXT PRIMARY KEY,
	generation        INTEGER NOT NULL,
	seq               INTEGER NOT NULL,
	agent_state       TEXT NOT NULL,
	delivery_state    TEXT NOT NULL,
	resource_state    TEXT NOT NULL,
	recovery_substate TEXT NOT NULL,
	desired_json      TEXT NOT NULL,
	observed_json     TEXT NOT NULL,
	backend_ref       TEXT NOT NULL,
	mismatch_count    INTEGER NOT NULL,
	updated_at        INTEGER NOT NULL
);
-- bound_seq orders the openings of bindings across the whole table: the
-- latest opening of a task's binding is the one with the largest bound_seq.
CREATE TABLE IF NOT EXISTS session_tasks (
	session_id  TEXT NOT NULL,
	task_id     TEXT NOT NULL,
	bound_at    INTEGER NOT NULL,
	bound_seq   INTEGER NOT NULL,
	released_at INTEGER,
	PRIMARY KEY (session_id, task_id)
);
CREATE INDEX IF NOT EXISTS session_tasks_task_idx ON session_tasks(task_id, bound_seq);
CREATE INDEX IF NOT EXISTS session_tasks_open_idx ON session_tasks(session_id, released_at);
CREATE TABLE IF NOT EXISTS task (
	task_id     TEXT PRIMARY KEY,
	kind        TEXT NOT NULL,
	parent_task TEXT NOT NULL,
	hop         INTEGER NOT NULL,
	attempt     INTEGER NOT NULL,
	task_state  TEXT NOT NULL,
	opened_at   INTEGER NOT NULL,
	settled_at  INTEGER
);
CREATE INDEX IF NOT EXISTS task_open_idx ON task(settled_at, opened_at);
CREATE TABLE IF NOT EXISTS intents (
	op_id           TEXT PRIMARY KEY,
	env_json        TEXT NOT NULL,
	attempt         INTEGER NOT NULL,
	state           TEXT NOT NULL,
	next_attempt_at INTEGER NOT NULL,
	receipt_json    TEXT,
	last_error      TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
-- The due order over live intents only: a due scan walks it and stops at its
-- limit, however many rows the outbox holds (rowid is the index's last key).
CREATE INDEX IF NOT EXISTS intents_live_due_idx ON intents(next_attempt_at, created_at)
	WHERE state IN ('pending', 'retrying');
CREATE TABLE IF NOT EXISTS out_head_cache (task_id TEXT PRIMARY KEY, head TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS prose_cache (
	role      TEXT PRIMARY KEY,
	prose     TEXT NOT NULL,
	spec_hash TEXT NOT NULL,
	cached_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS config_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS faults (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	task_id       TEXT NOT NULL,
	session_id    TEXT NOT NULL,
	generation    INTEGER NOT NULL,
	seq           INTEGER NOT NULL,
	desired_json  TEXT NOT NULL,
	observed_json TEXT NOT NULL,
	intent        TEXT NOT NULL,
	attempt       INTEGER NOT NULL,
	backend_ref   TEXT NOT NULL,
	kind          TEXT NOT NULL,
	reason        TEXT NOT NULL,
	state         TEXT NOT NULL,
	created_at    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS faults_task_idx ON faults(task_id, id);
CREATE TABLE IF NOT EXISTS events (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	type       TEXT NOT NULL,
	data_json  TEXT NOT NULL,
	created_at INTEGER NOT NULL
);`

// CrashPoints are the places inside this store's write transactions where a
// crash would leave a half-done operation if the transaction were not
// atomic (see spec.CrashPoint), and after the commit of every write.
var CrashPoints = []string{
	"upsert_session/after_session_write",
	"upsert_session/after_close_others",
	"bind_task/after_close_others",
	"enqueue_intent/after_commit",
	"bump_intent/after_commit",
	"defer_intent/after_commit",
	"accept_intent/after_commit",
	"exhaust_intent/after_commit",
	"delete_intent/after_commit",
	"append_event/after_commit",
	"upsert_session/after_commit",
	"bump_session_version/after_commit",
	"bind_task/after_commit",
	"release_binding/after_commit",
	"open_task/after_commit",
	"settle_task/after_commit",
	"insert_fault/after_commit",
	"put_out_head/after_commit",
	"put_prose/after_commit",
	"put_config/after_commit",
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
}

// Store is the reference client store.
type Store struct {
	db    *sqlitedb.DB
	clock clockwork.Clock
	rules Rules
}

var _ cli.Store = (*Store)(nil)

// WithRules is s deciding by r: the same database (closing either closes
// it) and clock, other rules.
func (s *Store) WithRules(r Rules) *Store {
	v := *s
	v.rules = r.complete()
	return &v
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// ms is a time as the store keeps it; at reads one back.
func ms(t time.Time) int64 { return t.UnixMilli() }
func at(v int64) time.Time { return time.UnixMilli(v).UTC() }

// validJSON refuses a value the contract says must be JSON.
func validJSON(what string, v spec.RawJSON) error {
	if !json.Valid(v) {
		return spec.Errorf(cli.ErrInvalidArgument, "%s is not JSON: %q", what, string(v))
	}
	return nil
}

// changed runs a statement and says whether it changed a row.
func changed(ctx context.Context, tx *sqlitedb.Tx, query string, args ...any) (bool, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }
