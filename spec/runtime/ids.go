package runtime

import "fmt"

// The formats the seed states of what the store mints. Everything else the
// store mints (batch ids, claim ids, claim tokens, checkpoint refs) the seed
// derives in code it does not show (derive_batch_id,
// QueuedWorkClaimLease::derive, put_checkpoint_conn): those are opaque (rule
// runtime.minted_ids), learned from the answer that minted them and compared
// up to a consistent renaming, never by format.

// LeaseToken is the token of a session execution lease granted at now
// (unix ms) with fencing token fence: the seed's
// format!("{session_id}:{owner_id}:{now}:{fencing_token}") (rule
// runtime.try_claim_session_execution_lease.token_format).
func LeaseToken(session, owner string, now int64, fence uint64) string {
	return fmt.Sprintf("%s:%s:%d:%d", session, owner, now, fence)
}

// ItemID is the id of the index-th payload (from 0) of the batch the store
// answered with batchID: the seed's format!("{batch_id}:item:{index}") (rule
// runtime.enqueue_queued_work.item_ids).
func ItemID(batchID string, index int) string { return fmt.Sprintf("%s:item:%d", batchID, index) }
