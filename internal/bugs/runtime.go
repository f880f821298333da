package bugs

// The runtime store's bugs, each from a rule of spec/runtime or a comment of
// the seed (lash sqlite store, persistence.rs).
var (
	// RuntimeLeaseLiveAtExpiry treats a lease or claim whose expiry equals
	// now as live (>= where the contract says >).
	RuntimeLeaseLiveAtExpiry = Bug{"runtime_lease_live_at_expiry"}
	// RuntimeFenceNotBumped grants a new session lease with the previous
	// lease's fencing token instead of the next one.
	RuntimeFenceNotBumped = Bug{"runtime_fence_not_bumped"}
	// RuntimeRenewAfterExpiry renews a lease whose owner, token and fence
	// match without checking that it is still live.
	RuntimeRenewAfterExpiry = Bug{"runtime_renew_after_expiry"}
	// RuntimeCommitWithoutLease accepts a commit whose lease is missing or
	// is not the live one.
	RuntimeCommitWithoutLease = Bug{"runtime_commit_without_lease"}
	// RuntimeTurnReplayAnyHash answers a committed turn's first result to
	// a replay with another hash.
	RuntimeTurnReplayAnyHash = Bug{"runtime_turn_replay_any_hash"}
	// RuntimeHeadRevisionUnchecked ignores expected_head_revision.
	RuntimeHeadRevisionUnchecked = Bug{"runtime_head_revision_unchecked"}
	// RuntimePartialCommit moves the head before it checks the completed
	// claims, and commits that write when the check fails (the seed's
	// "does not leave the partial transaction committed").
	RuntimePartialCommit = Bug{"runtime_partial_commit"}
	// RuntimeHalfOwnedClaim reads claim candidates without the claim filter
	// (a stale view, as a read outside the write lock gives) and, when a
	// batch's guarded update changes no row, keeps the claim going instead
	// of rolling it back: the claim names batches another claim holds.
	RuntimeHalfOwnedClaim = Bug{"runtime_half_owned_claim"}
	// RuntimeClaimIgnoresAvailableAt claims delayed work before its
	// available_at.
	RuntimeClaimIgnoresAvailableAt = Bug{"runtime_claim_ignores_available_at"}
	// RuntimeCancelLiveClaim cancels a batch a live claim holds.
	RuntimeCancelLiveClaim = Bug{"runtime_cancel_live_claim"}
	// RuntimeAttachmentCommitTimeMoves overwrites an attachment's commit
	// time on every commit that names it (the seed's COALESCE dropped).
	RuntimeAttachmentCommitTimeMoves = Bug{"runtime_attachment_commit_time_moves"}
	// RuntimeAppendOverwritesNode lets an append replace a stored node
	// (INSERT OR REPLACE) instead of failing.
	RuntimeAppendOverwritesNode = Bug{"runtime_append_overwrites_node"}
	// RuntimeLeaseClaimOutsideTx reads the session lease in one
	// transaction and writes the grant in another: two owners that both read
	// a free lease both win it. Only concurrency exposes it.
	RuntimeLeaseClaimOutsideTx = Bug{"runtime_lease_claim_outside_tx"}
)

// Runtime lists the runtime store's bugs.
var Runtime = register(RuntimeLeaseLiveAtExpiry, RuntimeFenceNotBumped, RuntimeRenewAfterExpiry,
	RuntimeCommitWithoutLease, RuntimeTurnReplayAnyHash, RuntimeHeadRevisionUnchecked, RuntimePartialCommit,
	RuntimeHalfOwnedClaim, RuntimeClaimIgnoresAvailableAt, RuntimeCancelLiveClaim,
	RuntimeAttachmentCommitTimeMoves, RuntimeAppendOverwritesNode, RuntimeLeaseClaimOutsideTx)
