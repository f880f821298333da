package bugs

import (
	"context"
	"maps"
	"sync"

	"github.com/storecheck/storecheck/adapters"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// continuityBug registers a bug of the continuity store: the reference
// opened with rules, then wrapped by wrap (nil: as it is).
func continuityBug(name string, rules refcontinuity.Rules, wrap func(*refcontinuity.Store) c.Store) Bug {
	return register(name, c.StoreName, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		s, err := refcontinuity.Open(ctx, refcontinuity.Options{Path: o.Path, Rules: rules})
		if err != nil {
			return nil, err
		}
		var st c.Store = s
		if wrap != nil {
			st = wrap(s)
		}
		return sqlitedb.Target(st, c.Apply), nil
	})
}

// The continuity store's bugs.
var (
	// ContinuityFenceRejectsEqual compares fences with <= where the
	// contract says <: a writer presenting the stored fence is refused.
	ContinuityFenceRejectsEqual = continuityBug("continuity_fence_rejects_equal",
		refcontinuity.Rules{FenceNotLower: func(presented, stored c.FencingToken) bool { return presented > stored }}, nil)
	// ContinuityFenceAcceptsOlder lets a fence one below the stored one
	// through (an off-by-one on the stale-fence comparison).
	ContinuityFenceAcceptsOlder = continuityBug("continuity_fence_accepts_older",
		refcontinuity.Rules{FenceNotLower: func(presented, stored c.FencingToken) bool { return presented+1 >= stored }}, nil)
	// ContinuityDeleteSkipsFence deletes a record without checking the fence.
	ContinuityDeleteSkipsFence = continuityBug("continuity_delete_skips_fence", refcontinuity.Rules{},
		func(s *refcontinuity.Store) c.Store {
			return deleteSkipsFence{s, s.WithRules(refcontinuity.Rules{FenceNotLower: always[c.FencingToken]})}
		})
	// ContinuityGenerationRegression lets a newer fence take a record back
	// to an older generation.
	ContinuityGenerationRegression = continuityBug("continuity_generation_regression",
		refcontinuity.Rules{GenerationNotLower: always[c.Generation]}, nil)
	// ContinuityVersionResetOnRebind takes the presented checkpoint version
	// even within the same generation.
	ContinuityVersionResetOnRebind = continuityBug("continuity_version_reset_on_rebind",
		refcontinuity.Rules{CheckpointVersionKept: func(presented, _ c.CheckpointVersion) c.CheckpointVersion { return presented }}, nil)
	// ContinuitySnapshotOwnerUnchecked overwrites a snapshot row owned by
	// another identity or generation.
	ContinuitySnapshotOwnerUnchecked = continuityBug("continuity_snapshot_owner_unchecked",
		refcontinuity.Rules{SnapshotOwner: always[refcontinuity.Owner]}, nil)
	// ContinuityMatchIgnoresBytes answers whether a candidate is the
	// current snapshot without comparing its bytes: a snapshot rewritten
	// with other bytes at the same version still "matches" a caller
	// holding the old ones. Only a candidate that matches in everything
	// else shows it.
	ContinuityMatchIgnoresBytes = continuityBug("continuity_match_ignores_bytes",
		refcontinuity.Rules{MatchBytes: `length(?6) >= 0`}, nil)
	// ContinuityMaxFenceRecordsOnly computes the fencing high-water mark
	// over the records table alone.
	ContinuityMaxFenceRecordsOnly = continuityBug("continuity_max_fence_records_only",
		refcontinuity.Rules{HighWater: func(records, _ c.FencingToken) c.FencingToken { return records }}, nil)
	// ContinuityUpsertCheckOutsideTx checks the fence and generation in one
	// transaction and writes in another: a race lets an older fence land
	// after a newer one was acknowledged. Only concurrency exposes it.
	ContinuityUpsertCheckOutsideTx = continuityBug("continuity_upsert_check_outside_tx", refcontinuity.Rules{},
		func(s *refcontinuity.Store) c.Store { return &racyUpsert{Store: s} })
	// ContinuityOneProcessCheckOutsideTx is the check-then-write race of
	// ContinuityUpsertCheckOutsideTx in a store declared as the seed's is
	// ("Designed for single-process": no shared_files, so it is simulated
	// as one process) serving its callers at once (concurrent_requests, as
	// the seed's store serves them on worker threads behind its writer
	// mutex): an older fence lands after a newer one was acknowledged, and
	// only two callers of the one process in flight together show it.
	ContinuityOneProcessCheckOutsideTx = declared(continuityBug("continuity_one_process_check_outside_tx", refcontinuity.Rules{},
		func(s *refcontinuity.Store) c.Store { return &racyUpsert{Store: s} }), oneProcessServingAtOnce)
	// ContinuityWriteBehind acknowledges record upserts from a memory
	// buffer and writes them to the database a few at a time (and at
	// Close): a crash loses upserts it already acknowledged. Only a crash
	// exposes it to one process.
	ContinuityWriteBehind = continuityBug("continuity_write_behind", refcontinuity.Rules{},
		func(s *refcontinuity.Store) c.Store { return &writeBehind{Store: s} })
	// ContinuityProcessLock guards the upsert's check and write with a lock
	// of this process instead of one database transaction: safe while one
	// process writes, broken by a second process on the same file (the
	// seed's "second handle writing around the lock").
	ContinuityProcessLock = continuityBug("continuity_process_lock", refcontinuity.Rules{},
		func(s *refcontinuity.Store) c.Store { return &racyUpsert{Store: s, lock: new(sync.Mutex)} })
	// ContinuitySnapshotVersionAcceptsEqual saves a snapshot at the
	// record's own checkpoint version (>= where the seed says >): a second
	// save at one version overwrites the first.
	ContinuitySnapshotVersionAcceptsEqual = continuityBug("continuity_snapshot_version_accepts_equal",
		refcontinuity.Rules{VersionAdvances: func(presented, stored c.CheckpointVersion) bool { return presented >= stored }}, nil)
	// ContinuityRollbackFenceNotLower checks a rollback's fence as the
	// other writes do (not lower) where the seed wants it exact: a rollback
	// under a fence above the record's goes through.
	ContinuityRollbackFenceNotLower = continuityBug("continuity_rollback_fence_not_lower",
		refcontinuity.Rules{RollbackFence: fenceNotLower}, nil)
	// ContinuityMatchRowFenceStrict matches a snapshot only when its own
	// fence is below the candidate's (< where the seed says <=): a snapshot
	// saved under the current fence never matches.
	ContinuityMatchRowFenceStrict = continuityBug("continuity_match_row_fence_strict",
		refcontinuity.Rules{MatchRowFence: `snap.fencing_token < ?5`}, nil)
	// ContinuityResolveDropsLastChunk looks identities up spec.LookupChunk
	// at a time and, past the first chunk, stops at a partial one (a chunk
	// loop that counts whole chunks): a resolve_many of 51 identities
	// answers 50. No workload of a handful of identities shows it.
	ContinuityResolveDropsLastChunk = continuityBug("continuity_resolve_drops_last_chunk", refcontinuity.Rules{},
		func(s *refcontinuity.Store) c.Store { return chunkedResolve{s} })
)

