package main

import "github.com/storecheck/storecheck/internal/bugs"

func init() {
	for b, specs := range map[bugs.Bug][]string{
		bugs.RuntimeLeaseLiveAtExpiry: {
			"runtime try_claim_session_execution_lease treats a lease whose expiry equals now as not live: another owner wins it with the next fencing token",
			"runtime renew_session_execution_lease renews 1ms before expiry, and fails session_execution_lease_expired exactly at expiry and after",
			"runtime commit_runtime_state commits 1ms before the lease expires, and fails session_execution_lease_expired at expiry and after",
			"runtime claim_ready_queued_work does not claim a batch a live claim holds; at that claim's expiry it is claimed again, its fence up by one",
			"runtime cancel_queued_work_batch keeps a batch a live claim holds and answers none, until the claim's expiry",
			"runtime list_pending_queued_work lists the unclaimed batches and those whose claim expired, delayed ones included, in enqueue order",
		},
		bugs.RuntimeFenceNotBumped: {
			"runtime try_claim_session_execution_lease treats a lease whose expiry equals now as not live: another owner wins it with the next fencing token",
			"runtime try_claim_session_execution_lease grants the same owner a new lease after expiry: a new token, the next fencing token, claimed at now",
			"runtime try_claim_session_execution_lease keeps counting fencing tokens across releases",
		},
		bugs.RuntimeRenewAfterExpiry: {
			"runtime renew_session_execution_lease renews 1ms before expiry, and fails session_execution_lease_expired exactly at expiry and after",
		},
		bugs.RuntimeCommitWithoutLease: {
			"runtime commit_runtime_state rejects a commit without a lease with session_execution_lease_expired and leaves no trace",
			"runtime commit_runtime_state rejects a lease that is not the live one (another owner, token, fencing token or session, or released) with session_execution_lease_expired",
			"runtime commit_runtime_state commits 1ms before the lease expires, and fails session_execution_lease_expired at expiry and after",
		},
		bugs.RuntimeTurnReplayAnyHash: {
			"runtime commit_runtime_state rejects a replay of a committed turn with another hash with runtime_turn_commit_conflict",
		},
		bugs.RuntimeHeadRevisionUnchecked: {
			"runtime commit_runtime_state rejects any other expected_head_revision with head_revision_conflict and leaves no trace",
		},
		bugs.RuntimePartialCommit: {
			"runtime commit_runtime_state rejects completed claims not held (another token, claim or session) with queued_work_claim_expired, and the head does not move",
		},
		bugs.RuntimeHalfOwnedClaim: {
			"runtime claim_ready_queued_work never returns a claim that owns only some of its batches",
			"runtime two handles on one database a second handle cannot win the session lease or a queued work claim the first holds",
		},
		bugs.RuntimeClaimIgnoresAvailableAt: {
			"runtime claim_ready_queued_work skips delayed work until its available_at: 1ms before it is not claimed, at available_at it is, and after it",
		},
		bugs.RuntimeCancelLiveClaim: {
			"runtime cancel_queued_work_batch keeps a batch a live claim holds and answers none, until the claim's expiry",
			"runtime two handles on one database a second handle cannot win the session lease or a queued work claim the first holds",
		},
		bugs.RuntimeReleaseIgnoresFence: {
			"runtime release_session_execution_lease changes nothing when the owner, token, fencing token or session differ",
		},
		bugs.RuntimeLoadNodeShowsTombstoned: {
			"runtime load_node returns none for an unknown node and for a tombstoned one",
			"runtime tombstone_nodes takes the nodes out of load_node and both graph scopes; unknown ids are ignored",
		},
		bugs.RuntimeAttachmentCommitTimeMoves: {
			"runtime commit_runtime_state marks this session's staged attachments committed once: a later commit keeps the first commit time",
		},
		// Deep for the simulator (ten enqueues), shallow for a spec.
		bugs.RuntimeClaimOrderedByBatchID: {
			"runtime claim_ready_queued_work claims in enqueue order however many batches came before: of twelve queued, the first two",
		},
		// The bounds' bugs (internal/bugs/bounds.go).
		bugs.RuntimeClaimExceedsMaxBatches: {
			"runtime claim_ready_queued_work claims at most max_batches: all of one fewer or of max_batches claimable batches, the first max_batches of one more",
		},
		bugs.RuntimeMaxZeroClaimsAll: {
			"runtime claim_ready_queued_work claims nothing when max_batches is 0, even without a live lease, and the first batch when it is 1",
		},
		bugs.RuntimeRevisionNotBumped: {
			"runtime commit_runtime_state moves the revision up by one per commit and makes the last checkpoint and config the head's",
		},
		// The sizes' bugs (spec/sizes.go).
		bugs.RuntimeClaimScanBeforeFilter: {
			"runtime claim_ready_queued_work claims ready work queued behind 100 batches not yet available",
		},
		bugs.RuntimeClaimFenceNotBumped: {
			"runtime claim_ready_queued_work claims ready batches in enqueue order until now + ttl, each claimed batch's claim fencing token up by one",
			"runtime claim_ready_queued_work does not claim a batch a live claim holds; at that claim's expiry it is claimed again, its fence up by one",
		},
		bugs.RuntimeAppendOverwritesNode: {
			"runtime commit_runtime_state rejects an append of a node id already stored (even tombstoned) or repeated in the delta with graph_node_conflict or io, and leaves no trace",
		},
	} {
		expectedFailures[b] = specs
	}
}
