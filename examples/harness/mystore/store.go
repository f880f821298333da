// Package mystore is an example Go backend of the continuity contract
// (spec/continuity): a store of its own on SQLite (modernc.org/sqlite),
// written from the contract as an outside author would, and handed to every
// layer of the kit by one harness (Harness): the specs, the
// linearizability check and the simulator from go test
// (conformance.Test), and any tool over the wire protocol
// (conformance.Serve, ../serve).
//
// Every operation is one transaction through one helper (Store.tx), which
// is where the kit's two hooks are reached: conformance.Yield before the
// transaction begins and after it commits (the places the store holds no
// lock, where the simulator lets another process move), and
// conformance.CrashPoint between the writes of a transaction and after its
// commit (the places the simulator may crash it: CrashPoints). Each names
// the place alone: the kit puts the operation's name in the context. Both
// do nothing when no check is running. The package imports conformance
// (the harness, the hooks and the contract: ContinuityStore and its types)
// and, of the kit, spec for the two types every backend shares with it
// (spec.Capabilities, spec.OpenOptions).
//
// Options.Racy is its deliberate bug, there for the example's own test: an
// upsert checks the fence in one transaction and writes in another, a race
// no single-threaded spec can see and the simulator's yield points reveal.
package mystore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/spec"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Harness is the store as the kit opens it: a file per store (Files),
// which two handles may share as two processes would (SharedFiles), and
// its crash points. Each store is opened with o on the path the kit gives.
func Harness(o Options) conformance.Harness {
	name := "mystore"
	if o.Racy {
		name += " (racy)"
	}
	return conformance.Harness{
		Name:         name,
		Capabilities: spec.Capabilities{Files: true, SharedFiles: true},
		CrashPoints:  map[string][]string{conformance.ContinuityStoreName: CrashPoints},
		Continuity: func(ctx context.Context, so spec.OpenOptions) (conformance.ContinuityStore, error) {
			o.Path = so.Path
			return Open(ctx, o)
		},
	}
}

// CrashPoints are the places the store reaches conformance.CrashPoint,
// each "<operation>/<place>": between the two writes of every operation
// that has two, and after every commit of a write.
var CrashPoints = []string{
	"save_session_snapshot/snapshot_written",
	"save_session_snapshot/after_commit",
	"upsert_continuity_record/after_commit",
	"rollback_continuity_record/snapshots_dropped",
	"rollback_continuity_record/after_commit",
	"delete_continuity_record/snapshots_dropped",
	"delete_continuity_record/after_commit",
	"delete_session_snapshot_if_current_revision/after_commit",
}

// Options says how to open a store.
type Options struct {
	// Path is the database file, created if missing.
	Path string
	// Racy is the example's deliberate bug: an upsert decides on a record
	// read in one transaction and writes in another. Never set it but to
	// see the kit catch it.
	Racy bool
}

// Store is a continuity store on one SQLite file.
type Store struct {
	db   *sql.DB
	racy bool
}

