package continuity

import "github.com/storecheck/storecheck/spec"

// Refusals are the error kinds each operation may answer, each with the
// rule that makes it: the error cells of the store's coverage matrix
// (spec.Contract.Cells). Every operation may also answer io, when the store
// cannot do its work.
var Refusals = map[string][]spec.Refusal{
	"delete_session_snapshot_if_current_revision": {
		// A backend of opaque revisions that cannot read the snapshot.
		{Kind: ErrIO, Rule: "continuity.delete_session_snapshot_if_current_revision.revision"},
	},
	"save_session_snapshot": {
		{Kind: ErrNotFound, Rule: "continuity.save_session_snapshot.record_must_match"},
		{Kind: ErrStaleFencingToken, Rule: "continuity.save_session_snapshot.fence_not_lower"},
		{Kind: ErrStaleCheckpointVersion, Rule: "continuity.save_session_snapshot.version_must_advance"},
		{Kind: ErrCorruption, Rule: "continuity.save_session_snapshot.snapshot_owner"},
	},
	"upsert_continuity_record": {
		{Kind: ErrStaleFencingToken, Rule: "continuity.upsert_continuity_record.fence_not_lower"},
		{Kind: ErrStaleFencingToken, Rule: "continuity.upsert_continuity_record.fence_before_generation"},
		{Kind: ErrStaleContinuityGeneration, Rule: "continuity.upsert_continuity_record.generation_not_lower"},
	},
	"rollback_continuity_record": {
		{Kind: ErrCorruption, Rule: "continuity.rollback_continuity_record.previous_same_identity"},
		{Kind: ErrNotFound, Rule: "continuity.rollback_continuity_record.record_required"},
		{Kind: ErrStaleFencingToken, Rule: "continuity.rollback_continuity_record.fence_exact"},
		{Kind: ErrStaleContinuityGeneration, Rule: "continuity.rollback_continuity_record.attempt_current"},
	},
	"delete_continuity_record": {
		{Kind: ErrStaleFencingToken, Rule: "continuity.delete_continuity_record.fence_not_lower"},
	},
}
