package linearizability

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// RuntimeWorkload configures the runtime store's workload.
//
// Clients never see answers (a simulated schedule is generated before it
// runs), so a client remembers what it asked for and when (it reads the
// clock before it acts, see ClockedWorkload):
//   - the ids the store mints where the seed does not say how (batch ids,
//     claim ids and tokens) it never predicts: it presents a reference to
//     the answer that minted one (spec.Ref), which the runner resolves;
//   - each client has a session of its own ("own-<client>") whose lease and
//     queue it alone uses, now and then intruded on by another: it steps a
//     private copy of the model with what it asked there, so it knows its
//     lease's token (the seed states its format), fence and expiry, which of
//     its batches are queued and which claims it holds, and which of its
//     earlier answers minted each;
//   - the shared sessions' leases all have one TTL, so a client can tell
//     from the clock's jumps when the lease expired and was granted again,
//     and guesses its fence and token (granted at the epoch's now to its own
//     owner): a guess is right when its owner won the lease;
//   - client 0 is the one producer: every enqueue is its own, so it knows
//     every batch and which answer minted it.
//
// A guess that another client made wrong is a refused operation: both
// outcomes are wanted.
type RuntimeWorkload struct {
	// Sessions is how many shared sessions there are. Commits are for
	// session-0 (the store binds to it), or, to meet the binding rule, for
	// a session nobody leases.
	Sessions int
	// Owners is how many owner ids the clients act as on shared sessions
	// (client c is owner c mod Owners): clients of one owner share a lease.
	Owners int
	// LeaseTTLMs is the TTL of every lease on a shared session.
	LeaseTTLMs uint64
	// TTLsMs are the TTLs of own-session leases and of claims.
	TTLsMs []uint64
	// Partitioned issues only lease and attachment operations, each on one
	// of many sessions, so the history splits per session.
	Partitioned bool
}

// DefaultRuntimeWorkload is the default run's: eight clients as three owners
// fighting over two shared sessions, and TTLs near the clock's jumps (up to
// 3s) so that leases and claims expire between epochs about half the time.
var DefaultRuntimeWorkload = RuntimeWorkload{Sessions: 2, Owners: 3, LeaseTTLMs: 1_500, TTLsMs: []uint64{300, 1_000, 2_500, 6_000}}

// New is a fresh workload of this configuration.
func (w RuntimeWorkload) New() Workload {
	d := DefaultRuntimeWorkload
	if w.Sessions <= 0 {
		w.Sessions = d.Sessions
	}
	if w.Owners <= 0 {
		w.Owners = d.Owners
	}
	if w.LeaseTTLMs == 0 {
		w.LeaseTTLMs = d.LeaseTTLMs
	}
	if len(w.TTLsMs) == 0 {
		w.TTLsMs = d.TTLsMs
	}
	return &runtimeWorkload{RuntimeWorkload: w, clients: map[int]*runtimeClient{}}
}

type runtimeWorkload struct {
	RuntimeWorkload
	mu      sync.Mutex
	clients map[int]*runtimeClient
}

// leaseGuess is a client's guess of a shared session's lease: its fence,
// when it was granted and when it expires.
type leaseGuess struct {
	fence, prevFence                 uint64
	grantedAt, prevGrantedAt, expiry int64
	// holder is the owner the lease was granted to, when the client knows.
	holder, prevHolder string
}

type askedTurn struct{ turn, hash string }

// runtimeClient is what one client remembers of what it asked.
type runtimeClient struct {
	n, step int
	owner   string
	now     int64
	epoch   int
	guesses map[string]*leaseGuess
	// mine is the model stepped with what the client asked of its own
	// session (and, for the producer, its enqueues). Its ids are holes.
	mine     model.State
	ownLease *r.SessionExecutionLease
	// claim is the claim the client expects it holds, as mine has it.
	claim *r.QueuedWorkClaim
	// answers are mine's answers to the client's operations, by operation
	// id: a reference to an answer resolves against them to mine's hole.
	answers spec.Answers
	// refs is, for each hole of mine, the reference to the client's answer
	// that shows the store's value for it.
	refs  map[string]string
	turns []askedTurn
	nodes int
	plan  []spec.Op
	// attached are the attachment ids it staged in the bound session or
	// its commits named.
	attached []string
	// appended are the last node ids its commits appended.
	appended []string
}

