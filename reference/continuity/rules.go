package continuity

import (
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// Rules are the decisions of the contract this store takes on what it has
// read, each stated once as a plain function of the values it decides on,
// and named by the contract's rule (spec/continuity/rules.go). The store
// decides by the Rules it was opened with (Options.Rules); a nil rule is
// the contract's, so Rules{} is the contract. Breaking one rule is how
// storecheck's own selftest builds a deliberately broken store
// (internal/bugs): the reference itself knows of no bug.
type Rules struct {
	// FenceNotLower (continuity.*.fence_not_lower): a presented fencing
	// token keeps its authority unless it is lower than the stored one.
	// Upserts, snapshot saves and deletes check it.
	FenceNotLower func(presented, stored c.FencingToken) bool
	// GenerationNotLower (upsert_continuity_record.generation_not_lower):
	// an upsert may not take a record back to an older generation.
	GenerationNotLower func(presented, stored c.Generation) bool
	// CheckpointVersionKept (upsert_continuity_record.checkpoint_version_kept):
	// within one generation the durable checkpoint head never goes
	// backwards, even when the session is rebound: the version an upsert
	// writes over a record of the same generation.
	CheckpointVersionKept func(presented, stored c.CheckpointVersion) c.CheckpointVersion
	// VersionAdvances (save_session_snapshot.version_must_advance): a save
	// presents a checkpoint version above the record's.
	VersionAdvances func(presented, stored c.CheckpointVersion) bool
	// RollbackFence (rollback_continuity_record.fence_exact): a rollback
	// presents the stored fence exactly, so a newer attempt is never
	// clobbered.
	RollbackFence func(presented, stored c.FencingToken) bool
	// MatchRowFence (session_snapshot_matches_current.row_fence_is_provenance):
	// the SQL condition on the snapshot row (snap) a candidate's fence (?5)
	// must meet: the row's own fence is at or below it.
	MatchRowFence string
	// SnapshotOwner (save_session_snapshot.snapshot_owner): a session's
	// snapshot row may be written by the identity and generation that own
	// it, and by no other.
	SnapshotOwner func(owner, writer Owner) bool
	// HighWater (max_fencing_token.over_both_tables): the fencing
	// high-water mark, of the highest fence of the records and the highest
	// of the snapshots: over both.
	HighWater func(records, snapshots c.FencingToken) c.FencingToken
	// MatchBytes (session_snapshot_matches_current.whole_tuple): the SQL
	// condition on the snapshot row (snap) a candidate's bytes (?6) must
	// meet to match: the very bytes stored.
	MatchBytes string
	// Upsert is upsert_continuity_record's decision on the record it read
	// (nil: there is none), taken in the transaction that writes: the record
	// to write, or the error that refuses the upsert. The contract's is
	// DecideUpsert of these rules.
	Upsert func(stored *Stored, r c.Record, fence c.FencingToken) (c.Record, error)
}

// Stored is a continuity record as the store keeps it: with its fence.
type Stored struct {
	c.Record
	Fence c.FencingToken
}

// Owner is who a session snapshot belongs to.
type Owner struct {
	Identity   c.Identity
	Generation c.Generation
}

func fenceNotLower(presented, stored c.FencingToken) bool { return presented >= stored }

func generationNotLower(presented, stored c.Generation) bool { return presented >= stored }

func checkpointVersionKept(presented, stored c.CheckpointVersion) c.CheckpointVersion {
	return max(presented, stored)
}

func snapshotOwner(owner, writer Owner) bool { return owner == writer }

// complete is r with every nil rule the contract's.
func (r Rules) complete() Rules {
	r = r.withPredicates()
	if r.Upsert == nil {
		r.Upsert = r.DecideUpsert
	}
	return r
}

// withPredicates is r with every nil rule but Upsert the contract's.
func (r Rules) withPredicates() Rules {
	if r.FenceNotLower == nil {
		r.FenceNotLower = fenceNotLower
	}
	if r.GenerationNotLower == nil {
		r.GenerationNotLower = generationNotLower
	}
	if r.CheckpointVersionKept == nil {
		r.CheckpointVersionKept = checkpointVersionKept
	}
	if r.VersionAdvances == nil {
		r.VersionAdvances = func(presented, stored c.CheckpointVersion) bool { return presented > stored }
	}
	if r.RollbackFence == nil {
		r.RollbackFence = func(presented, stored c.FencingToken) bool { return presented == stored }
	}
	if r.MatchRowFence == "" {
		r.MatchRowFence = `snap.fencing_token <= ?5`
	}
	if r.SnapshotOwner == nil {
		r.SnapshotOwner = snapshotOwner
	}
	if r.MatchBytes == "" {
		r.MatchBytes = `snap.data = ?6`
	}
	if r.HighWater == nil {
		r.HighWater = func(records, snapshots c.FencingToken) c.FencingToken { return max(records, snapshots) }
	}
	return r
}

// DecideUpsert is the contract's decision of an upsert on the stored record
// (nil: none), by r's rules: the fence first, then the generation
// (upsert_continuity_record.fence_before_generation), and the checkpoint
// version kept within a generation.
func (r Rules) DecideUpsert(stored *Stored, rec c.Record, fence c.FencingToken) (c.Record, error) {
	r = r.withPredicates()
	if stored == nil {
		return rec, nil
	}
	if !r.FenceNotLower(fence, stored.Fence) {
		return c.Record{}, staleFenceError(rec.Identity, fence, stored.Fence)
	}
	if !r.GenerationNotLower(rec.Generation, stored.Generation) {
		return c.Record{}, spec.Errorf(c.ErrStaleContinuityGeneration, "identity %s: presented generation %d, current %d",
			rec.Identity, rec.Generation, stored.Generation)
	}
	if rec.Generation == stored.Generation {
		rec.CheckpointVersion = r.CheckpointVersionKept(rec.CheckpointVersion, stored.CheckpointVersion)
	}
	return rec, nil
}

func staleFenceError(id c.Identity, presented, stored c.FencingToken) error {
	return spec.Errorf(c.ErrStaleFencingToken, "identity %s: presented fence %d, current %d", id, presented, stored)
}
