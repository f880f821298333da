// Package continuity is the reference continuity store: the contract of
// spec/continuity on SQLite, after meerkat-mobkit's LocalContinuityStore.
// Unlike the seed, every operation, the single-statement upsert included, is
// one transaction whose checks and writes cannot interleave with another
// writer's, from this process or another.
package continuity

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

const schema = `
CREATE TABLE IF NOT EXISTS continuity_records (
	identity           TEXT PRIMARY KEY,
	agent_runtime_id   TEXT NOT NULL,
	session_id         TEXT NOT NULL,
	generation         INTEGER NOT NULL,
	checkpoint_version INTEGER NOT NULL,
	fencing_token      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS session_snapshots (
	session_id         TEXT PRIMARY KEY,
	identity           TEXT NOT NULL,
	generation         INTEGER NOT NULL,
	checkpoint_version INTEGER NOT NULL,
	fencing_token      INTEGER NOT NULL,
	data               BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS session_snapshots_by_identity ON session_snapshots(identity, generation);`

// CrashPoints are the places inside this store's write transactions where
// "storecheck serve" can be crashed (see spec.CrashPoint): between the writes
// of every multi-write operation, and after every commit.
var CrashPoints = []string{
	"save_session_snapshot/after_snapshot_upsert",
	"save_session_snapshot/after_commit",
	"upsert_continuity_record/after_commit",
	"rollback_continuity_record/after_snapshots_delete",
	"rollback_continuity_record/after_commit",
	"delete_continuity_record/after_snapshots_delete",
	"delete_continuity_record/after_commit",
	"delete_session_snapshot_if_current_revision/after_commit",
}

// Options says how to open the store.
type Options struct {
	// Path is the database file; "" or ":memory:" is an in-memory store.
	Path string
	// BusyTimeout bounds the wait for another connection's lock (default
	// 5s, as in the seed).
	BusyTimeout time.Duration
	// Rules are the decisions the store takes (Rules{}: the contract's).
	Rules Rules
	// Synchronous is SQLite's synchronous setting (sqlitedb.Options); ""
	// leaves SQLite's default, as the seeds do. Only deliberate bugs set it.
	Synchronous string
	// JournalMode is SQLite's journal_mode (sqlitedb.Options); "" is
	// WAL, the seed's.
	JournalMode string
}

// Store is the reference continuity store.
type Store struct {
	db    *sqlitedb.DB
	rules Rules
}

var _ c.Store = (*Store)(nil)

// Open opens (or creates) a store.
func Open(ctx context.Context, o Options) (*Store, error) {
	db, err := sqlitedb.Open(ctx, sqlitedb.Options{Path: o.Path, BusyTimeout: o.BusyTimeout, Synchronous: o.Synchronous, JournalMode: o.JournalMode, Schema: schema, IOKind: c.ErrIO})
	if err != nil {
		return nil, err
	}
	return &Store{db: db, rules: o.Rules.complete()}, nil
}

