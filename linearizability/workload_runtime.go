package linearizability

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// RuntimeWorkload configures the runtime store's workload.
//
// Clients never see answers (a simulated schedule is generated before it
// runs), so a client remembers what it asked for and when, and rebuilds from
// that the tokens and ids a store of the contract would have answered: the
// lease it asked for at now is "<session>:<owner>:<now>:<fence>" where fence
// is its guess of the session's grant count; a batch it enqueued is its guess
// of the store's enqueue count; and so on (see model.Runtime). A guess that
// another client made wrong is a refused operation: both outcomes are wanted.
type RuntimeWorkload struct {
	// Sessions is how many sessions the clients share. Commits are for
	// session-0 (the store binds to it), or for a session nobody leases, to
	// meet the binding rule.
	Sessions int
	// Owners is how many owner ids the clients act as (client c is owner
	// c mod Owners): fewer owners than clients means clients share a lease.
	Owners int
	// TTLsMs are the lease and claim TTLs the clients pick from.
	TTLsMs []uint64
	// Partitioned issues only session lease and attachment operations over
	// many sessions, so the history splits per session.
	Partitioned bool
}

// DefaultRuntimeWorkload is the default run's: eight clients as six owners
// fighting over two sessions' leases and queues, with TTLs near the clock's
// jumps so that leases and claims expire between and inside epochs.
var DefaultRuntimeWorkload = RuntimeWorkload{Sessions: 2, Owners: 6, TTLsMs: []uint64{300, 1_000, 2_500, 6_000}}

// New is a fresh workload of this configuration.
func (w RuntimeWorkload) New() Workload {
	if w.Sessions <= 0 {
		w.Sessions = 1
	}
	if w.Owners <= 0 {
		w.Owners = 1
	}
	if len(w.TTLsMs) == 0 {
		w.TTLsMs = DefaultRuntimeWorkload.TTLsMs
	}
	return &runtimeWorkload{RuntimeWorkload: w, clients: map[int]*runtimeClient{}}
}

type runtimeWorkload struct {
	RuntimeWorkload
	mu      sync.Mutex
	clients map[int]*runtimeClient
}

// heldLease is a lease a client asked for, as it believes it was granted.
type heldLease struct {
	fence     r.SessionExecutionLeaseFence
	expiresAt int64
}

type askedTurn struct {
	turn, hash string
}

// runtimeClient is what one client remembers of what it asked.
type runtimeClient struct {
	n, step  int
	owner    string
	now      int64
	epochs   int
	leases   map[string]heldLease
	fences   map[string]uint64 // its guess of each session's grant count
	enqueued int               // enqueues it asked for
	claim    *r.QueuedWorkClaim
	claimed  uint64 // its guess of a claimed batch's claim count
	turns    []askedTurn
	commits  int
	nodes    int
	plan     []spec.Op
}

func (w *runtimeWorkload) client(n int) *runtimeClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	cl := w.clients[n]
	if cl == nil {
		cl = &runtimeClient{n: n, owner: fmt.Sprint("owner-", n%w.Owners), leases: map[string]heldLease{}, fences: map[string]uint64{}}
		w.clients[n] = cl
	}
	return cl
}

// boundSession is the session commits are for; unleasedSession is one no
// client ever leases.
const (
	boundSession    = "session-0"
	unleasedSession = "session-x"
)

func (w *runtimeWorkload) session(r *rand.Rand) string {
	if r.IntN(3) > 0 {
		return boundSession
	}
	return fmt.Sprint("session-", r.IntN(w.Sessions))
}

func (w *runtimeWorkload) ttl(r *rand.Rand) uint64 { return w.TTLsMs[r.IntN(len(w.TTLsMs))] }

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// Next is NextAt with the clock at the epoch: a client that cannot read the
// clock guesses tokens that are mostly wrong.
func (w *runtimeWorkload) Next(r *rand.Rand, client, step int) spec.Op {
	return w.NextAt(r, client, step, Epoch.UnixMilli())
}

