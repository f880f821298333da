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
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/client"
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

var _ c.Store = (*Store)(nil)

// Open opens (or creates) a store. A file of another marker or version is
// refused with schema_mismatch before anything is written to it: the marker
// is read first over a read-only connection, and read again in the
// transaction that writes the schema.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	s := &Store{clock: o.Clock, rules: o.Rules.complete()}
	if !sqlitedb.InMemory(o.Path) {
		if err := s.precheck(ctx, o); err != nil {
			return nil, err
		}
	}
	db, err := sqlitedb.Open(ctx, sqlitedb.Options{Path: o.Path, BusyTimeout: o.BusyTimeout, Synchronous: o.Synchronous, IOKind: c.ErrIO})
	if err != nil {
		return nil, err
	}
	err = db.Write(ctx, fmt.Sprintf("open %q: schema", o.Path), func(tx *sql.Tx) error {
		fresh, err := s.checkSchema(ctx, tx, o.Path)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		if fresh {
			if _, err := tx.ExecContext(ctx, c.SchemaMetaDDL); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_meta(marker, version) VALUES (?, ?)`, c.SchemaMarker, c.SchemaVersion)
			return err
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	s.db = db
	return s, nil
}

// precheck reads the marker of an existing file without writing to it.
func (s *Store) precheck(ctx context.Context, o Options) error {
	if _, err := os.Stat(o.Path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	busy := o.BusyTimeout
	if busy <= 0 {
		busy = sqlitedb.DefaultBusyTimeout
	}
	ro, err := sql.Open("sqlite", fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)", o.Path, busy.Milliseconds()))
	if err != nil {
		return spec.Errorf(c.ErrIO, "open %q: %w", o.Path, err)
	}
	defer ro.Close()
	tx, err := ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return spec.Errorf(c.ErrIO, "open %q: read the schema marker: %w", o.Path, err)
	}
	defer tx.Rollback()
	if _, err := s.checkSchema(ctx, tx, o.Path); err != nil {
		var ke *spec.Error
		if errors.As(err, &ke) {
			return err
		}
		return spec.Errorf(c.ErrIO, "open %q: read the schema marker: %w", o.Path, err)
	}
	return nil
}

// checkSchema says whether the database is new (no tables at all), and fails
// with schema_mismatch when it carries another marker or version.
func (s *Store) checkSchema(ctx context.Context, tx *sql.Tx, path string) (fresh bool, err error) {
	var tables, metas int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE name = 'schema_meta')
		FROM sqlite_master WHERE type = 'table'`).Scan(&tables, &metas); err != nil {
		return false, err
	}
	if tables == 0 {
		return true, nil
	}
	marker, version := "", int64(0)
	if metas == 1 {
		rows, err := tx.QueryContext(ctx, `SELECT marker, version FROM schema_meta`)
		if err != nil {
			return false, err
		}
		n := 0
		for rows.Next() {
			n++
			if err := rows.Scan(&marker, &version); err != nil {
				rows.Close()
				return false, err
			}
		}
		if err := rows.Close(); err != nil {
			return false, err
		}
		if n != 1 {
			marker, version = "", 0
		}
	}
	if !s.rules.SchemaMatches(marker, version) {
		shown := marker
		if shown == "" {
			shown = "(no marker)"
		}
		return false, spec.Errorf(c.ErrSchemaMismatch, "open %q: the file holds schema %s version %d, this store needs %s version %d",
			path, shown, version, c.SchemaMarker, c.SchemaVersion)
	}
	return false, nil
}

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
		return spec.Errorf(c.ErrInvalidArgument, "%s is not JSON: %q", what, string(v))
	}
	return nil
}

