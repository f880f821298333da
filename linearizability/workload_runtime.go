package linearizability

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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