// chunkedResolve resolves identities by chunks of spec.LookupChunk, and
// drops the last partial chunk past the first.
type chunkedResolve struct{ *refcontinuity.Store }

func (s chunkedResolve) ResolveMany(ctx context.Context, ids []c.Identity) (map[c.Identity]c.Resolution, error) {
	out := map[c.Identity]c.Resolution{}
	for start := 0; start < len(ids); start += spec.LookupChunk {
		end := min(start+spec.LookupChunk, len(ids))
		if start > 0 && end-start < spec.LookupChunk {
			break
		}
		part, err := s.Store.ResolveMany(ctx, ids[start:end])
		if err != nil {
			return nil, err
		}
		maps.Copy(out, part)
	}
	return out, nil
}

// oneProcessServingAtOnce is a store declared as the seed's continuity store
// runs: on one process (no shared_files), its callers served at once
// (concurrent_requests).
func oneProcessServingAtOnce(ref spec.Capabilities) spec.Capabilities {
	ref.SharedFiles, ref.ConcurrentRequests = false, true
	return ref
}

func fenceNotLower(presented, stored c.FencingToken) bool { return presented >= stored }

// Continuity lists the continuity store's bugs.
var Continuity = Of(c.StoreName)

// deleteSkipsFence deletes through a view whose fence rule accepts any
// fence.
type deleteSkipsFence struct {
	*refcontinuity.Store
	unfenced *refcontinuity.Store
}

func (d deleteSkipsFence) DeleteContinuityRecord(ctx context.Context, id c.Identity, fence c.FencingToken) error {
	return d.unfenced.DeleteContinuityRecord(ctx, id, fence)
}

// writeDecided writes rec, decided on an earlier read, without deciding
// again: the reference's upsert with a decision that answers rec.
func writeDecided(ctx context.Context, s *refcontinuity.Store, rec c.Record, fence c.FencingToken) error {
	return s.WithRules(refcontinuity.Rules{Upsert: func(*refcontinuity.Stored, c.Record, c.FencingToken) (c.Record, error) {
		return rec, nil
	}}).UpsertContinuityRecord(ctx, rec, fence)
}

