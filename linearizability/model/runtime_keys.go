package model

// How a runtime history is partitioned.

import (
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Keys partitions a runtime history by what an operation can read or write:
//   - "head": the session head, and with it the graph, checkpoints, token
//     ledger and recorded turns: a commit writes all of them together, and
//     the store binds to the session of its first commit, so every commit,
//     read of the head or graph, tombstone, vacuum and collection is one part;
//   - "lease:<session>": a session's lease; leases of sessions are
//     independent (try_claim/renew/release name one session), a commit joins
//     the lease it checks and the lease it releases, a claim of queued work
//     the lease it checks;
//   - "queue": every session's queued work together, because a batch id is
//     distinct from every batch of the store, and the initial claim fence is
//     the store's;
//   - "meta": the session meta;
//   - "attachment:<id>": one attachment (stage and load name one id; a commit
//     joins the ids it commits: whether one is marked depends only on its
//     own row and the commit's session).
//
// durability_tier touches no state and stands alone.
func (Runtime) Keys(op spec.Op) []string {
	lease := func(s string) string { return "lease:" + s }
	switch o := op.(type) {
	case runtimePart:
		return o.keys()
	case r.DurabilityTierOp:
		return []string{}
	case r.LoadSession, r.LoadNode, r.TombstoneNodes, r.Vacuum, r.GcUnreachable:
		return []string{"head"}
	case r.CommitRuntimeState:
		cm := o.Commit
		keys := []string{"head", lease(cm.SessionID)}
		if cm.ReleaseLease != nil {
			keys = append(keys, lease(cm.ReleaseLease.SessionID))
		}
		if len(cm.CompletedQueueClaims) > 0 {
			keys = append(keys, "queue")
		}
		for _, id := range cm.CommittedAttachmentIDs {
			keys = append(keys, "attachment:"+id)
		}
		return keys
	case r.TryClaimSessionExecutionLease:
		return []string{lease(o.SessionID)}
	case r.RenewSessionExecutionLease:
		return []string{lease(o.Fence.SessionID)}
	case r.ReleaseSessionExecutionLease:
		return []string{lease(o.Completion.SessionID)}
	case r.ClaimReadyQueuedWork:
		return []string{"queue", lease(o.SessionID)}
	case r.EnqueueQueuedWork, r.RenewQueuedWorkClaim, r.AbandonQueuedWorkClaim, r.CancelQueuedWorkBatch,
		r.ListQueuedWork, r.ListPendingQueuedWork:
		return []string{"queue"}
	case r.SaveSessionMeta, r.LoadSessionMeta:
		return []string{"meta"}
	case r.StageAttachment:
		return []string{"attachment:" + o.AttachmentID}
	case r.LoadAttachment:
		return []string{"attachment:" + o.AttachmentID}
	}
	return nil
}
