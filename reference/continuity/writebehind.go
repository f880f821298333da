package continuity

import (
	"context"
	"database/sql"
	"sync"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// WriteBehind is the deliberate bug bugs.ContinuityWriteBehind, as a wrapper
// of a correct store: record upserts are checked against the database and a
// memory buffer, acknowledged, and written three at a time; every other
// operation, and Close, writes the buffer first, so that one process never
// notices. A crash (Crash) loses the upserts it acknowledged.
type WriteBehind struct {
	*Store
	mu      sync.Mutex
	pending []record
}

// NewWriteBehind wraps s. Only storecheck's own tests and selftest open it.
func NewWriteBehind(s *Store) *WriteBehind { return &WriteBehind{Store: s} }

// Crash closes the store as a killed process would leave it: the buffer is
// lost.
func (w *WriteBehind) Crash() error {
	w.mu.Lock()
	w.pending = nil
	w.mu.Unlock()
	return w.Store.Close()
}

func (w *WriteBehind) UpsertContinuityRecord(ctx context.Context, r c.Record, fence c.FencingToken) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var cur *record
	for i := len(w.pending) - 1; i >= 0 && cur == nil; i-- {
		if w.pending[i].Identity == r.Identity {
			p := w.pending[i]
			cur = &p
		}
	}
	if cur == nil {
		if err := w.db.Read(ctx, "upsert_continuity_record", func(tx *sql.Tx) (err error) {
			cur, err = loadRecord(ctx, tx, r.Identity)
			return err
		}); err != nil {
			return err
		}
	}
	if cur != nil {
		if w.staleFence(fence, cur.fence) {
			return staleFenceError(r.Identity, fence, cur.fence)
		}
		if r.Generation < cur.Generation {
			return spec.Errorf(c.ErrStaleContinuityGeneration, "identity %s: presented generation %d, current %d",
				r.Identity, r.Generation, cur.Generation)
		}
		if r.Generation == cur.Generation && cur.CheckpointVersion > r.CheckpointVersion {
			r.CheckpointVersion = cur.CheckpointVersion
		}
	}
	w.pending = append(w.pending, record{Record: r, fence: fence})
	if len(w.pending) >= 3 {
		return w.write(ctx)
	}
	return nil
}

// flush writes the buffer.
func (w *WriteBehind) flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write(ctx)
}

func (w *WriteBehind) write(ctx context.Context) error {
	if len(w.pending) == 0 {
		return nil
	}
	pending := w.pending
	w.pending = nil
	return w.db.Write(ctx, "upsert_continuity_record", func(tx *sql.Tx) error {
		for _, p := range pending {
			if _, err := tx.ExecContext(ctx, `INSERT INTO continuity_records
				(identity, agent_runtime_id, session_id, generation, checkpoint_version, fencing_token) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT(identity) DO UPDATE SET agent_runtime_id = excluded.agent_runtime_id,
					session_id = excluded.session_id, generation = excluded.generation,
					checkpoint_version = excluded.checkpoint_version, fencing_token = excluded.fencing_token`,
				p.Identity, p.AgentRuntimeID, p.SessionID, p.Generation, p.CheckpointVersion, p.fence); err != nil {
				return err
			}
		}
		return nil
	})
}

func (w *WriteBehind) Close() error {
	w.flush(context.Background())
	return w.Store.Close()
}

func (w *WriteBehind) ResolveMany(ctx context.Context, ids []c.Identity) (map[c.Identity]c.Resolution, error) {
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return w.Store.ResolveMany(ctx, ids)
}

func (w *WriteBehind) LoadSessionSnapshot(ctx context.Context, session c.SessionID) (*c.Snapshot, error) {
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return w.Store.LoadSessionSnapshot(ctx, session)
}

func (w *WriteBehind) SessionSnapshotMatchesCurrent(ctx context.Context, m c.MatchCandidate) (bool, error) {
	if err := w.flush(ctx); err != nil {
		return false, err
	}
	return w.Store.SessionSnapshotMatchesCurrent(ctx, m)
}

func (w *WriteBehind) DeleteSessionSnapshotIfCurrentRevision(ctx context.Context, session c.SessionID, rev string) (bool, error) {
	if err := w.flush(ctx); err != nil {
		return false, err
	}
	return w.Store.DeleteSessionSnapshotIfCurrentRevision(ctx, session, rev)
}

func (w *WriteBehind) SaveSessionSnapshot(ctx context.Context, sw c.SnapshotWrite) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.Store.SaveSessionSnapshot(ctx, sw)
}

func (w *WriteBehind) RollbackContinuityRecord(ctx context.Context, attempt c.Record, previous *c.Record, fence c.FencingToken) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.Store.RollbackContinuityRecord(ctx, attempt, previous, fence)
}

func (w *WriteBehind) DeleteContinuityRecord(ctx context.Context, id c.Identity, fence c.FencingToken) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.Store.DeleteContinuityRecord(ctx, id, fence)
}

func (w *WriteBehind) MaxFencingToken(ctx context.Context) (c.FencingToken, error) {
	if err := w.flush(ctx); err != nil {
		return 0, err
	}
	return w.Store.MaxFencingToken(ctx)
}