// boundSession is the session commits are for; unleasedSession is one no
// client ever leases.
const (
	boundSession    = "session-0"
	unleasedSession = "session-x"
	producer        = 0
)

var privateModel = model.Runtime{}

func (w *runtimeWorkload) client(n int, now int64) *runtimeClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	cl := w.clients[n]
	if cl == nil {
		cl = &runtimeClient{n: n, owner: fmt.Sprint("owner-", n%w.Owners), now: now, guesses: map[string]*leaseGuess{},
			mine: privateModel.Init(), answers: spec.Answers{}, refs: map[string]string{}}
		for i := range w.Sessions {
			// Somebody took every shared lease in the first epoch.
			cl.guesses[fmt.Sprint("session-", i)] = &leaseGuess{fence: 1, grantedAt: now, expiry: now + int64(w.LeaseTTLMs)}
		}
		cl.guesses[boundSession].holder = w.producerOwner()
		w.startEpoch(cl)
		if n == producer {
			// The producer's turns name an attachment it staged: the first
			// that commits marks it, and later ones keep that time.
			cl.plan = append(cl.plan, r.StageAttachment{SessionID: boundSession, AttachmentID: "att-0", Data: []byte("png")})
			cl.attached = []string{"att-0"}
		}
		w.clients[n] = cl
	}
	return cl
}

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

func ownSession(c int) string { return fmt.Sprint("own-", c) }

func (w *runtimeWorkload) ttl(rnd *rand.Rand) uint64 { return w.TTLsMs[rnd.IntN(len(w.TTLsMs))] }

func pick[T any](rnd *rand.Rand, xs ...T) T { return xs[rnd.IntN(len(xs))] }

// Next is NextAt with the clock at the epoch: a client that cannot read the
// clock guesses most tokens wrong.
func (w *runtimeWorkload) Next(rnd *rand.Rand, client, step int) spec.Op {
	return w.NextAt(rnd, client, step, Epoch.UnixMilli())
}