// NextAt is the client's next operation, at now (the time the client reads
// before it acts, as the operation will run at).
func (w *runtimeWorkload) NextAt(rnd *rand.Rand, client, step int, now int64) spec.Op {
	cl := w.client(client)
	if now != cl.now {
		cl.now = now
		cl.epochs++
		// Time passed: other clients likely took the leases it saw free.
		for s := range cl.fences {
			if rnd.IntN(3) == 0 {
				cl.fences[s]++
			}
		}
	}
	cl.step = step
	if len(cl.plan) > 0 {
		op := cl.plan[0]
		cl.plan = cl.plan[1:]
		return w.remember(cl, op)
	}
	if w.Partitioned {
		return w.remember(cl, w.partitioned(rnd, cl))
	}
	switch p := rnd.IntN(100); {
	case p < 14:
		// A turn: take the lease, commit, and sometimes let it go.
		s := boundSession
		ttl := w.ttl(rnd)
		claim := r.TryClaimSessionExecutionLease{SessionID: s, OwnerID: cl.owner, TTLMs: ttl}
		lease := cl.expectLease(rnd, claim)
		cl.plan = []spec.Op{w.commit(rnd, cl, &lease)}
		if rnd.IntN(3) == 0 {
			cl.plan = append(cl.plan, w.claimWork(rnd, cl, s, lease))
			cl.plan = append(cl.plan, nil) // a commit completing it, built when its turn comes
		}
		if rnd.IntN(3) == 0 {
			cl.plan = append(cl.plan, r.ReleaseSessionExecutionLease{Completion: lease})
		}
		return w.remember(cl, claim)
	case p < 22:
		return w.remember(cl, r.TryClaimSessionExecutionLease{SessionID: w.session(rnd), OwnerID: cl.owner, TTLMs: w.ttl(rnd)})
	case p < 34:
		l := cl.leaseFor(rnd, boundSession)
		return w.remember(cl, w.commit(rnd, cl, &l))
	case p < 40:
		s := w.session(rnd)
		return w.remember(cl, r.RenewSessionExecutionLease{Fence: cl.leaseFor(rnd, s), TTLMs: w.ttl(rnd)})
	case p < 44:
		return w.remember(cl, r.ReleaseSessionExecutionLease{Completion: cl.leaseFor(rnd, w.session(rnd))})
	case p < 56:
		return w.remember(cl, w.enqueue(rnd, cl))
	case p < 63:
		s := w.session(rnd)
		return w.remember(cl, w.claimWork(rnd, cl, s, cl.leaseFor(rnd, s)))
	case p < 68:
		return w.remember(cl, r.RenewQueuedWorkClaim{Claim: cl.claimOrGuess(rnd), TTLMs: w.ttl(rnd)})
	case p < 71:
		return w.remember(cl, r.AbandonQueuedWorkClaim{Claim: cl.claimOrGuess(rnd)})
	case p < 75:
		s := w.session(rnd)
		return w.remember(cl, r.CancelQueuedWorkBatch{SessionID: s, BatchID: model.BatchID(s, cl.seqGuess(rnd))})
	case p < 78:
		if rnd.IntN(2) == 0 {
			return w.remember(cl, r.ListQueuedWork{SessionID: w.session(rnd)})
		}
		return w.remember(cl, r.ListPendingQueuedWork{SessionID: w.session(rnd)})
	case p < 83:
		scope := r.FullGraph()
		if rnd.IntN(2) == 0 {
			scope = r.ActivePathTo(pick(rnd, "", cl.nodeID(rnd)))
		}
		return w.remember(cl, r.LoadSession{Scope: scope})
	case p < 85:
		return w.remember(cl, r.LoadNode{NodeID: cl.nodeID(rnd)})
	case p < 87:
		return w.remember(cl, r.TombstoneNodes{IDs: []string{cl.nodeID(rnd), cl.nodeID(rnd)}})
	case p < 88:
		return w.remember(cl, r.Vacuum{})
	case p < 89:
		return w.remember(cl, r.GcUnreachable{})
	case p < 91:
		return w.remember(cl, r.SaveSessionMeta{Meta: pick(rnd, json.RawMessage(nil), json.RawMessage(`{"title":"a"}`), json.RawMessage(`{"title":"b"}`))})
	case p < 92:
		return w.remember(cl, r.LoadSessionMeta{})
	case p < 95:
		return w.remember(cl, r.StageAttachment{SessionID: pick(rnd, boundSession, boundSession, "session-1"),
			AttachmentID: fmt.Sprint("att-", rnd.IntN(4)), Data: []byte(pick(rnd, "", "png", "pdf"))})
	case p < 97:
		return w.remember(cl, r.LoadAttachment{AttachmentID: fmt.Sprint("att-", rnd.IntN(4))})
	default:
		// A replay of a turn it committed, or a turn of another.
		l := cl.leaseFor(rnd, boundSession)
		return w.remember(cl, w.commit(rnd, cl, &l))
	}
}