// changed runs a statement and says whether it changed a row.
func changed(ctx context.Context, tx *sql.Tx, query string, args ...any) (bool, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ----- intents -----

const intentColumns = `op_id, env_json, attempt, state, next_attempt_at, receipt_json, last_error, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanIntent(r scanner) (c.Intent, error) {
	var (
		in             c.Intent
		env            string
		receipt        sql.NullString
		next, cre, upd int64
	)
	if err := r.Scan(&in.OpID, &env, &in.Attempt, &in.State, &next, &receipt, &in.LastError, &cre, &upd); err != nil {
		return in, err
	}
	in.Envelope = spec.RawJSON(env)
	if receipt.Valid {
		in.Receipt = spec.RawJSON(receipt.String)
	}
	in.NextAttemptAt, in.CreatedAt, in.UpdatedAt = at(next), at(cre), at(upd)
	return in, nil
}

func (s *Store) EnqueueIntent(ctx context.Context, opID string, env spec.RawJSON) (bool, error) {
	if err := validJSON("envelope of intent "+opID, env); err != nil {
		return false, err
	}
	now := ms(s.clock.Now())
	query := `INSERT INTO intents (` + intentColumns + `) VALUES (?, ?, 0, 'pending', ?, NULL, '', ?, ?)
		ON CONFLICT(op_id) DO NOTHING`
	var added bool
	err := s.db.Write(ctx, "enqueue_intent", func(tx *sql.Tx) (err error) {
		added, err = changed(ctx, tx, query, opID, string(env), now, now, now)
		return err
	})
	return added, err
}

func (s *Store) Intent(ctx context.Context, opID string) (*c.Intent, error) {
	var out *c.Intent
	err := s.db.Read(ctx, "intent", func(tx *sql.Tx) error {
		in, err := scanIntent(tx.QueryRowContext(ctx, `SELECT `+intentColumns+` FROM intents WHERE op_id = ?`, opID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		out = &in
		return nil
	})
	return out, err
}

func (s *Store) DueIntents(ctx context.Context, now time.Time, lim uint32) ([]c.Intent, error) {
	return s.due(ctx, "due_intents", now, s.rules.DueLimit(lim))
}

func (s *Store) FlushOrder(ctx context.Context) ([]c.Intent, error) {
	return s.due(ctx, "flush_order", s.clock.Now(), s.rules.FlushBatch)
}

// due are at most n intents due at now, in due order.
func (s *Store) due(ctx context.Context, op string, now time.Time, n int) ([]c.Intent, error) {
	var out []c.Intent
	err := s.db.Read(ctx, op, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+intentColumns+` FROM intents
			WHERE state IN ('pending', 'retrying') AND `+s.rules.Due+` ORDER BY `+s.rules.DueOrder+` LIMIT ?`, ms(now), n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			in, err := scanIntent(rows)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return rows.Err()
	})
	return out, err
}

// settleWrite runs one intent transition and says whether it acted.
func (s *Store) settleWrite(ctx context.Context, op, query string, args ...any) (bool, error) {
	var acted bool
	err := s.db.Write(ctx, op, func(tx *sql.Tx) (err error) {
		acted, err = changed(ctx, tx, query, args...)
		return err
	})
	return acted, err
}

func (s *Store) BumpIntent(ctx context.Context, opID string, next time.Time, lastError string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "bump_intent", `UPDATE intents SET state = 'retrying', attempt = attempt + 1,
		next_attempt_at = ?, last_error = ?, updated_at = ? WHERE op_id = ? AND `+s.rules.Retryable, ms(next), lastError, now, opID)
}

func (s *Store) DeferIntent(ctx context.Context, opID string, next time.Time, lastError string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "defer_intent", `UPDATE intents SET state = 'retrying',
		next_attempt_at = ?, last_error = ?, updated_at = ? WHERE op_id = ? AND `+s.rules.Retryable, ms(next), lastError, now, opID)
}

func (s *Store) AcceptIntent(ctx context.Context, opID string, receipt spec.RawJSON) (bool, error) {
	if err := validJSON("receipt of intent "+opID, receipt); err != nil {
		return false, err
	}
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "accept_intent", `UPDATE intents SET state = 'accepted', receipt_json = ?, updated_at = ?
		WHERE op_id = ? AND state IN ('pending', 'retrying')`, string(receipt), now, opID)
}

func (s *Store) ExhaustIntent(ctx context.Context, opID string, lastError string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "exhaust_intent", `UPDATE intents SET state = 'exhausted', last_error = ?, updated_at = ?
		WHERE op_id = ? AND state IN ('pending', 'retrying')`, lastError, now, opID)
}

func (s *Store) DeleteIntent(ctx context.Context, opID string) (bool, error) {
	return s.settleWrite(ctx, "delete_intent", `DELETE FROM intents WHERE op_id = ?`, opID)
}

func (s *Store) PendingIntentCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.Read(ctx, "pending_intent_count", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM intents WHERE state IN ('pending', 'retrying')`).Scan(&n)
	})
	return n, err
}