// NextAt is the client's next operation, which runs at now.
func (w *runtimeWorkload) NextAt(rnd *rand.Rand, client, step int, now int64) spec.Op {
	cl := w.client(client, now)
	if w.Partitioned {
		cl.now, cl.step = now, step
		return cl.asked(w.partitioned(rnd, cl))
	}
	w.observe(cl, now)
	cl.step = step
	if len(cl.plan) > 0 {
		op := cl.plan[0]
		cl.plan = cl.plan[1:]
		if p, ok := op.(planned); ok {
			op = w.build(rnd, cl, p)
		}
		return cl.asked(op)
	}
	if client == producer && rnd.IntN(4) > 0 {
		return cl.asked(w.produce(rnd, cl))
	}
	switch p := rnd.IntN(100); {
	case p < 14:
		// A turn: take the shared lease, and commit under it.
		claim := w.claimShared(cl, boundSession)
		lease := w.sharedLease(rnd, cl, boundSession)
		cl.plan = []spec.Op{w.commit(rnd, cl, &lease)}
		return cl.asked(claim)
	case p < 19:
		return cl.asked(w.claimShared(cl, w.sharedSession(rnd)))
	case p < 22:
		s := w.sharedSession(rnd)
		return cl.asked(r.RenewSessionExecutionLease{Fence: w.sharedLease(rnd, cl, s), TTLMs: w.LeaseTTLMs})
	case p < 34:
		l := w.sharedLease(rnd, cl, boundSession)
		return cl.asked(w.commit(rnd, cl, &l))
	case p < 46:
		return cl.asked(w.ownLeaseOp(rnd, cl))
	case p < 52:
		// The bound session's queue is the producer's to claim (another's
		// claim would move its batches' claim counts unseen, and the
		// producer's claim ids with them): others claim session-1's.
		return cl.asked(w.claimWork(rnd, cl, "session-1", w.sharedLease(rnd, cl, "session-1")))
	case p < 55:
		return cl.asked(r.RenewQueuedWorkClaim{Claim: cl.claimOrGuess(rnd), TTLMs: w.ttl(rnd)})
	case p < 57:
		return cl.asked(r.AbandonQueuedWorkClaim{Claim: cl.claimOrGuess(rnd)})
	case p < 61:
		// A guess at a batch: whatever the producer's answer to one of its
		// operations names, when it was an enqueue answered by now; rarely
		// of the bound session, whose queue is the producer's to know.
		s := "session-1"
		if !cl.reserved() && rnd.IntN(4) == 0 {
			s = boundSession
		}
		return cl.asked(r.CancelQueuedWorkBatch{SessionID: s, BatchID: spec.Ref(spec.OpID(producer, rnd.IntN(1+cl.step)), "batch_id")})
	case p < 65:
		s := pick(rnd, boundSession, ownSession(producer), w.sharedSession(rnd))
		if rnd.IntN(2) == 0 {
			return cl.asked(r.ListQueuedWork{SessionID: s})
		}
		return cl.asked(r.ListPendingQueuedWork{SessionID: s})
	case p < 71:
		scope := r.FullGraph()
		if rnd.IntN(2) == 0 {
			scope = r.ActivePathTo(pick(rnd, "", cl.nodeID(rnd)))
		}
		return cl.asked(r.LoadSession{Scope: scope})
	case p < 74:
		id := cl.nodeID(rnd)
		if len(cl.appended) > 0 && rnd.IntN(4) > 0 {
			// One it appended last: stored, unless a tombstone hid it.
			id = cl.appended[len(cl.appended)-1]
		}
		return cl.asked(r.LoadNode{NodeID: id})
	case p < 77:
		// A tombstone, and a load of what it hid: none, though the node
		// is stored.
		ids := []string{cl.nodeID(rnd), fmt.Sprintf("n-%d-%d", cl.n, max(cl.nodes-1-rnd.IntN(3), 0))}
		if len(cl.appended) > 0 && rnd.IntN(2) == 0 {
			ids[0] = cl.appended[rnd.IntN(len(cl.appended))]
		}
		cl.plan = append(cl.plan, r.LoadNode{NodeID: ids[rnd.IntN(2)]})
		return cl.asked(r.TombstoneNodes{IDs: ids})
	case p < 78:
		return cl.asked(r.Vacuum{})
	case p < 80:
		return cl.asked(r.GcUnreachable{})
	case p < 83:
		// No empty meta or payload: a saved history writes it as null,
		// which reads back as the JSON text null (the specs check empties).
		return cl.asked(r.SaveSessionMeta{Meta: pick(rnd, spec.RawJSON(`{}`), spec.RawJSON(`{"title":"a"}`), spec.RawJSON(`{"title":"b"}`))})
	case p < 84:
		return cl.asked(r.LoadSessionMeta{})
	case p < 88:
		// att-0 is the producer's, staged in the bound session first
		// thing: every turn names it, so the ones after the first keep
		// its first commit time.
		st := r.StageAttachment{SessionID: pick(rnd, boundSession, boundSession, "session-1"),
			AttachmentID: fmt.Sprint("att-", 1+rnd.IntN(3)), Data: []byte(pick(rnd, "", "png", "pdf"))}
		if st.SessionID == boundSession {
			cl.attached = append(cl.attached, st.AttachmentID)
		}
		return cl.asked(st)
	case p < 91:
		return cl.asked(r.LoadAttachment{AttachmentID: fmt.Sprint("att-", rnd.IntN(4))})
	case p < 93:
		// An intrusion on another client's own session.
		other := ownSession((client + 1 + rnd.IntN(7)) % 8)
		return cl.asked(r.TryClaimSessionExecutionLease{SessionID: other, OwnerID: cl.owner, TTLMs: w.ttl(rnd)})
	case p < 94:
		return cl.asked(r.DurabilityTierOp{})
	default:
		// A replay of a turn it committed, or a turn of another.
		l := w.sharedLease(rnd, cl, boundSession)
		return cl.asked(w.commit(rnd, cl, &l))
	}
}

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
	case releaseOtherFence:
		fence := r.SessionExecutionLeaseFence{SessionID: own, OwnerID: cl.owner}
		if cl.ownLease != nil {
			fence = otherFence(rnd, cl.ownLease.Fence())
		}
		return r.ReleaseSessionExecutionLease{Completion: fence}
	}
	panic("unknown planned step " + string(p))
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