func (w *runtimeWorkload) partitioned(rnd *rand.Rand, cl *runtimeClient) spec.Op {
	s := fmt.Sprint("session-", rnd.IntN(w.Sessions))
	switch p := rnd.IntN(10); {
	case p < 4:
		return r.TryClaimSessionExecutionLease{SessionID: s, OwnerID: cl.owner, TTLMs: w.ttl(rnd)}
	case p < 6:
		return r.RenewSessionExecutionLease{Fence: cl.leaseFor(rnd, s), TTLMs: w.ttl(rnd)}
	case p < 7:
		return r.ReleaseSessionExecutionLease{Completion: cl.leaseFor(rnd, s)}
	case p < 9:
		return r.StageAttachment{SessionID: s, AttachmentID: fmt.Sprint("att-", rnd.IntN(w.Sessions*2)), Data: []byte("x")}
	default:
		return r.LoadAttachment{AttachmentID: fmt.Sprint("att-", rnd.IntN(w.Sessions*2))}
	}
}

// remember keeps what the client asked for: the lease it believes it holds,
// the claim it believes it made, the turns it committed. A nil op in a plan
// is a commit completing the claim it made, built now.
func (w *runtimeWorkload) remember(cl *runtimeClient, op spec.Op) spec.Op {
	switch o := op.(type) {
	case nil:
		l := cl.leases[boundSession].fence
		rnd := rand.New(rand.NewPCG(uint64(cl.n), uint64(cl.step)))
		c := w.commit(rnd, cl, &l).(r.CommitRuntimeState)
		if cl.claim != nil {
			c.Commit.CompletedQueueClaims = []r.CompletedQueueClaim{cl.claim.Completed()}
		}
		return w.remember(cl, c)
	case r.TryClaimSessionExecutionLease:
		if _, ok := cl.leases[o.SessionID]; !ok || cl.leases[o.SessionID].expiresAt <= cl.now {
			rnd := rand.New(rand.NewPCG(uint64(cl.n), uint64(cl.step)))
			cl.expectLease(rnd, o)
		} else {
			h := cl.leases[o.SessionID]
			h.expiresAt = cl.now + int64(o.TTLMs)
			cl.leases[o.SessionID] = h
		}
	case r.RenewSessionExecutionLease:
		if h, ok := cl.leases[o.Fence.SessionID]; ok && h.fence == o.Fence {
			h.expiresAt = cl.now + int64(o.TTLMs)
			cl.leases[o.Fence.SessionID] = h
		}
	case r.ReleaseSessionExecutionLease:
		if h, ok := cl.leases[o.Completion.SessionID]; ok && h.fence == o.Completion {
			delete(cl.leases, o.Completion.SessionID)
		}
	case r.EnqueueQueuedWork:
		cl.enqueued++
	case r.CommitRuntimeState:
		if tc := o.Commit.TurnCommit; tc != nil {
			cl.turns = append(cl.turns, askedTurn{tc.TurnID, tc.TurnCommitHash})
		}
		if len(o.Commit.CompletedQueueClaims) > 0 {
			cl.claim = nil
		}
		if rl := o.Commit.ReleaseLease; rl != nil {
			delete(cl.leases, rl.SessionID)
		}
	}
	return op
}