// racyUpsert decides an upsert on what one transaction read and writes it
// in another, so another writer can come between; with lock, under a lock
// of this handle, which orders this handle's upserts and no other's.
type racyUpsert struct {
	*refcontinuity.Store
	lock *sync.Mutex
}

func (u *racyUpsert) UpsertContinuityRecord(ctx context.Context, r c.Record, fence c.FencingToken) error {
	if u.lock != nil {
		u.lock.Lock()
		defer u.lock.Unlock()
	}
	stored, err := u.Stored(ctx, r.Identity)
	if err != nil {
		return err
	}
	rec, err := refcontinuity.Rules{}.DecideUpsert(stored, r, fence)
	if err != nil {
		return err
	}
	return writeDecided(ctx, u.Store, rec, fence)
}

// writeBehind checks record upserts against the database and a memory
// buffer, acknowledges them, and writes them three at a time; every other
// operation, and Close, writes the buffer first, so that one process never
// notices. A crash (Crash) loses the upserts it acknowledged.
type writeBehind struct {
	*refcontinuity.Store
	mu      sync.Mutex
	pending []refcontinuity.Stored
}

// Crash closes the store as a killed process would leave it: the buffer is
// lost.
func (w *writeBehind) Crash() error {
	w.mu.Lock()
	w.pending = nil
	w.mu.Unlock()
	return w.Store.Close()
}

func (w *writeBehind) UpsertContinuityRecord(ctx context.Context, r c.Record, fence c.FencingToken) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var stored *refcontinuity.Stored
	for i := len(w.pending) - 1; i >= 0 && stored == nil; i-- {
		if w.pending[i].Identity == r.Identity {
			p := w.pending[i]
			stored = &p
		}
	}
	if stored == nil {
		var err error
		if stored, err = w.Stored(ctx, r.Identity); err != nil {
			return err
		}
	}
	rec, err := refcontinuity.Rules{}.DecideUpsert(stored, r, fence)
	if err != nil {
		return err
	}
	w.pending = append(w.pending, refcontinuity.Stored{Record: rec, Fence: fence})
	if len(w.pending) >= 3 {
		return w.write(ctx)
	}
	return nil
}

// flush writes the buffer.
func (w *writeBehind) flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write(ctx)
}

func (w *writeBehind) write(ctx context.Context) error {
	pending := w.pending
	w.pending = nil
	for _, p := range pending {
		if err := writeDecided(ctx, w.Store, p.Record, p.Fence); err != nil {
			return err
		}
	}
	return nil
}

func (w *writeBehind) Close() error {
	w.flush(context.Background())
	return w.Store.Close()
}

func (w *writeBehind) ResolveMany(ctx context.Context, ids []c.Identity) (map[c.Identity]c.Resolution, error) {
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return w.Store.ResolveMany(ctx, ids)
}

func (w *writeBehind) LoadSessionSnapshot(ctx context.Context, session c.SessionID) (*c.Snapshot, error) {
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return w.Store.LoadSessionSnapshot(ctx, session)
}

func (w *writeBehind) SessionSnapshotMatchesCurrent(ctx context.Context, m c.MatchCandidate) (bool, error) {
	if err := w.flush(ctx); err != nil {
		return false, err
	}
	return w.Store.SessionSnapshotMatchesCurrent(ctx, m)
}

func (w *writeBehind) DeleteSessionSnapshotIfCurrentRevision(ctx context.Context, session c.SessionID, rev string) (bool, error) {
	if err := w.flush(ctx); err != nil {
		return false, err
	}
	return w.Store.DeleteSessionSnapshotIfCurrentRevision(ctx, session, rev)
}

func (w *writeBehind) SaveSessionSnapshot(ctx context.Context, sw c.SnapshotWrite) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.Store.SaveSessionSnapshot(ctx, sw)
}

func (w *writeBehind) RollbackContinuityRecord(ctx context.Context, attempt c.Record, previous *c.Record, fence c.FencingToken) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.Store.RollbackContinuityRecord(ctx, attempt, previous, fence)
}

func (w *writeBehind) DeleteContinuityRecord(ctx context.Context, id c.Identity, fence c.FencingToken) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.Store.DeleteContinuityRecord(ctx, id, fence)
}

func (w *writeBehind) MaxFencingToken(ctx context.Context) (c.FencingToken, error) {
	if err := w.flush(ctx); err != nil {
		return 0, err
	}
	return w.Store.MaxFencingToken(ctx)
}