// ----- events -----

func (s *Store) AppendEvent(ctx context.Context, eventType string, data spec.RawJSON) (int64, error) {
	if err := validJSON("data of event "+eventType, data); err != nil {
		return 0, err
	}
	now := ms(s.clock.Now())
	var seq int64
	err := s.db.Write(ctx, "append_event", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rules.WriteEvent, eventType, string(data), now)
		if err != nil {
			return err
		}
		seq, err = res.LastInsertId()
		return err
	})
	return seq, err
}

func (s *Store) EventsSince(ctx context.Context, seq int64, lim uint32) ([]c.Event, error) {
	var out []c.Event
	err := s.db.Read(ctx, "events_since", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, type, data_json, created_at FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, seq, s.rules.EventsLimit(lim))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e    c.Event
				data string
				cre  int64
			)
			if err := rows.Scan(&e.Seq, &e.Type, &data, &cre); err != nil {
				return err
			}
			e.Data, e.CreatedAt = spec.RawJSON(data), at(cre)
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

func (s *Store) EventHead(ctx context.Context) (int64, error) {
	var head int64
	err := s.db.Read(ctx, "event_head", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&head)
	})
	return head, err
}

// ----- caches -----

func (s *Store) put(ctx context.Context, op, query string, args ...any) error {
	return s.db.Write(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

// getText reads one optional text value.
func (s *Store) getText(ctx context.Context, op, query string, arg string) (*string, error) {
	var out *string
	err := s.db.Read(ctx, op, func(tx *sql.Tx) error {
		var v string
		err := tx.QueryRowContext(ctx, query, arg).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			out = &v
		}
		return err
	})
	return out, err
}

func (s *Store) PutOutHead(ctx context.Context, taskID, head string) error {
	return s.put(ctx, "put_out_head", `INSERT INTO out_head_cache (task_id, head) VALUES (?, ?)
		ON CONFLICT(task_id) DO UPDATE SET head = excluded.head`, taskID, c.HeadPreview(head))
}

func (s *Store) OutHead(ctx context.Context, taskID string) (*string, error) {
	return s.getText(ctx, "out_head", `SELECT head FROM out_head_cache WHERE task_id = ?`, taskID)
}

func (s *Store) PutProse(ctx context.Context, role, prose, specHash string) error {
	now := ms(s.clock.Now())
	return s.put(ctx, "put_prose", `INSERT INTO prose_cache (role, prose, spec_hash, cached_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(role) DO UPDATE SET prose = excluded.prose, spec_hash = excluded.spec_hash, cached_at = excluded.cached_at`,
		role, prose, specHash, now)
}

func (s *Store) Prose(ctx context.Context, role string) (*c.Prose, error) {
	var out *c.Prose
	err := s.db.Read(ctx, "prose", func(tx *sql.Tx) error {
		var (
			p   c.Prose
			cat int64
		)
		err := tx.QueryRowContext(ctx, `SELECT prose, spec_hash, cached_at FROM prose_cache WHERE role = ?`, role).Scan(&p.Prose, &p.SpecHash, &cat)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			p.CachedAt = at(cat)
			out = &p
		}
		return err
	})
	return out, err
}