// mineOf is what the client's private model answers op, without asking it.
func (cl *runtimeClient) mineOf(op spec.Op) any {
	_, out := model.Expect(privateModel, cl.mine, op, cl.now)
	return out.Result
}

var bareHole = regexp.MustCompile(`^⟨\?[a-z_]+ [0-9]+⟩$`)

// learn keeps mine's answer to the client's current operation, and for each
// hole it shows first, where in the store's answer its value will be.
func (cl *runtimeClient) learn(result any) {
	id := spec.OpID(cl.n, cl.step)
	cl.answers[id] = result
	b, err := json.Marshal(result)
	if err != nil {
		return
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		join := func(p string) string {
			if path == "" {
				return p
			}
			return path + "." + p
		}
		switch x := v.(type) {
		case string:
			if _, known := cl.refs[x]; !known && bareHole.MatchString(x) {
				cl.refs[x] = spec.Ref(id, path)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], join(k))
			}
		case []any:
			for i, e := range x {
				walk(e, join(strconv.Itoa(i)))
			}
		}
	}
	walk(v, "")
}

// ref is what the client presents for a value of mine: the reference to the
// answer that shows it, for a hole; a value no store minted for a hole it
// never learned; else the value itself.
func (cl *runtimeClient) ref(v string) string {
	if !bareHole.MatchString(v) {
		return v
	}
	if ref, ok := cl.refs[v]; ok {
		return ref
	}
	return spec.Unresolved("mine", v)
}

// present is a claim of mine as the client presents it: its ids and its
// batches' ids as references to the answers that minted them.
func (cl *runtimeClient) present(c r.QueuedWorkClaim) r.QueuedWorkClaim {
	out := c
	out.ClaimID, out.LeaseToken = cl.ref(c.ClaimID), cl.ref(c.LeaseToken)
	out.Batches = make([]r.QueuedWorkBatch, len(c.Batches))
	for i, b := range c.Batches {
		out.Batches[i] = r.QueuedWorkBatch{BatchID: cl.ref(b.BatchID), SessionID: b.SessionID}
	}
	return out
}

