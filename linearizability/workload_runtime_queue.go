package linearizability

// The runtime workload's queued work: the producer's enqueues and claims,
// the planned steps built from what a client asked before them, and the
// claims a client presents.

import (
	"fmt"
	"math/rand/v2"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// produce is the producer's queue work: enqueues; claims of its own
// session's work under its own lease, renewed, abandoned and cancelled, at
// once or later (when the claim may have expired); and turns that claim the
// bound session's work and complete it in a commit, at once or later.
func (w *runtimeWorkload) produce(rnd *rand.Rand, cl *runtimeClient) spec.Op {
	own := ownSession(cl.n)
	switch p := rnd.IntN(100); {
	case p < 30:
		return w.enqueue(rnd, cl, pick(rnd, own, own, boundSession))
	case p < 55:
		claim := r.TryClaimSessionExecutionLease{SessionID: own, OwnerID: cl.owner, TTLMs: 6_000}
		cl.plan = []spec.Op{ownClaim}
		if rnd.IntN(2) == 0 {
			cl.plan = []spec.Op{readyWork(cl, own), ownClaim}
		}
		switch rnd.IntN(4) {
		case 0:
			// Now and then a claim for no time at all, which has expired
			// when it is renewed, and still holds its batches.
			if rnd.IntN(2) == 0 {
				cl.plan[len(cl.plan)-1] = ownClaimNoTime
			}
			cl.plan = append(cl.plan, renewClaim)
		case 1:
			// Renewed while it is live, then abandoned.
			cl.plan = append(cl.plan, renewClaim, abandonClaim)
		case 2:
			cl.plan = append(cl.plan, cancelClaimed)
		}
		return claim
	case p < 65:
		return r.RenewQueuedWorkClaim{Claim: cl.claimOrGuess(rnd), TTLMs: w.ttl(rnd)}
	case p < 70:
		return r.AbandonQueuedWorkClaim{Claim: cl.claimOrGuess(rnd)}
	case p < 75:
		batches := cl.mineOf(r.ListQueuedWork{SessionID: own}).([]r.QueuedWorkBatch)
		id := spec.Ref(spec.OpID(cl.n, rnd.IntN(1+cl.step)), "batch_id")
		if len(batches) > 0 {
			id = cl.ref(batches[rnd.IntN(len(batches))].BatchID)
		}
		return r.CancelQueuedWorkBatch{SessionID: own, BatchID: id}
	case cl.guesses[boundSession].holder != cl.owner:
		// Not its owner's epoch on the bound session.
		return w.enqueue(rnd, cl, pick(rnd, own, boundSession))
	case p < 85:
		// The completion of a claim made a while ago.
		return w.completingCommit(rnd, cl)
	default:
		// A turn under the bound session's lease: it claims its work and
		// completes the claim in a commit, or leaves it for later; a claim
		// for no time at all has expired when it completes.
		claim := w.claimWork(rnd, cl, boundSession, w.sharedLease(rnd, cl, boundSession))
		if rnd.IntN(3) < 2 {
			claim.TTLMs = 0
		}
		cl.plan = []spec.Op{claim}
		if rnd.IntN(3) > 0 {
			cl.plan = append(cl.plan, completeClaim)
		}
		return readyWork(cl, boundSession)
	}
}

// Steps of a plan that are built when their turn comes, from what the
// client asked before them.
type planned string

func (p planned) Name() string { return string(p) }
func (planned) Result() any    { return nil }

const (
	ownClaim       planned = "claim own work"
	ownClaimNoTime planned = "claim own work for no time"
	renewClaim     planned = "renew the claim"
	abandonClaim   planned = "abandon the claim"
	cancelClaimed  planned = "cancel a claimed batch"
	completeClaim  planned = "complete the claim"
	renewOwnLease  planned = "renew own lease"
	// releaseOtherFence releases the client's own lease with its token
	// and another fence: no match, so the lease stays.
	releaseOtherFence planned = "release own lease under another fence"
)

// build makes a planned step.
func (w *runtimeWorkload) build(rnd *rand.Rand, cl *runtimeClient, p planned) spec.Op {
	own := ownSession(cl.n)
	switch p {
	case ownClaim, ownClaimNoTime:
		lease := r.SessionExecutionLeaseFence{SessionID: own}
		if cl.ownLease != nil {
			lease = cl.ownLease.Fence()
		}
		op := w.claimWork(rnd, cl, own, lease)
		if p == ownClaimNoTime {
			op.TTLMs = 0
		}
		return op
	case renewClaim:
		return r.RenewQueuedWorkClaim{Claim: cl.claimOrGuess(rnd), TTLMs: w.ttl(rnd)}
	case abandonClaim:
		return r.AbandonQueuedWorkClaim{Claim: cl.claimOrGuess(rnd)}
	case cancelClaimed:
		c := cl.claimOrGuess(rnd)
		return r.CancelQueuedWorkBatch{SessionID: c.SessionID, BatchID: c.Batches[0].BatchID}
	case completeClaim:
		return w.completingCommit(rnd, cl)
	case renewOwnLease:
		fence := r.SessionExecutionLeaseFence{SessionID: own, OwnerID: cl.owner}
		if cl.ownLease != nil {
			fence = cl.ownLease.Fence()
		}
		return r.RenewSessionExecutionLease{Fence: fence, TTLMs: w.ttl(rnd)}
	case claimBig:
		return w.buildBig(cl)
	case releaseOtherFence:
		fence := r.SessionExecutionLeaseFence{SessionID: own, OwnerID: cl.owner}
		if cl.ownLease != nil {
			fence = otherFence(rnd, cl.ownLease.Fence())
		}
		return r.ReleaseSessionExecutionLease{Completion: fence}
	}
	panic("unknown planned step " + string(p))
}

// claimOrGuess is the claim the client expects it holds, as it presents it,
// or a guess at one: what the producer's answer to one of its operations
// names, when that answer was a claim (of the bound session, whose work the
// producer claims), as a worker that saw another's claim might present it.
func (cl *runtimeClient) claimOrGuess(rnd *rand.Rand) r.QueuedWorkClaim {
	if cl.claim != nil && rnd.IntN(8) > 0 {
		return cl.present(*cl.claim)
	}
	op := spec.OpID(producer, rnd.IntN(1+cl.step))
	return r.QueuedWorkClaim{SessionID: boundSession, ClaimID: spec.Ref(op, "claim_id"), OwnerID: cl.owner, LeaseToken: spec.Ref(op, "lease_token"),
		FencingToken: 1, Batches: []r.QueuedWorkBatch{{BatchID: spec.Ref(op, "batches.0.batch_id"), SessionID: boundSession}}}
}

// readyWork is a batch ready at once, deliverable at any boundary.
func readyWork(cl *runtimeClient, s string) r.EnqueueQueuedWork {
	return r.EnqueueQueuedWork{Draft: r.QueuedWorkBatchDraft{SessionID: s, DeliveryPolicy: r.DeliverInterrupt, SlotPolicy: r.SlotExclusive,
		AvailableAtMs: cl.now, Payloads: []spec.RawJSON{spec.RawJSON(`{"ready":true}`)}}}
}

// enqueue is a draft for session s; on a shared session, it sometimes
// repeats a source key.
func (w *runtimeWorkload) enqueue(rnd *rand.Rand, cl *runtimeClient, s string) spec.Op {
	n := rnd.IntN(100)
	d := r.QueuedWorkBatchDraft{
		SessionID:      s,
		DeliveryPolicy: pick(rnd, r.DeliverNextTurn, r.DeliverInterrupt),
		SlotPolicy:     pick(rnd, r.SlotExclusive, r.SlotMergeable, r.SlotMergeable),
		MergeKey:       pick(rnd, "", "m", "m"),
		AvailableAtMs:  cl.now - int64(rnd.IntN(1000)),
		Payloads:       []spec.RawJSON{spec.RawJSON(fmt.Sprintf(`{"c":%d,"n":%d}`, cl.n, n))},
	}
	if rnd.IntN(3) == 0 {
		d.AvailableAtMs = cl.now + int64(1+rnd.IntN(6_000))
	}
	if rnd.IntN(3) == 0 {
		d.SourceKey = fmt.Sprint("src-", rnd.IntN(3))
	}
	if rnd.IntN(3) == 0 {
		d.Payloads = append(d.Payloads, spec.RawJSON(`[]`))
	}
	if rnd.IntN(10) == 0 {
		d.SlotPolicy = "shared"
	}
	return r.EnqueueQueuedWork{Draft: d}
}

// claimWork claims ready work under lease (the client remembers the claim
// it expects when it asks, see asked).
func (w *runtimeWorkload) claimWork(rnd *rand.Rand, cl *runtimeClient, s string, lease r.SessionExecutionLeaseFence) r.ClaimReadyQueuedWork {
	op := r.ClaimReadyQueuedWork{SessionID: s, Lease: lease, OwnerID: cl.owner, Boundary: pick(rnd, r.BoundaryTurn, r.BoundaryTurn, r.BoundaryStep),
		TTLMs: w.ttl(rnd), MaxBatches: pick(rnd, 1, 1, 2, 3)}
	switch rnd.IntN(30) {
	case 0:
		op.MaxBatches = 0
	case 1, 2:
		op.Boundary = "midway"
	}
	return op
}