func (s *Store) PutConfig(ctx context.Context, key, value string) error {
	return s.put(ctx, "put_config", `INSERT INTO config_cache (key, value) VALUES (?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
}

func (s *Store) Config(ctx context.Context, key string) (*string, error) {
	return s.getText(ctx, "config", `SELECT value FROM config_cache WHERE key = ?`, key)
}

// ----- sessions and bindings -----

// storedPair is the session's (generation, seq), and whether it has a row.
func storedPair(ctx context.Context, tx *sql.Tx, sessionID string) (gen, seq uint64, ok bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT generation, seq FROM sessions WHERE session_id = ?`, sessionID).Scan(&gen, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	return gen, seq, err == nil, err
}

// sessionForTask is the session of the task's latest open binding, else of
// its latest binding; found is false when it has none. ("" is a session id
// like any other: a backend_ref of {"task_id":""} files the tuple under it.)
func sessionForTask(ctx context.Context, tx *sql.Tx, taskID string) (id string, found bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT session_id FROM session_tasks WHERE task_id = ?
		ORDER BY released_at IS NULL DESC, bound_seq DESC LIMIT 1`, taskID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// openBinding opens the pair's binding at now and closes the session's other
// open binding; false when the pair was open already.
func (s *Store) openBinding(ctx context.Context, tx *sql.Tx, op, sessionID, taskID string, now int64) (bool, error) {
	var open bool
	err := tx.QueryRowContext(ctx, `SELECT released_at IS NULL FROM session_tasks WHERE session_id = ? AND task_id = ?`,
		sessionID, taskID).Scan(&open)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case open:
		return false, nil
	}
	closed, args := s.rules.ClosedOnBind(taskID)
	if _, err := tx.ExecContext(ctx, `UPDATE session_tasks SET released_at = ?
		WHERE session_id = ? AND released_at IS NULL AND `+closed, append([]any{now, sessionID}, args...)...); err != nil {
		return false, fmt.Errorf("close the other binding: %w", err)
	}
	// Upsert_session and bind_task both reach here: the other binding is
	// closed, this one not yet open.
	if err := spec.CrashPoint(ctx, op+"/after_close_others"); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO session_tasks (session_id, task_id, bound_at, bound_seq, released_at)
		VALUES (?, ?, ?, (SELECT COALESCE(MAX(bound_seq), 0) + 1 FROM session_tasks), NULL)
		ON CONFLICT(session_id, task_id) DO UPDATE SET bound_at = excluded.bound_at, bound_seq = excluded.bound_seq, released_at = NULL`,
		sessionID, taskID, now)
	return err == nil, err
}