var _ conformance.ContinuityStore = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS records (
	identity   TEXT PRIMARY KEY,
	runtime    TEXT NOT NULL,
	session    TEXT NOT NULL,
	generation INTEGER NOT NULL,
	version    INTEGER NOT NULL,
	fence      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
	session    TEXT PRIMARY KEY,
	identity   TEXT NOT NULL,
	generation INTEGER NOT NULL,
	version    INTEGER NOT NULL,
	fence      INTEGER NOT NULL,
	data       BLOB NOT NULL
);`

// Open opens (creating it if needed) the store at o.Path. Its one
// connection takes the write lock at each transaction's start (BEGIN
// IMMEDIATE) and waits up to five seconds for another handle's.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Path == "" {
		return nil, conformance.Errorf(conformance.ErrContinuityIO, "open: no path (the store keeps a file)")
	}
	q := url.Values{"_pragma": {"busy_timeout(5000)", "journal_mode(WAL)"}, "_txlock": {"immediate"}}
	db, err := sql.Open("sqlite", "file:"+o.Path+"?"+q.Encode())
	if err != nil {
		return nil, conformance.Errorf(conformance.ErrContinuityIO, "open %s: %w", o.Path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, conformance.Errorf(conformance.ErrContinuityIO, "open %s: schema: %w", o.Path, err)
	}
	return &Store{db: db, racy: o.Racy}, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// tx runs fn as one transaction of operation op (named in its errors),
// committed when fn returns nil: the store's one way to its database. It yields before the
// transaction and after the commit; a write reaches its after_commit crash
// point once committed. A contract error of fn passes through; any other
// failure is the contract's io.
func (s *Store) tx(ctx context.Context, op string, write bool, fn func(*sql.Tx) error) error {
	if err := conformance.Yield(ctx, "before_tx"); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return conformance.Errorf(conformance.ErrContinuityIO, "%s: begin: %w", op, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		var kind *conformance.Error
		if errors.As(err, &kind) {
			return err
		}
		return conformance.Errorf(conformance.ErrContinuityIO, "%s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return conformance.Errorf(conformance.ErrContinuityIO, "%s: commit: %w", op, err)
	}
	if write {
		if err := conformance.CrashPoint(ctx, "after_commit"); err != nil {
			return err
		}
	}
	return conformance.Yield(ctx, "after_tx")
}

// stored is a record as the store keeps it: with its fence.
type stored struct {
	conformance.ContinuityRecord
	fence conformance.ContinuityFencingToken
}

func record(ctx context.Context, tx *sql.Tx, id conformance.ContinuityIdentity) (*stored, error) {
	r := stored{ContinuityRecord: conformance.ContinuityRecord{Identity: id}}
	err := tx.QueryRowContext(ctx, `SELECT runtime, session, generation, version, fence FROM records WHERE identity = ?`, id).
		Scan(&r.AgentRuntimeID, &r.SessionID, &r.Generation, &r.CheckpointVersion, &r.fence)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// snapshotRow is a session's snapshot row.
type snapshotRow struct {
	identity   conformance.ContinuityIdentity
	generation conformance.ContinuityGeneration
	version    conformance.ContinuityCheckpointVersion
	fence      conformance.ContinuityFencingToken
	data       []byte
}

func snapshot(ctx context.Context, tx *sql.Tx, session conformance.ContinuitySessionID) (*snapshotRow, error) {
	var r snapshotRow
	err := tx.QueryRowContext(ctx, `SELECT identity, generation, version, fence, data FROM snapshots WHERE session = ?`, session).
		Scan(&r.identity, &r.generation, &r.version, &r.fence, &r.data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.data == nil {
		r.data = []byte{}
	}
	return &r, nil
}

func staleFence(id conformance.ContinuityIdentity, presented, current conformance.ContinuityFencingToken) error {
	return conformance.Errorf(conformance.ErrContinuityStaleFencingToken, "identity %s: fence %d is older than %d", id, presented, current)
}

func (s *Store) ResolveMany(ctx context.Context, ids []conformance.ContinuityIdentity) (map[conformance.ContinuityIdentity]conformance.ContinuityResolution, error) {
	out := map[conformance.ContinuityIdentity]conformance.ContinuityResolution{}
	err := s.tx(ctx, "resolve_many", false, func(tx *sql.Tx) error {
		for _, id := range ids {
			r, err := record(ctx, tx, id)
			if err != nil {
				return err
			}
			out[id] = conformance.ContinuityResolution{State: conformance.ContinuityUninitialized}
			if r != nil {
				out[id] = conformance.ContinuityResolution{State: conformance.ContinuityReady, Record: &r.ContinuityRecord}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) LoadSessionSnapshot(ctx context.Context, session conformance.ContinuitySessionID) (*conformance.ContinuitySnapshot, error) {
	var out *conformance.ContinuitySnapshot
	err := s.tx(ctx, "load_session_snapshot", false, func(tx *sql.Tx) error {
		row, err := snapshot(ctx, tx, session)
		if row != nil {
			out = &conformance.ContinuitySnapshot{Data: row.data}
		}
		return err
	})
	return out, err
}

func (s *Store) SessionSnapshotMatchesCurrent(ctx context.Context, m conformance.ContinuityMatchCandidate) (bool, error) {
	var match bool
	err := s.tx(ctx, "session_snapshot_matches_current", false, func(tx *sql.Tx) error {
		row, err := snapshot(ctx, tx, m.SessionID)
		if err != nil || row == nil {
			return err
		}
		r, err := record(ctx, tx, m.Identity)
		if err != nil || r == nil {
			return err
		}
		match = row.identity == m.Identity && row.generation == m.Generation && row.version == m.CheckpointVersion &&
			string(row.data) == string(m.Data) && row.fence <= m.FencingToken &&
			r.SessionID == m.SessionID && r.Generation == m.Generation && r.CheckpointVersion == m.CheckpointVersion &&
			r.fence == m.FencingToken
		return nil
	})
	return match, err
}

// revision is what delete_session_snapshot_if_current_revision compares:
// the hex SHA-256 of the bytes (continuity.SnapshotRevision).
func revision(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (s *Store) DeleteSessionSnapshotIfCurrentRevision(ctx context.Context, session conformance.ContinuitySessionID, expected string) (bool, error) {
	var deleted bool
	err := s.tx(ctx, "delete_session_snapshot_if_current_revision", true, func(tx *sql.Tx) error {
		row, err := snapshot(ctx, tx, session)
		if err != nil || row == nil || revision(row.data) != expected {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM snapshots WHERE session = ?`, session)
		deleted = err == nil
		return err
	})
	return deleted, err
}

