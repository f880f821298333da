package linearizability

// The runtime workload's leases: the schedule the clients keep on the shared
// sessions and their guesses of its leases, and the operations on a client's
// own session lease.

import (
	"fmt"
	"math/rand/v2"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// observe moves the client's guesses to now: a shared lease whose expiry
// passed was granted again at now; a live one was extended by its holder.
//
// The clients keep a schedule on the bound session, as a real deployment
// might: in even epochs only the producer's owner claims its lease (and
// its clients claim it first thing), so a lease granted in an even epoch is
// known to be theirs; in odd epochs every owner competes.
func (w *runtimeWorkload) observe(cl *runtimeClient, now int64) {
	if now == cl.now {
		return
	}
	cl.now = now
	cl.epoch++
	for s, g := range cl.guesses {
		if now >= g.expiry {
			g.prevFence, g.prevGrantedAt, g.prevHolder = g.fence, g.grantedAt, g.holder
			g.fence++
			g.grantedAt = now
			g.holder = ""
			if s == boundSession && cl.reserved() {
				g.holder = w.producerOwner()
			}
		}
		g.expiry = now + int64(w.LeaseTTLMs)
	}
	w.startEpoch(cl)
}

// startEpoch makes the client's first operation of an epoch a claim of the
// bound session's lease (of session-1's, when the epoch is reserved to
// another owner): a live lease is then extended by its owner's clients, and
// an expired one granted again, at the epoch's first claim, as every
// client's guess has it.
//
// Now and then, at the start of an epoch where the bound session's lease
// was granted again, a client of the producer's owner (not the producer)
// first commits as a zombie would: under the lease its owner held in the
// epoch before, which has expired.
func (w *runtimeWorkload) startEpoch(cl *runtimeClient) {
	first := []spec.Op{w.claimShared(cl, boundSession)}
	if g := cl.guesses[boundSession]; cl.n != producer && cl.owner == w.producerOwner() && g.grantedAt == cl.now &&
		g.prevHolder == cl.owner && (cl.epoch+cl.n)%2 == 0 {
		prev := r.SessionExecutionLeaseFence{SessionID: boundSession, OwnerID: cl.owner, FencingToken: g.prevFence,
			LeaseToken: r.LeaseToken(boundSession, cl.owner, g.prevGrantedAt, g.prevFence)}
		id := fmt.Sprintf("turn-%d-%d", cl.n, len(cl.turns))
		first = append([]spec.Op{r.CommitRuntimeState{Commit: r.RuntimeCommit{SessionID: boundSession, Lease: &prev,
			TurnCommit: &r.TurnCommit{SessionID: boundSession, TurnID: id, TurnCommitHash: "hash-" + id},
			Graph:      r.GraphDelta{Kind: r.GraphUnchanged}, Checkpoint: []byte("zombie")}}}, first...)
	}
	cl.plan = append(first, cl.plan...)
}

// reserved says whether the client's epoch is one where only the
// producer's owner claims the bound session's lease.
func (cl *runtimeClient) reserved() bool { return cl.epoch%2 == 0 }

func (w *runtimeWorkload) producerOwner() string { return fmt.Sprint("owner-", producer%w.Owners) }

// claimShared is a claim of a shared session's lease, kept to the schedule
// (see observe): in a reserved epoch where the bound session's lease was
// granted again, only the producer's owner claims it.
func (w *runtimeWorkload) claimShared(cl *runtimeClient, s string) r.TryClaimSessionExecutionLease {
	if g := cl.guesses[boundSession]; s == boundSession && cl.reserved() && g.grantedAt == cl.now && cl.owner != w.producerOwner() {
		s = "session-1"
	}
	return r.TryClaimSessionExecutionLease{SessionID: s, OwnerID: cl.owner, TTLMs: w.LeaseTTLMs}
}

func (w *runtimeWorkload) sharedSession(rnd *rand.Rand) string {
	if rnd.IntN(3) > 0 {
		return boundSession
	}
	return fmt.Sprint("session-", rnd.IntN(w.Sessions))
}

// ownLeaseOp is an operation on the client's own session lease.
func (w *runtimeWorkload) ownLeaseOp(rnd *rand.Rand, cl *runtimeClient) spec.Op {
	own := ownSession(cl.n)
	switch p := rnd.IntN(10); {
	case p < 5:
		switch rnd.IntN(4) {
		case 0, 1:
			cl.plan = append(cl.plan, renewOwnLease)
		case 2:
			// The lease it was just granted, released under another
			// fence while it is live, and renewed: it stayed.
			cl.plan = append(cl.plan, releaseOtherFence, renewOwnLease)
		}
		return r.TryClaimSessionExecutionLease{SessionID: own, OwnerID: cl.owner, TTLMs: w.ttl(rnd)}
	case p < 8:
		return w.build(rnd, cl, renewOwnLease)
	default:
		fence := r.SessionExecutionLeaseFence{SessionID: own, OwnerID: cl.owner}
		if cl.ownLease != nil {
			fence = cl.ownLease.Fence()
			if rnd.IntN(2) == 0 {
				// Its token under another fence: no match, so the lease
				// stays, as its renewal then shows.
				fence = otherFence(rnd, fence)
				cl.plan = append(cl.plan, renewOwnLease)
			}
		}
		return r.ReleaseSessionExecutionLease{Completion: fence}
	}
}

// otherFence is f with its lease token and another fencing token, one
// above or (when there is one) one below.
func otherFence(rnd *rand.Rand, f r.SessionExecutionLeaseFence) r.SessionExecutionLeaseFence {
	if f.FencingToken > 1 && rnd.IntN(2) == 0 {
		f.FencingToken--
	} else {
		f.FencingToken++
	}
	return f
}

func (w *runtimeWorkload) partitioned(rnd *rand.Rand, cl *runtimeClient) spec.Op {
	s := fmt.Sprint("session-", rnd.IntN(w.Sessions))
	switch p := rnd.IntN(10); {
	case p < 4:
		return r.TryClaimSessionExecutionLease{SessionID: s, OwnerID: cl.owner, TTLMs: w.LeaseTTLMs}
	case p < 6:
		return r.RenewSessionExecutionLease{Fence: w.sharedLease(rnd, cl, s), TTLMs: w.LeaseTTLMs}
	case p < 7:
		return r.ReleaseSessionExecutionLease{Completion: w.sharedLease(rnd, cl, s)}
	case p < 9:
		return r.StageAttachment{SessionID: s, AttachmentID: fmt.Sprint("att-", rnd.IntN(w.Sessions*2)), Data: []byte("x")}
	default:
		return r.LoadAttachment{AttachmentID: fmt.Sprint("att-", rnd.IntN(w.Sessions*2))}
	}
}

// sharedLease is the client's guess of a shared session's lease: granted
// to its owner when it guesses it was last granted; now and then a stale
// one.
func (w *runtimeWorkload) sharedLease(rnd *rand.Rand, cl *runtimeClient, s string) r.SessionExecutionLeaseFence {
	g := cl.guesses[s]
	if g == nil {
		g = &leaseGuess{fence: 1, grantedAt: cl.now}
		cl.guesses[s] = g
	}
	fence, at := g.fence, g.grantedAt
	if rnd.IntN(10) == 0 && g.prevFence > 0 {
		// The lease it guesses was granted before, now expired: refused,
		// unless nobody has taken it again yet and it is still live.
		fence, at = g.prevFence, g.prevGrantedAt
	}
	return r.SessionExecutionLeaseFence{SessionID: s, OwnerID: cl.owner, FencingToken: fence, LeaseToken: r.LeaseToken(s, cl.owner, at, fence)}
}
