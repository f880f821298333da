package runtime

import "github.com/storecheck/storecheck/spec"

// invalidAnyPoint is the rule of every invalid_argument: a value outside
// the contract's sets, which the seed's Rust types make impossible.
const invalidAnyPoint = "runtime.invalid_argument_at_any_point"

// Refusals are the error kinds each operation may answer, each with the
// rule that makes it: the error cells of the store's coverage matrix
// (spec.Contract.Cells). Every operation may also answer io, when the store
// cannot do its work.
var Refusals = map[string][]spec.Refusal{
	"commit_runtime_state": {
		{Kind: ErrSessionBindingMismatch, Rule: "runtime.commit_runtime_state.binding"},
		{Kind: ErrRuntimeTurnCommitConflict, Rule: "runtime.commit_runtime_state.turn_session"},
		{Kind: ErrRuntimeTurnCommitConflict, Rule: "runtime.commit_runtime_state.turn_other_hash"},
		{Kind: ErrSessionExecutionLeaseExpired, Rule: "runtime.commit_runtime_state.lease_required"},
		{Kind: ErrSessionExecutionLeaseExpired, Rule: "runtime.commit_runtime_state.lease_live"},
		{Kind: ErrHeadRevisionConflict, Rule: "runtime.commit_runtime_state.expected_revision"},
		{Kind: ErrQueuedWorkClaimExpired, Rule: "runtime.commit_runtime_state.completed_claim_session"},
		{Kind: ErrQueuedWorkClaimExpired, Rule: "runtime.commit_runtime_state.completed_claim_held"},
		{Kind: ErrGraphNodeConflict, Rule: "runtime.commit_runtime_state.graph_repeated_node"},
		// The seed's failing INSERT surfaces a repeated node as an I/O error.
		{Kind: ErrIO, Rule: "runtime.commit_runtime_state.graph_repeated_node"},
		{Kind: ErrInvalidArgument, Rule: invalidAnyPoint},
	},
	"renew_session_execution_lease": {
		{Kind: ErrSessionExecutionLeaseExpired, Rule: "runtime.renew_session_execution_lease.live_match"},
	},
	"enqueue_queued_work": {
		{Kind: ErrInvalidArgument, Rule: invalidAnyPoint},
	},
	"claim_ready_queued_work": {
		{Kind: ErrSessionExecutionLeaseExpired, Rule: "runtime.claim_ready_queued_work.lease_live"},
		{Kind: ErrInvalidArgument, Rule: invalidAnyPoint},
	},
	"renew_queued_work_claim": {
		{Kind: ErrQueuedWorkClaimExpired, Rule: "runtime.renew_queued_work_claim.no_expiry_check"},
		{Kind: ErrQueuedWorkClaimExpired, Rule: "runtime.renew_queued_work_claim.changed"},
	},
}