func (s *Store) SaveSessionSnapshot(ctx context.Context, w conformance.ContinuitySnapshotWrite) error {
	const op = "save_session_snapshot"
	return s.tx(ctx, op, true, func(tx *sql.Tx) error {
		r, err := record(ctx, tx, w.Identity)
		if err != nil {
			return err
		}
		if r != nil {
			switch {
			case r.SessionID != w.SessionID || r.Generation != w.Generation:
				return conformance.Errorf(conformance.ErrContinuityNotFound, "identity %s is at session %s generation %d", w.Identity, r.SessionID, r.Generation)
			case w.FencingToken < r.fence:
				return staleFence(w.Identity, w.FencingToken, r.fence)
			case w.CheckpointVersion <= r.CheckpointVersion:
				return conformance.Errorf(conformance.ErrContinuityStaleCheckpointVersion, "identity %s is at checkpoint version %d", w.Identity, r.CheckpointVersion)
			}
		}
		row, err := snapshot(ctx, tx, w.SessionID)
		if err != nil {
			return err
		}
		if row != nil && (row.identity != w.Identity || row.generation != w.Generation) {
			return conformance.Errorf(conformance.ErrContinuityCorruption, "session %s's snapshot belongs to %s generation %d", w.SessionID, row.identity, row.generation)
		}
		data := w.Data
		if data == nil {
			data = []byte{}
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO snapshots (session, identity, generation, version, fence, data)
			VALUES (?, ?, ?, ?, ?, ?)`, w.SessionID, w.Identity, w.Generation, w.CheckpointVersion, w.FencingToken, data); err != nil {
			return err
		}
		if err := conformance.CrashPoint(ctx, "snapshot_written"); err != nil {
			return err
		}
		if r == nil {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE records SET version = ?, fence = ? WHERE identity = ?`, w.CheckpointVersion, w.FencingToken, w.Identity)
		return err
	})
}

// decideUpsert is what an upsert of rec under fence writes over r (nil:
// no record), or why it may not.
func decideUpsert(r *stored, rec conformance.ContinuityRecord, fence conformance.ContinuityFencingToken) (conformance.ContinuityRecord, error) {
	switch {
	case r == nil:
		return rec, nil
	case fence < r.fence:
		return rec, staleFence(rec.Identity, fence, r.fence)
	case rec.Generation < r.Generation:
		return rec, conformance.Errorf(conformance.ErrContinuityStaleContinuityGeneration, "identity %s is at generation %d", rec.Identity, r.Generation)
	case rec.Generation == r.Generation:
		rec.CheckpointVersion = max(rec.CheckpointVersion, r.CheckpointVersion)
	}
	return rec, nil
}