// WithRules is s deciding by r: the same database (closing either closes
// it), other rules.
func (s *Store) WithRules(r Rules) *Store { return &Store{db: s.db, rules: r.complete()} }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func loadRecord(ctx context.Context, tx *sqlitedb.Tx, id c.Identity) (*Stored, error) {
	r := Stored{Record: c.Record{Identity: id}}
	err := tx.QueryRowContext(ctx, `SELECT agent_runtime_id, session_id, generation, checkpoint_version, fencing_token
		FROM continuity_records WHERE identity = ?`, id).
		Scan(&r.AgentRuntimeID, &r.SessionID, &r.Generation, &r.CheckpointVersion, &r.Fence)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Store) ResolveMany(ctx context.Context, ids []c.Identity) (map[c.Identity]c.Resolution, error) {
	out := make(map[c.Identity]c.Resolution, len(ids))
	for _, id := range ids {
		out[id] = c.Resolution{State: c.Uninitialized}
	}
	if len(ids) == 0 {
		return out, nil
	}
	if len(ids) <= spec.LookupChunk || !jsonSafe(ids) {
		return s.resolveEach(ctx, ids, out)
	}
	// Past a chunk, one statement over the identities as one JSON array: as many as
	// asked (an IN list of one parameter each breaks past SQLite's 32,766,
	// spec.MaxBoundParams), read at once, in one transaction.
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	err = s.db.Read(ctx, "resolve_many", func(tx *sqlitedb.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT identity, agent_runtime_id, session_id, generation, checkpoint_version
			FROM continuity_records WHERE identity IN (SELECT value FROM json_each(?))`, string(list))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r c.Record
			if err := rows.Scan(&r.Identity, &r.AgentRuntimeID, &r.SessionID, &r.Generation, &r.CheckpointVersion); err != nil {
				return err
			}
			out[r.Identity] = c.Resolution{State: c.Ready, Record: &r}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// jsonSafe is whether every identity reads back from JSON as it is: valid
// UTF-8 and no NUL.
func jsonSafe(ids []c.Identity) bool {
	for _, id := range ids {
		if !utf8.ValidString(string(id)) || strings.ContainsRune(string(id), 0) {
			return false
		}
	}
	return true
}

// resolveEach is resolve_many one identity at a time, as the seed reads
// them: a few, or identities JSON cannot carry; into out.
func (s *Store) resolveEach(ctx context.Context, ids []c.Identity, out map[c.Identity]c.Resolution) (map[c.Identity]c.Resolution, error) {
	err := s.db.Read(ctx, "resolve_many", func(tx *sqlitedb.Tx) error {
		for _, id := range ids {
			r, err := loadRecord(ctx, tx, id)
			if err != nil {
				return err
			}
			if r != nil {
				out[id] = c.Resolution{State: c.Ready, Record: &r.Record}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) LoadSessionSnapshot(ctx context.Context, session c.SessionID) (*c.Snapshot, error) {
	var snap *c.Snapshot
	err := s.db.Read(ctx, "load_session_snapshot", func(tx *sqlitedb.Tx) error {
		var data []byte
		err := tx.QueryRowContext(ctx, `SELECT data FROM session_snapshots WHERE session_id = ?`, session).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if data == nil {
			data = []byte{}
		}
		snap = &c.Snapshot{Data: data}
		return nil
	})
	return snap, err
}

func (s *Store) SessionSnapshotMatchesCurrent(ctx context.Context, m c.MatchCandidate) (bool, error) {
	var match bool
	err := s.db.Read(ctx, "session_snapshot_matches_current", func(tx *sqlitedb.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT EXISTS(
			SELECT 1 FROM session_snapshots AS snap
			JOIN continuity_records AS rec
			  ON rec.identity = snap.identity
			 AND rec.session_id = snap.session_id
			 AND rec.generation = snap.generation
			 AND rec.checkpoint_version = snap.checkpoint_version
			WHERE snap.session_id = ?1 AND snap.identity = ?2 AND snap.generation = ?3
			  AND snap.checkpoint_version = ?4 AND rec.fencing_token = ?5
			  AND `+s.rules.MatchRowFence+` AND `+s.rules.MatchBytes+`)`,
			m.SessionID, m.Identity, m.Generation, m.CheckpointVersion, m.FencingToken, blob(m.Data)).Scan(&match)
	})
	return match, err
}