// expectLease is the lease the client expects a claim at now to grant: the
// one it holds, extended, or a new one at its guess of the next fence.
func (cl *runtimeClient) expectLease(rnd *rand.Rand, o r.TryClaimSessionExecutionLease) r.SessionExecutionLeaseFence {
	if h, ok := cl.leases[o.SessionID]; ok && h.expiresAt > cl.now {
		h.expiresAt = cl.now + int64(o.TTLMs)
		cl.leases[o.SessionID] = h
		return h.fence
	}
	fence := cl.fences[o.SessionID] + 1
	if rnd.IntN(4) == 0 {
		fence++
	}
	cl.fences[o.SessionID] = fence
	f := r.SessionExecutionLeaseFence{SessionID: o.SessionID, OwnerID: o.OwnerID, FencingToken: fence,
		LeaseToken: model.LeaseToken(o.SessionID, o.OwnerID, cl.now, fence)}
	cl.leases[o.SessionID] = heldLease{fence: f, expiresAt: cl.now + int64(o.TTLMs)}
	return f
}

// leaseFor is the lease the client believes it holds on session, or, now
// and then, a stale or foreign one.
func (cl *runtimeClient) leaseFor(rnd *rand.Rand, session string) r.SessionExecutionLeaseFence {
	h, ok := cl.leases[session]
	if !ok || rnd.IntN(10) == 0 {
		f := cl.fences[session]
		return r.SessionExecutionLeaseFence{SessionID: session, OwnerID: cl.owner, FencingToken: f,
			LeaseToken: model.LeaseToken(session, cl.owner, cl.now-int64(rnd.IntN(2))*1000, f)}
	}
	return h.fence
}

// seqGuess guesses the store's count of enqueues at one of this client's.
func (cl *runtimeClient) seqGuess(rnd *rand.Rand) int64 {
	return int64(max(1, cl.enqueued*3+rnd.IntN(5)-2))
}

func (cl *runtimeClient) nodeID(rnd *rand.Rand) string {
	if cl.nodes == 0 || rnd.IntN(4) == 0 {
		return fmt.Sprintf("n-%d-%d", rnd.IntN(8), rnd.IntN(4))
	}
	return fmt.Sprintf("n-%d-%d", cl.n, rnd.IntN(cl.nodes))
}

// claimOrGuess is the claim the client made, or a guess at one.
func (cl *runtimeClient) claimOrGuess(rnd *rand.Rand) r.QueuedWorkClaim {
	if cl.claim != nil && rnd.IntN(8) > 0 {
		return *cl.claim
	}
	s := boundSession
	b := model.BatchID(s, cl.seqGuess(rnd))
	id := model.ClaimID(s, b, 1)
	return r.QueuedWorkClaim{SessionID: s, ClaimID: id, OwnerID: cl.owner, LeaseToken: model.ClaimToken(id, cl.owner, cl.now),
		FencingToken: 1, Batches: []r.QueuedWorkBatch{{BatchID: b, SessionID: s}}}
}