func (s *Store) UpsertSession(ctx context.Context, taskID string, v c.VersionedSession) (bool, error) {
	now := ms(s.clock.Now())
	sessionID := c.SessionIDFor(taskID, v.BackendRef)
	var wrote bool
	err := s.db.Write(ctx, "upsert_session", func(tx *sql.Tx) error {
		gen, seq, ok, err := storedPair(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if ok && !s.rules.Newer(v.Generation, v.Seq, gen, seq) {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (session_id, generation, seq, agent_state, delivery_state,
			resource_state, recovery_substate, desired_json, observed_json, backend_ref, mismatch_count, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(session_id) DO UPDATE SET generation = excluded.generation, seq = excluded.seq,
				agent_state = excluded.agent_state, delivery_state = excluded.delivery_state,
				resource_state = excluded.resource_state, recovery_substate = excluded.recovery_substate,
				desired_json = excluded.desired_json, observed_json = excluded.observed_json,
				backend_ref = excluded.backend_ref, mismatch_count = excluded.mismatch_count, updated_at = excluded.updated_at`,
			sessionID, v.Generation, v.Seq, v.AgentState, v.DeliveryState, v.ResourceState, v.RecoverySubstate,
			v.DesiredJSON, v.ObservedJSON, v.BackendRef, v.MismatchCount, ms(v.UpdatedAt)); err != nil {
			return fmt.Errorf("write session %s: %w", sessionID, err)
		}
		if err := spec.CrashPoint(ctx, "upsert_session/after_session_write"); err != nil {
			return err
		}
		if _, err := s.openBinding(ctx, tx, "upsert_session", sessionID, taskID, now); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote, err
}

func (s *Store) BumpSessionVersion(ctx context.Context, taskID string, generation, seq uint64) (bool, error) {
	now := ms(s.clock.Now())
	var moved bool
	err := s.db.Write(ctx, "bump_session_version", func(tx *sql.Tx) error {
		sessionID, found, err := sessionForTask(ctx, tx, taskID)
		if err != nil || !found {
			return err
		}
		gen, sq, ok, err := storedPair(ctx, tx, sessionID)
		if err != nil || !ok || !s.rules.Newer(generation, seq, gen, sq) {
			return err
		}
		moved, err = changed(ctx, tx, `UPDATE sessions SET generation = ?, seq = ?, updated_at = ? WHERE session_id = ?`,
			generation, seq, now, sessionID)
		return err
	})
	return moved, err
}

func (s *Store) GetSession(ctx context.Context, taskID string) (*c.SessionRecord, error) {
	var out *c.SessionRecord
	err := s.db.Read(ctx, "get_session", func(tx *sql.Tx) error {
		sessionID, found, err := sessionForTask(ctx, tx, taskID)
		if err != nil || !found {
			return err
		}
		r := c.SessionRecord{SessionID: sessionID, TaskID: taskID}
		var upd int64
		err = tx.QueryRowContext(ctx, `SELECT generation, seq, agent_state, delivery_state, resource_state, recovery_substate,
			desired_json, observed_json, backend_ref, mismatch_count, updated_at FROM sessions WHERE session_id = ?`, sessionID).
			Scan(&r.Generation, &r.Seq, &r.AgentState, &r.DeliveryState, &r.ResourceState, &r.RecoverySubstate,
				&r.DesiredJSON, &r.ObservedJSON, &r.BackendRef, &r.MismatchCount, &upd)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		r.UpdatedAt = at(upd)
		out = &r
		return nil
	})
	return out, err
}

func (s *Store) BindTask(ctx context.Context, sessionID, taskID string) (bool, error) {
	now := ms(s.clock.Now())
	var opened bool
	err := s.db.Write(ctx, "bind_task", func(tx *sql.Tx) (err error) {
		opened, err = s.openBinding(ctx, tx, "bind_task", sessionID, taskID, now)
		return err
	})
	return opened, err
}

func (s *Store) ReleaseBinding(ctx context.Context, sessionID, taskID string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "release_binding", `UPDATE session_tasks SET released_at = ?
		WHERE session_id = ? AND task_id = ? AND released_at IS NULL`, now, sessionID, taskID)
}

func (s *Store) ActiveSessions(ctx context.Context) ([]c.LiveSession, error) {
	where := s.rules.Active
	var out []c.LiveSession
	err := s.db.Read(ctx, "active_sessions", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT s.session_id, s.resource_state,
			COALESCE((SELECT b.task_id FROM session_tasks AS b WHERE b.session_id = s.session_id AND b.released_at IS NULL
				ORDER BY b.bound_seq DESC LIMIT 1), '')
			FROM sessions AS s WHERE `+where+` ORDER BY s.session_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				l        c.LiveSession
				resource string
			)
			if err := rows.Scan(&l.SessionID, &resource, &l.TaskID); err != nil {
				return err
			}
			l.Suspended = resource == c.ResourceClosed
			out = append(out, l)
		}
		return rows.Err()
	})
	return out, err
}

// ----- tasks -----

const taskColumns = `task_id, kind, parent_task, hop, attempt, task_state, opened_at, settled_at`

func scanTask(r scanner) (c.Task, error) {
	var (
		t       c.Task
		opened  int64
		settled sql.NullInt64
	)
	if err := r.Scan(&t.TaskID, &t.Kind, &t.ParentTask, &t.Hop, &t.Attempt, &t.State, &opened, &settled); err != nil {
		return t, err
	}
	t.OpenedAt = at(opened)
	if settled.Valid {
		st := at(settled.Int64)
		t.SettledAt = &st
	}
	return t, nil
}

func (s *Store) OpenTask(ctx context.Context, cz c.Causality, kind string) (bool, error) {
	if kind != c.KindRoot && kind != c.KindRelay {
		return false, spec.Errorf(c.ErrInvalidArgument, "task %s: kind %q is neither %s nor %s", cz.Task, kind, c.KindRoot, c.KindRelay)
	}
	now := ms(s.clock.Now())
	attempt := s.rules.ReopenAttempt
	// The record is written either way, a fresh open or a refresh of the
	// chain, and the call answers true (client.open_task.refresh).
	var written bool
	err := s.db.Write(ctx, "open_task", func(tx *sql.Tx) error {
		refreshed, err := changed(ctx, tx, `UPDATE task SET kind = ?, parent_task = ?, hop = ?, attempt = `+attempt+`
			WHERE task_id = ?`, kind, cz.ParentTask, cz.Hop, cz.Attempt, cz.Task)
		if err != nil || refreshed {
			written = refreshed
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO task (`+taskColumns+`) VALUES (?, ?, ?, ?, ?, 'pending', ?, NULL)`,
			cz.Task, kind, cz.ParentTask, cz.Hop, cz.Attempt, now)
		written = err == nil
		return err
	})
	return written, err
}

func (s *Store) SettleTask(ctx context.Context, taskID string, state c.TaskState) (bool, error) {
	if !slices.Contains(c.TerminalTaskStates, state) {
		return false, spec.Errorf(c.ErrInvalidArgument, "task %s: %q is not a terminal verdict (accepted: %v)", taskID, state, c.TerminalTaskStates)
	}
	now := ms(s.clock.Now())
	firstWins := ` WHERE ` + s.rules.VerdictOpen
	var settled bool
	err := s.db.Write(ctx, "settle_task", func(tx *sql.Tx) (err error) {
		settled, err = changed(ctx, tx, `INSERT INTO task (`+taskColumns+`) VALUES (?, '', '', 0, 0, ?, ?, ?)
			ON CONFLICT(task_id) DO UPDATE SET task_state = excluded.task_state, settled_at = excluded.settled_at`+firstWins,
			taskID, string(state), now, now)
		return err
	})
	return settled, err
}

func (s *Store) Task(ctx context.Context, taskID string) (*c.Task, error) {
	var out *c.Task
	err := s.db.Read(ctx, "task", func(tx *sql.Tx) error {
		t, err := scanTask(tx.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM task WHERE task_id = ?`, taskID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			out = &t
		}
		return err
	})
	return out, err
}

func (s *Store) OpenTasks(ctx context.Context, lim uint32) ([]c.Task, error) {
	var out []c.Task
	err := s.db.Read(ctx, "open_tasks", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+taskColumns+` FROM task WHERE settled_at IS NULL
			ORDER BY opened_at, rowid LIMIT ?`, s.rules.OpenTasksLimit(lim))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanTask(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

// intentNamesTask matches an intent whose envelope's causality.task is the
// task, as a JSON string.
const intentNamesTask = `json_valid(env_json) AND json_type(env_json, '$.causality.task') = 'text'
	AND json_extract(env_json, '$.causality.task') = ?`

func (s *Store) TaskIsKnown(ctx context.Context, taskID string) (bool, error) {
	var known bool
	err := s.db.Read(ctx, "task_is_known", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM session_tasks WHERE task_id = ?)
			OR EXISTS(SELECT 1 FROM intents WHERE `+intentNamesTask+`)`, taskID, taskID).Scan(&known)
	})
	return known, err
}

func (s *Store) TaskAttempt(ctx context.Context, taskID string) (int64, error) {
	var attempt int64
	err := s.db.Read(ctx, "task_attempt", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(attempt), 0) FROM intents WHERE `+intentNamesTask, taskID).Scan(&attempt)
	})
	return attempt, err
}

// ----- faults -----

func (s *Store) InsertFault(ctx context.Context, f c.Fault) (int64, error) {
	var id int64
	err := s.db.Write(ctx, "insert_fault", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rules.WriteFault,
			f.TaskID, f.SessionID, f.Generation, f.Seq, f.DesiredJSON, f.ObservedJSON, f.Intent, f.Attempt,
			f.BackendRef, f.Kind, f.Reason, f.State, ms(f.CreatedAt))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

func (s *Store) ListFaults(ctx context.Context, taskID string) ([]c.Fault, error) {
	var out []c.Fault
	err := s.db.Read(ctx, "list_faults", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, task_id, session_id, generation, seq, desired_json, observed_json,
			intent, attempt, backend_ref, kind, reason, state, created_at FROM faults WHERE task_id = ? ORDER BY id`, taskID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				f   c.Fault
				cre int64
			)
			if err := rows.Scan(&f.ID, &f.TaskID, &f.SessionID, &f.Generation, &f.Seq, &f.DesiredJSON, &f.ObservedJSON,
				&f.Intent, &f.Attempt, &f.BackendRef, &f.Kind, &f.Reason, &f.State, &cre); err != nil {
				return err
			}
			f.CreatedAt = at(cre)
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}