// blob keeps empty bytes a zero-length BLOB rather than NULL.
func blob(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (s *Store) DeleteSessionSnapshotIfCurrentRevision(ctx context.Context, session c.SessionID, expected string) (bool, error) {
	var deleted bool
	err := s.db.Write(ctx, "delete_session_snapshot_if_current_revision", func(tx *sqlitedb.Tx) error {
		var data []byte
		err := tx.QueryRowContext(ctx, `SELECT data FROM session_snapshots WHERE session_id = ?`, session).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if c.SnapshotRevision(data) != expected {
			return nil
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM session_snapshots WHERE session_id = ?`, session)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		deleted = n > 0
		return err
	})
	return deleted, err
}

func (s *Store) SaveSessionSnapshot(ctx context.Context, w c.SnapshotWrite) error {
	return s.db.Write(ctx, "save_session_snapshot", func(tx *sqlitedb.Tx) error {
		rec, err := loadRecord(ctx, tx, w.Identity)
		if err != nil {
			return err
		}
		if rec != nil {
			if rec.SessionID != w.SessionID || rec.Generation != w.Generation {
				return spec.Errorf(c.ErrNotFound, "identity %s is at session %s generation %d, not session %s generation %d",
					w.Identity, rec.SessionID, rec.Generation, w.SessionID, w.Generation)
			}
			if !s.rules.FenceNotLower(w.FencingToken, rec.Fence) {
				return staleFenceError(w.Identity, w.FencingToken, rec.Fence)
			}
			if !s.rules.VersionAdvances(w.CheckpointVersion, rec.CheckpointVersion) {
				return spec.Errorf(c.ErrStaleCheckpointVersion, "identity %s: presented checkpoint version %d, current %d",
					w.Identity, w.CheckpointVersion, rec.CheckpointVersion)
			}
		}
		var owner c.Identity
		var ownerGen c.Generation
		err = tx.QueryRowContext(ctx, `SELECT identity, generation FROM session_snapshots WHERE session_id = ?`, w.SessionID).
			Scan(&owner, &ownerGen)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case !s.rules.SnapshotOwner(Owner{owner, ownerGen}, Owner{w.Identity, w.Generation}):
			return spec.Errorf(c.ErrCorruption, "session snapshot %s is owned by %s generation %d, not %s generation %d",
				w.SessionID, owner, ownerGen, w.Identity, w.Generation)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_snapshots
			(session_id, identity, generation, checkpoint_version, fencing_token, data) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(session_id) DO UPDATE SET identity = excluded.identity, generation = excluded.generation,
				checkpoint_version = excluded.checkpoint_version, fencing_token = excluded.fencing_token, data = excluded.data`,
			w.SessionID, w.Identity, w.Generation, w.CheckpointVersion, w.FencingToken, blob(w.Data)); err != nil {
			return fmt.Errorf("upsert snapshot: %w", err)
		}
		if err := spec.CrashPoint(ctx, "save_session_snapshot/after_snapshot_upsert"); err != nil {
			return err
		}
		if rec == nil {
			return nil
		}
		res, err := tx.ExecContext(ctx, `UPDATE continuity_records SET checkpoint_version = ?, fencing_token = ?
			WHERE identity = ? AND session_id = ? AND generation = ?`,
			w.CheckpointVersion, w.FencingToken, w.Identity, w.SessionID, w.Generation)
		if err != nil {
			return fmt.Errorf("advance record: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return spec.Errorf(c.ErrNotFound, "identity %s: record moved during the save (%d rows, %v)", w.Identity, n, err)
		}
		return nil
	})
}

// Stored reads the record of id as the store keeps it, with its fence (nil:
// none), in a read transaction of its own: what an upsert decides on.
func (s *Store) Stored(ctx context.Context, id c.Identity) (*Stored, error) {
	var cur *Stored
	err := s.db.Read(ctx, "stored_record", func(tx *sqlitedb.Tx) (err error) {
		cur, err = loadRecord(ctx, tx, id)
		return err
	})
	return cur, err
}

// UpsertContinuityRecord reads the record, decides (Rules.Upsert) and
// writes, in one transaction.
func (s *Store) UpsertContinuityRecord(ctx context.Context, r c.Record, fence c.FencingToken) error {
	return s.db.Write(ctx, "upsert_continuity_record", func(tx *sqlitedb.Tx) error {
		cur, err := loadRecord(ctx, tx, r.Identity)
		if err != nil {
			return err
		}
		rec, err := s.rules.Upsert(cur, r, fence)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO continuity_records
			(identity, agent_runtime_id, session_id, generation, checkpoint_version, fencing_token) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(identity) DO UPDATE SET agent_runtime_id = excluded.agent_runtime_id,
				session_id = excluded.session_id, generation = excluded.generation,
				checkpoint_version = excluded.checkpoint_version, fencing_token = excluded.fencing_token`,
			rec.Identity, rec.AgentRuntimeID, rec.SessionID, rec.Generation, rec.CheckpointVersion, fence)
		return err
	})
}

func (s *Store) RollbackContinuityRecord(ctx context.Context, attempt c.Record, previous *c.Record, fence c.FencingToken) error {
	if previous != nil && previous.Identity != attempt.Identity {
		return spec.Errorf(c.ErrCorruption, "rollback identity mismatch: attempted %s, previous %s", attempt.Identity, previous.Identity)
	}
	return s.db.Write(ctx, "rollback_continuity_record", func(tx *sqlitedb.Tx) error {
		cur, err := loadRecord(ctx, tx, attempt.Identity)
		if err != nil {
			return err
		}
		if cur == nil {
			return spec.Errorf(c.ErrNotFound, "identity %s has no record to roll back", attempt.Identity)
		}
		if !s.rules.RollbackFence(fence, cur.Fence) {
			return staleFenceError(attempt.Identity, fence, cur.Fence)
		}
		if cur.AgentRuntimeID != attempt.AgentRuntimeID || cur.SessionID != attempt.SessionID || cur.Generation != attempt.Generation {
			return spec.Errorf(c.ErrStaleContinuityGeneration,
				"identity %s: the attempt (%s, %s, generation %d) is no longer current (%s, %s, generation %d)",
				attempt.Identity, attempt.AgentRuntimeID, attempt.SessionID, attempt.Generation,
				cur.AgentRuntimeID, cur.SessionID, cur.Generation)
		}
		// Only the abandoned attempt's generation loses its snapshots; older
		// ones remain the restored record's rollback authority.
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_snapshots WHERE identity = ? AND generation = ?`,
			attempt.Identity, attempt.Generation); err != nil {
			return fmt.Errorf("delete attempt snapshots: %w", err)
		}
		if err := spec.CrashPoint(ctx, "rollback_continuity_record/after_snapshots_delete"); err != nil {
			return err
		}
		if previous == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM continuity_records WHERE identity = ?`, attempt.Identity)
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE continuity_records SET agent_runtime_id = ?, session_id = ?, generation = ?,
			checkpoint_version = ?, fencing_token = ? WHERE identity = ?`,
			previous.AgentRuntimeID, previous.SessionID, previous.Generation, previous.CheckpointVersion, fence, attempt.Identity)
		return err
	})
}