func (w *runtimeWorkload) enqueue(rnd *rand.Rand, cl *runtimeClient) spec.Op {
	d := r.QueuedWorkBatchDraft{
		SessionID:      w.session(rnd),
		DeliveryPolicy: pick(rnd, r.DeliverNextTurn, r.DeliverInterrupt),
		SlotPolicy:     pick(rnd, r.SlotExclusive, r.SlotMergeable, r.SlotMergeable),
		MergeKey:       pick(rnd, "", "m", "m"),
		AvailableAtMs:  cl.now - int64(rnd.IntN(1000)),
		Payloads:       []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"c":%d,"n":%d}`, cl.n, cl.enqueued))},
	}
	if rnd.IntN(4) == 0 {
		d.AvailableAtMs = cl.now + int64(1+rnd.IntN(3_000))
	}
	if rnd.IntN(3) == 0 {
		d.SourceKey = fmt.Sprint("src-", rnd.IntN(3))
	}
	if rnd.IntN(3) == 0 {
		d.Payloads = append(d.Payloads, nil)
	}
	if rnd.IntN(30) == 0 {
		d.SlotPolicy = "shared"
	}
	return r.EnqueueQueuedWork{Draft: d}
}

// claimWork claims ready work under lease, and remembers the claim it
// expects: of its guess of the first ready batch, one batch.
func (w *runtimeWorkload) claimWork(rnd *rand.Rand, cl *runtimeClient, s string, lease r.SessionExecutionLeaseFence) spec.Op {
	op := r.ClaimReadyQueuedWork{SessionID: s, Lease: lease, OwnerID: cl.owner, Boundary: pick(rnd, r.BoundaryTurn, r.BoundaryTurn, r.BoundaryStep),
		TTLMs: w.ttl(rnd), MaxBatches: pick(rnd, 1, 1, 2, 3)}
	switch rnd.IntN(30) {
	case 0:
		op.MaxBatches = 0
	case 1:
		op.Boundary = "midway"
	}
	b := model.BatchID(s, cl.seqGuess(rnd))
	fence := uint64(1 + rnd.IntN(2))
	id := model.ClaimID(s, b, fence)
	cl.claim = &r.QueuedWorkClaim{SessionID: s, ClaimID: id, OwnerID: cl.owner, LeaseToken: model.ClaimToken(id, cl.owner, cl.now),
		FencingToken: fence, ClaimedAtMs: cl.now, ExpiresAtMs: cl.now + int64(op.TTLMs), Batches: []r.QueuedWorkBatch{{BatchID: b, SessionID: s}}}
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
	if rnd.IntN(2) == 0 {
		rev := uint64(max(0, cl.commits*2+rnd.IntN(3)-1))
		cm.ExpectedHeadRevision = &rev
	}
	cl.commits++
	switch p := rnd.IntN(20); {
	case p < 10:
		for range 1 + rnd.IntN(2) {
			id := fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
			cl.nodes++
			cm.Graph.Nodes = append(cm.Graph.Nodes, r.Node{NodeID: id, ParentID: cm.Graph.LeafNodeID, Data: json.RawMessage(`{"t":1}`)})
			cm.Graph.LeafNodeID = id
		}
		cm.Graph.Kind = r.GraphAppend
		if rnd.IntN(2) == 0 {
			cm.Graph.Nodes[0].ParentID = cl.nodeID(rnd)
		}
	case p < 12:
		cm.Graph = r.GraphDelta{Kind: r.GraphAppend, Nodes: []r.Node{{NodeID: cl.nodeID(rnd)}}}
	case p < 14:
		id := fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
		cl.nodes++
		cm.Graph = r.GraphDelta{Kind: r.GraphReplaceFull, Nodes: []r.Node{{NodeID: id}}, LeafNodeID: id}
	case p < 15:
		cm.Graph.Kind = "rebase"
	default:
		cm.Graph = r.GraphDelta{Kind: r.GraphUnchanged, LeafNodeID: cl.nodeID(rnd)}
	}
	if rnd.IntN(3) == 0 {
		cm.Config = json.RawMessage(pick(rnd, `{"model":"m1"}`, `{"model":"m2"}`))
		cm.AgentFrames = json.RawMessage(`[{"id":"f1"}]`)
		cm.CurrentAgentFrameID = "f1"
	}
	for range rnd.IntN(3) {
		cm.UsageDeltas = append(cm.UsageDeltas, r.UsageEntry{Source: pick(rnd, "agent", "tool"), Model: pick(rnd, "m1", "m2"),
			Usage: r.Usage{InputTokens: uint64(rnd.IntN(100)), OutputTokens: uint64(rnd.IntN(50)), CachedInputTokens: uint64(rnd.IntN(5))}})
	}
	if rnd.IntN(4) == 0 {
		cm.CommittedAttachmentIDs = []string{fmt.Sprint("att-", rnd.IntN(4))}
	}
	if cl.claim != nil && rnd.IntN(2) == 0 {
		cm.CompletedQueueClaims = []r.CompletedQueueClaim{cl.claim.Completed()}
	}
	if lease != nil && rnd.IntN(5) == 0 {
		cm.ReleaseLease = lease
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