// asked remembers what the client asked: it steps its private model with
// what it asked of its own session, and with the producer's enqueues (the
// operation with each reference to the client's own answers as mine has
// it); it keeps the lease and the claim it expects, and the turns it
// committed.
func (cl *runtimeClient) asked(op spec.Op) spec.Op {
	own := ownSession(cl.n)
	step := func(op spec.Op) model.Outcome {
		var out model.Outcome
		cl.mine, out = model.Expect(privateModel, cl.mine, op, cl.now)
		return out
	}
	switch o := cl.answers.Resolve(op).(type) {
	case r.TryClaimSessionExecutionLease:
		if o.SessionID == own {
			cl.ownLease, _ = step(o).Result.(*r.SessionExecutionLease)
		}
	case r.RenewSessionExecutionLease:
		if o.Fence.SessionID == own {
			step(o)
		}
	case r.ReleaseSessionExecutionLease:
		if o.Completion.SessionID == own {
			step(o)
		}
	case r.EnqueueQueuedWork:
		cl.learn(step(o).Result)
	case r.ClaimReadyQueuedWork:
		if o.SessionID == own {
			out := step(o)
			cl.learn(out.Result)
			if c, _ := out.Result.(*r.QueuedWorkClaim); c != nil {
				cl.claim = c
			}
		} else if cl.n == producer {
			// Its guess of the bound session's claim: its private model,
			// under a lease of its own there.
			l, _ := step(r.TryClaimSessionExecutionLease{SessionID: o.SessionID, OwnerID: "private", TTLMs: 1 << 40}).Result.(*r.SessionExecutionLease)
			if l != nil {
				o.Lease = l.Fence()
				out := step(o)
				cl.learn(out.Result)
				if c, _ := out.Result.(*r.QueuedWorkClaim); c != nil {
					cl.claim = c
				}
			}
		}
	case r.RenewQueuedWorkClaim:
		if o.Claim.SessionID == own {
			step(o)
		}
	case r.AbandonQueuedWorkClaim:
		if o.Claim.SessionID == own {
			step(o)
		}
	case r.CancelQueuedWorkBatch:
		if o.SessionID == own {
			step(o)
		}
	case r.CommitRuntimeState:
		if tc := o.Commit.TurnCommit; tc != nil {
			cl.turns = append(cl.turns, askedTurn{tc.TurnID, tc.TurnCommitHash})
		}
		if cs := o.Commit.CompletedQueueClaims; len(cs) > 0 && cl.n == producer {
			// Its private view of the bound session's queue loses the
			// completed batches.
			if l, _ := step(r.TryClaimSessionExecutionLease{SessionID: boundSession, OwnerID: "private", TTLMs: 1 << 40}).Result.(*r.SessionExecutionLease); l != nil {
				f := l.Fence()
				step(r.CommitRuntimeState{Commit: r.RuntimeCommit{SessionID: boundSession, Lease: &f, CompletedQueueClaims: cs,
					Graph: r.GraphDelta{Kind: r.GraphUnchanged}}})
			}
			cl.claim = nil
		}
		if rl := o.Commit.ReleaseLease; rl != nil && rl.SessionID == own {
			// Whether the commit released it, the client does not know:
			// it releases it again, and then it knows.
			cl.plan = append([]spec.Op{r.ReleaseSessionExecutionLease{Completion: *rl}}, cl.plan...)
		}
	}
	return op
}

