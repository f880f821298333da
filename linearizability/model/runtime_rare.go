package model

// Events: the rare runtime events an operation reaches, which the simulator
// must reach.

import (
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The rare runtime events the simulator must reach.
const (
	EventLeaseTakenOverAfterExpiry   = "lease taken over after its expiry"
	EventLeaseExtendedByOwner        = "live lease extended by its owner"
	EventLeaseRenewalRefusedExpired  = "lease renewal refused at or after expiry"
	EventLeaseExpiredInCommit        = "commit refused because the lease expired"
	EventTurnReplayAnswered          = "duplicate turn replay answered from the first result"
	EventTurnReplayOtherHash         = "turn replay with another hash refused"
	EventHeadRevisionConflict        = "head revision conflict"
	EventCommitCompletedClaim        = "commit completed a queued work claim"
	EventCompletedClaimExpired       = "commit refused because a completed claim expired"
	EventClaimTakenOverAfterExpiry   = "queued work claim taken over after its claim expired"
	EventClaimRenewalRefused         = "claim renewal refused"
	EventDelayedWorkNotYetAvailable  = "delayed work not yet available"
	EventCancelRefusedLiveClaim      = "cancel refused for a batch a live claim holds"
	EventGraphNodeConflict           = "append of a stored node refused"
	EventAttachmentKeptFirstCommitAt = "attachment kept its first commit time"
	EventExpiredClaimRenewed         = "expired claim renewed while it still held its batches"
	EventReleaseOtherFence           = "lease release with its token and another fence left the lease"
	EventTombstonedNodeHidden        = "load of a tombstoned node answered none"
)

// RuntimeEvents is every event Events names, for the simulator's sweep.
var RuntimeEvents = []string{EventLeaseTakenOverAfterExpiry, EventLeaseExtendedByOwner, EventLeaseRenewalRefusedExpired,
	EventLeaseExpiredInCommit, EventTurnReplayAnswered, EventTurnReplayOtherHash, EventHeadRevisionConflict,
	EventCommitCompletedClaim, EventCompletedClaimExpired, EventClaimTakenOverAfterExpiry, EventClaimRenewalRefused,
	EventDelayedWorkNotYetAvailable, EventCancelRefusedLiveClaim, EventGraphNodeConflict, EventAttachmentKeptFirstCommitAt,
	EventExpiredClaimRenewed, EventReleaseOtherFence, EventTombstonedNodeHidden}

// Events names the rare runtime events op reaches from s: the rules the
// seed's comments were written about, taken on their interesting branch.
func (m Runtime) Events(st State, op spec.Op, now int64, out Outcome) []string {
	s := st.(RuntimeState)
	var ev []string
	switch o := op.(type) {
	case r.TryClaimSessionExecutionLease:
		cur, ok := s.leases[o.SessionID]
		got, _ := out.Result.(*r.SessionExecutionLease)
		switch {
		case got != nil && ok && cur.Held && cur.Owner != o.OwnerID && !live(cur.ExpiresAt, now):
			ev = append(ev, EventLeaseTakenOverAfterExpiry)
		case got != nil && ok && cur.Held && cur.Owner == o.OwnerID && live(cur.ExpiresAt, now):
			ev = append(ev, EventLeaseExtendedByOwner)
		}
	case r.RenewSessionExecutionLease:
		if cur, ok := s.leaseIs(o.Fence.SessionID, o.Fence); ok && !live(cur.ExpiresAt, now) {
			ev = append(ev, EventLeaseRenewalRefusedExpired)
		}
	case r.ReleaseSessionExecutionLease:
		c := o.Completion
		if l, ok := s.leases[c.SessionID]; ok && l.Held && l.Owner == c.OwnerID && l.Token == c.LeaseToken && l.Fence != c.FencingToken {
			ev = append(ev, EventReleaseOtherFence)
		}
	case r.LoadNode:
		if n := storedNode(s.nodes, o.NodeID); n != nil && n.Tomb {
			ev = append(ev, EventTombstonedNodeHidden)
		}
	case r.CommitRuntimeState:
		cm := o.Commit
		replay := false
		if tc := cm.TurnCommit; tc != nil && tc.SessionID == cm.SessionID {
			if t, ok := s.turns[turnKey{tc.SessionID, tc.TurnID}]; ok {
				replay = true
				if t.Hash == tc.TurnCommitHash && out.Kind == "" {
					ev = append(ev, EventTurnReplayAnswered)
				} else if out.Kind == r.ErrRuntimeTurnCommitConflict {
					ev = append(ev, EventTurnReplayOtherHash)
				}
			}
		}
		switch out.Kind {
		case r.ErrSessionExecutionLeaseExpired:
			if cm.Lease != nil && cm.Lease.SessionID == cm.SessionID {
				if cur, ok := s.leaseIs(cm.SessionID, *cm.Lease); ok && !live(cur.ExpiresAt, now) {
					ev = append(ev, EventLeaseExpiredInCommit)
				}
			}
		case r.ErrHeadRevisionConflict:
			ev = append(ev, EventHeadRevisionConflict)
		case r.ErrQueuedWorkClaimExpired:
			for _, c := range cm.CompletedQueueClaims {
				for _, id := range c.BatchIDs {
					if i, ok := s.batch(c.SessionID, id); ok && s.batches[i].Claimed && s.batches[i].ClaimID == c.ClaimID &&
						s.batches[i].ClaimTok == c.LeaseToken && !live(s.batches[i].ClaimExpires, now) {
						ev = append(ev, EventCompletedClaimExpired)
					}
				}
			}
		case r.ErrGraphNodeConflict, r.ErrIO:
			ev = append(ev, EventGraphNodeConflict)
		case "":
			if !replay && len(cm.CompletedQueueClaims) > 0 {
				ev = append(ev, EventCommitCompletedClaim)
			}
			if !replay {
				for _, id := range cm.CommittedAttachmentIDs {
					if a, ok := s.attachments[id]; ok && a.Committed && a.Session == cm.SessionID && a.CommittedAt != now {
						ev = append(ev, EventAttachmentKeptFirstCommitAt)
						break
					}
				}
			}
		}
	case r.ClaimReadyQueuedWork:
		if out.Kind != "" || o.MaxBatches <= 0 {
			break
		}
		if got, _ := out.Result.(*r.QueuedWorkClaim); got != nil {
			for _, b := range got.Batches {
				if i, ok := s.batch(o.SessionID, b.BatchID); ok && s.batches[i].Claimed {
					ev = append(ev, EventClaimTakenOverAfterExpiry)
					break
				}
			}
		}
		for _, q := range s.batches {
			if q.B.SessionID == o.SessionID && q.B.AvailableAtMs > now && q.free(now) {
				ev = append(ev, EventDelayedWorkNotYetAvailable)
				break
			}
		}
	case r.RenewQueuedWorkClaim:
		if out.Kind == r.ErrQueuedWorkClaimExpired {
			ev = append(ev, EventClaimRenewalRefused)
		}
		if out.Kind == "" {
			c := o.Claim
			for _, q := range s.batches {
				if q.holds(c.SessionID, c.ClaimID, c.LeaseToken) && !live(q.ClaimExpires, now) {
					ev = append(ev, EventExpiredClaimRenewed)
					break
				}
			}
		}
	case r.CancelQueuedWorkBatch:
		if i, ok := s.batch(o.SessionID, o.BatchID); ok && !s.batches[i].free(now) {
			ev = append(ev, EventCancelRefusedLiveClaim)
		}
	}
	return append(ev, runtimeSizes(s, op, now, out)...)
}