func writeRecord(ctx context.Context, tx *sql.Tx, rec conformance.ContinuityRecord, fence conformance.ContinuityFencingToken) error {
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO records (identity, runtime, session, generation, version, fence)
		VALUES (?, ?, ?, ?, ?, ?)`, rec.Identity, rec.AgentRuntimeID, rec.SessionID, rec.Generation, rec.CheckpointVersion, fence)
	return err
}

func (s *Store) UpsertContinuityRecord(ctx context.Context, rec conformance.ContinuityRecord, fence conformance.ContinuityFencingToken) error {
	const op = "upsert_continuity_record"
	if s.racy {
		// The deliberate bug: the decision in a transaction of its own,
		// the write in another. Between them another process may write a
		// newer fence, which this older one then overwrites.
		var decided conformance.ContinuityRecord
		if err := s.tx(ctx, op, false, func(tx *sql.Tx) error {
			r, err := record(ctx, tx, rec.Identity)
			if err == nil {
				decided, err = decideUpsert(r, rec, fence)
			}
			return err
		}); err != nil {
			return err
		}
		return s.tx(ctx, op, true, func(tx *sql.Tx) error { return writeRecord(ctx, tx, decided, fence) })
	}
	return s.tx(ctx, op, true, func(tx *sql.Tx) error {
		r, err := record(ctx, tx, rec.Identity)
		if err != nil {
			return err
		}
		if rec, err = decideUpsert(r, rec, fence); err != nil {
			return err
		}
		return writeRecord(ctx, tx, rec, fence)
	})
}

func (s *Store) RollbackContinuityRecord(ctx context.Context, attempt conformance.ContinuityRecord, previous *conformance.ContinuityRecord, fence conformance.ContinuityFencingToken) error {
	const op = "rollback_continuity_record"
	if previous != nil && previous.Identity != attempt.Identity {
		return conformance.Errorf(conformance.ErrContinuityCorruption, "rollback of %s to a record of %s", attempt.Identity, previous.Identity)
	}
	return s.tx(ctx, op, true, func(tx *sql.Tx) error {
		r, err := record(ctx, tx, attempt.Identity)
		switch {
		case err != nil:
			return err
		case r == nil:
			return conformance.Errorf(conformance.ErrContinuityNotFound, "identity %s has no record", attempt.Identity)
		case r.fence != fence:
			return staleFence(attempt.Identity, fence, r.fence)
		case r.AgentRuntimeID != attempt.AgentRuntimeID || r.SessionID != attempt.SessionID || r.Generation != attempt.Generation:
			return conformance.Errorf(conformance.ErrContinuityStaleContinuityGeneration, "identity %s has moved on from the attempt", attempt.Identity)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE identity = ? AND generation = ?`, attempt.Identity, attempt.Generation); err != nil {
			return err
		}
		if err := conformance.CrashPoint(ctx, "snapshots_dropped"); err != nil {
			return err
		}
		if previous == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM records WHERE identity = ?`, attempt.Identity)
			return err
		}
		return writeRecord(ctx, tx, *previous, fence)
	})
}

func (s *Store) DeleteContinuityRecord(ctx context.Context, id conformance.ContinuityIdentity, fence conformance.ContinuityFencingToken) error {
	const op = "delete_continuity_record"
	return s.tx(ctx, op, true, func(tx *sql.Tx) error {
		r, err := record(ctx, tx, id)
		if err != nil {
			return err
		}
		if r != nil && fence < r.fence {
			return staleFence(id, fence, r.fence)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE identity = ?`, id); err != nil {
			return err
		}
		if err := conformance.CrashPoint(ctx, "snapshots_dropped"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM records WHERE identity = ?`, id)
		return err
	})
}

func (s *Store) MaxFencingToken(ctx context.Context) (conformance.ContinuityFencingToken, error) {
	var fence conformance.ContinuityFencingToken
	err := s.tx(ctx, "max_fencing_token", false, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT MAX(
			(SELECT COALESCE(MAX(fence), 0) FROM records),
			(SELECT COALESCE(MAX(fence), 0) FROM snapshots))`).Scan(&fence)
	})
	return fence, err
}