// attachments are the attachments a commit names: the producer's att-0
// mostly (a commit after its first keeps its first commit time), and now
// and then one the client staged or named before, or any (of another
// session, or unknown: left alone).
func (w *runtimeWorkload) attachments(rnd *rand.Rand, cl *runtimeClient) []string {
	var ids []string
	if rnd.IntN(4) > 0 {
		ids = append(ids, "att-0")
	}
	if rnd.IntN(2) == 0 {
		id := fmt.Sprint("att-", rnd.IntN(4))
		if len(cl.attached) > 0 && rnd.IntN(4) > 0 {
			id = cl.attached[rnd.IntN(len(cl.attached))]
		} else {
			cl.attached = append(cl.attached, id)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Observe reads back what the clients can write, at the end of a simulated
// run: the session's head and graph, its meta, the queues, every
// attachment and every node a commit of theirs named (a tombstoned one
// answers none).
func (w *runtimeWorkload) Observe() []spec.Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	ops := []spec.Op{r.LoadSession{Scope: r.FullGraph()}, r.LoadSessionMeta{}}
	for _, s := range []string{boundSession, "session-1", ownSession(producer)} {
		ops = append(ops, r.ListQueuedWork{SessionID: s})
	}
	for i := range 4 {
		ops = append(ops, r.LoadAttachment{AttachmentID: fmt.Sprint("att-", i)})
	}
	for _, n := range slices.Sorted(maps.Keys(w.clients)) {
		for k := range w.clients[n].nodes {
			ops = append(ops, r.LoadNode{NodeID: fmt.Sprintf("n-%d-%d", n, k)})
		}
	}
	return ops
}

// completingCommit is the commit that completes the claim the client just
// made on the bound session.
func (w *runtimeWorkload) completingCommit(rnd *rand.Rand, cl *runtimeClient) spec.Op {
	l := w.sharedLease(rnd, cl, boundSession)
	id := fmt.Sprintf("turn-%d-%d", cl.n, len(cl.turns))
	cm := r.RuntimeCommit{SessionID: boundSession, Lease: &l, Checkpoint: []byte(pick(rnd, checkpoints...)),
		TurnCommit: &r.TurnCommit{SessionID: boundSession, TurnID: id, TurnCommitHash: "hash-" + id},
		Graph:      r.GraphDelta{Kind: r.GraphUnchanged}}
	if cl.claim != nil && cl.claim.SessionID == boundSession {
		cm.CompletedQueueClaims = []r.CompletedQueueClaim{cl.present(*cl.claim).Completed()}
	}
	cm.CommittedAttachmentIDs = w.attachments(rnd, cl)
	return r.CommitRuntimeState{Commit: cm}
}

func (cl *runtimeClient) nodeID(rnd *rand.Rand) string {
	if cl.nodes == 0 || rnd.IntN(4) == 0 {
		return fmt.Sprintf("n-%d-%d", rnd.IntN(8), rnd.IntN(4))
	}
	return fmt.Sprintf("n-%d-%d", cl.n, rnd.IntN(cl.nodes))
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

var checkpoints = []string{"", "cp-a", "cp-b", "cp-c"}

// commit is a commit of session-0 under lease (a turn, usually new), with
// the claim the client believes it holds now and then.
func (w *runtimeWorkload) commit(rnd *rand.Rand, cl *runtimeClient, lease *r.SessionExecutionLeaseFence) spec.Op {
	cm := r.RuntimeCommit{SessionID: boundSession, Lease: lease, Checkpoint: []byte(pick(rnd, checkpoints...))}
	switch p := rnd.IntN(40); {
	case p == 0:
		cm.SessionID = unleasedSession
	case p == 1:
		cm.Lease = nil
	}
	switch p := rnd.IntN(20); {
	case p < 3 && len(cl.turns) > 0:
		t := cl.turns[rnd.IntN(len(cl.turns))]
		if rnd.IntN(3) == 0 {
			t.hash += "-other"
		}
		cm.TurnCommit = &r.TurnCommit{SessionID: cm.SessionID, TurnID: t.turn, TurnCommitHash: t.hash}
	case p < 4:
		cm.TurnCommit = &r.TurnCommit{SessionID: unleasedSession, TurnID: "turn-foreign", TurnCommitHash: "h"}
	case p < 15:
		id := fmt.Sprintf("turn-%d-%d", cl.n, len(cl.turns))
		cm.TurnCommit = &r.TurnCommit{SessionID: cm.SessionID, TurnID: id, TurnCommitHash: "hash-" + id}
	}
	if rnd.IntN(4) == 0 {
		rev := uint64(rnd.IntN(1 + cl.step/4))
		cm.ExpectedHeadRevision = &rev
	}
	switch p := rnd.IntN(20); {
	case p < 10:
		for range 1 + rnd.IntN(2) {
			id := fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
			cl.nodes++
			cl.appended = remember(cl.appended, id)
			cm.Graph.Nodes = append(cm.Graph.Nodes, r.Node{NodeID: id, ParentID: cm.Graph.LeafNodeID, Data: spec.RawJSON(`{"t":1}`)})
			cm.Graph.LeafNodeID = id
		}
		cm.Graph.Kind = r.GraphAppend
		if rnd.IntN(2) == 0 {
			cm.Graph.Nodes[0].ParentID = cl.nodeID(rnd)
		}
		// Then a load of the leaf it appended: stored when the commit was.
		cl.plan = append(cl.plan, r.LoadNode{NodeID: cm.Graph.LeafNodeID})
	case p < 13:
		// A node it committed before, or one twice in the delta.
		n := r.Node{NodeID: fmt.Sprintf("n-%d-%d", cl.n, rnd.IntN(1+cl.nodes/4))}
		cm.Graph = r.GraphDelta{Kind: r.GraphAppend, Nodes: []r.Node{n}}
		if rnd.IntN(2) == 0 {
			n.NodeID = fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
			cl.nodes++
			cm.Graph.Nodes = []r.Node{n, n}
		}
	case p < 15:
		id := fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
		cl.nodes++
		cm.Graph = r.GraphDelta{Kind: r.GraphReplaceFull, Nodes: []r.Node{{NodeID: id}}, LeafNodeID: id}
	case p < 17:
		cm.Graph.Kind = "rebase"
	default:
		cm.Graph = r.GraphDelta{Kind: r.GraphUnchanged, LeafNodeID: cl.nodeID(rnd)}
	}
	if rnd.IntN(3) == 0 {
		cm.Config = spec.RawJSON(pick(rnd, `{"model":"m1"}`, `{"model":"m2"}`))
		cm.AgentFrames = spec.RawJSON(`[{"id":"f1"}]`)
		cm.CurrentAgentFrameID = "f1"
	}
	for range rnd.IntN(3) {
		cm.UsageDeltas = append(cm.UsageDeltas, r.UsageEntry{Source: pick(rnd, "agent", "tool"), Model: pick(rnd, "m1", "m2"),
			Usage: r.Usage{InputTokens: uint64(rnd.IntN(100)), OutputTokens: uint64(rnd.IntN(50)), CachedInputTokens: uint64(rnd.IntN(5))}})
	}
	cm.CommittedAttachmentIDs = w.attachments(rnd, cl)
	if rnd.IntN(8) == 0 {
		cm.CompletedQueueClaims = []r.CompletedQueueClaim{cl.claimOrGuess(rnd).Completed()}
	}
	if cl.ownLease != nil && rnd.IntN(5) == 0 {
		// It lets its own session's lease go with the commit. (Releasing
		// the bound session's would grant it again unseen, and every
		// client's guess of its fence would fall behind for good.)
		f := cl.ownLease.Fence()
		cm.ReleaseLease = &f
	}
	return r.CommitRuntimeState{Commit: cm}
}

// Deadlines are the expiry instants op sets up at now: a lease's or a
// claim's expiry, and delayed work's availability.
func (w *runtimeWorkload) Deadlines(op spec.Op, now int64) []int64 {
	switch o := op.(type) {
	case r.TryClaimSessionExecutionLease:
		return []int64{now + int64(o.TTLMs)}
	case r.RenewSessionExecutionLease:
		return []int64{now + int64(o.TTLMs)}
	case r.ClaimReadyQueuedWork:
		return []int64{now + int64(o.TTLMs)}
	case r.RenewQueuedWorkClaim:
		return []int64{now + int64(o.TTLMs)}
	case r.EnqueueQueuedWork:
		if o.Draft.AvailableAtMs > now {
			return []int64{o.Draft.AvailableAtMs}
		}
	}
	return nil
}

// RuntimeUnreachable are the cells of the runtime store's coverage matrix
// the default workload is not meant to reach, and why (every io but this
// one has the default reason: no workload makes a store fail so).
var RuntimeUnreachable = map[string]string{
	"commit_runtime_state:io": "besides a store that cannot work, io is the reading of runtime.commit_runtime_state.graph_repeated_node the reference does not take (the seed's failing INSERT surfacing a repeated node as an I/O error): the reference answers graph_node_conflict",
}

// Prologue reads the empty store before the clients start: the session's
// head, graph and meta, the queues, the attachments and a node the clients
// will write (what Observe reads, before anyone wrote), and the durability
// tier. A partitioned workload has none: the whole-store reads would join
// its parts.
func (w *runtimeWorkload) Prologue() []spec.Op {
	if w.Partitioned {
		return nil
	}
	ops := []spec.Op{r.DurabilityTierOp{}, r.LoadSession{Scope: r.FullGraph()}, r.LoadSession{Scope: r.ActivePathTo("")}, r.LoadSessionMeta{}}
	for _, s := range []string{boundSession, "session-1", ownSession(producer)} {
		ops = append(ops, r.ListQueuedWork{SessionID: s}, r.ListPendingQueuedWork{SessionID: s})
	}
	for i := range 4 {
		ops = append(ops, r.LoadAttachment{AttachmentID: fmt.Sprint("att-", i)})
	}
	return append(ops, r.LoadNode{NodeID: "n-0-0"})
}
