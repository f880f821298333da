package runtime

import "fmt"

// The ids and tokens the store mints are part of the contract: a caller
// presents them back (a lease fence, a completed claim, a cancel), and the
// checkers compare answers exactly, so every backend mints the same ones.
//
// The lease token is the seed's own format (format!("{session_id}:
// {owner_id}:{now}:{fencing_token}")), and so is the item id ("{batch_id}:
// item:{index}"). The seed derives batch ids and claim ids in code it does
// not show (derive_batch_id, the claim lease); storecheck defines them here.

// LeaseToken is the token of a session execution lease granted at now
// (unix ms) with fencing token fence.
func LeaseToken(session, owner string, now int64, fence uint64) string {
	return fmt.Sprintf("%s:%s:%d:%d", session, owner, now, fence)
}

// BatchID is the id of the store's n-th enqueued batch: n counts every
// enqueue of the store, of every session, from 1, and is never reused (a
// cancelled or completed batch's number stays taken).
func BatchID(session string, n int64) string { return fmt.Sprintf("%s:batch:%d", session, n) }

// ItemID is the id of the index-th payload (from 0) of a batch.
func ItemID(batchID string, index int) string { return fmt.Sprintf("%s:item:%d", batchID, index) }

// ClaimID is the id of a claim whose first batch is batchID, at that batch's
// claim fencing token after the claim.
func ClaimID(session, batchID string, fence uint64) string {
	return fmt.Sprintf("%s:claim:%s:%d", session, batchID, fence)
}

// ClaimToken is the lease token of a claim made by owner at now (unix ms).
func ClaimToken(claimID, owner string, now int64) string {
	return fmt.Sprintf("%s:%s:%d", claimID, owner, now)
}