func (s *Store) DeleteContinuityRecord(ctx context.Context, id c.Identity, fence c.FencingToken) error {
	return s.db.Write(ctx, "delete_continuity_record", func(tx *sqlitedb.Tx) error {
		cur, err := loadRecord(ctx, tx, id)
		if err != nil {
			return err
		}
		if cur != nil && !s.rules.FenceNotLower(fence, cur.Fence) {
			return staleFenceError(id, fence, cur.Fence)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_snapshots WHERE identity = ?`, id); err != nil {
			return fmt.Errorf("delete snapshots: %w", err)
		}
		if err := spec.CrashPoint(ctx, "delete_continuity_record/after_snapshots_delete"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM continuity_records WHERE identity = ?`, id)
		return err
	})
}

func (s *Store) MaxFencingToken(ctx context.Context) (c.FencingToken, error) {
	var records, snapshots c.FencingToken
	err := s.db.Read(ctx, "max_fencing_token", func(tx *sqlitedb.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT (SELECT COALESCE(MAX(fencing_token), 0) FROM continuity_records),
			(SELECT COALESCE(MAX(fencing_token), 0) FROM session_snapshots)`).Scan(&records, &snapshots)
	})
	if err != nil {
		return 0, err
	}
	return s.rules.HighWater(records, snapshots), nil
}
