package suite

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	rt "github.com/storecheck/storecheck/spec/runtime"
)

// The ids and ttls of the runtime specs; rt-prefixed where the continuity
// specs name a session too.
const (
	rtSession = "session-a"
	rtOther   = "session-b"
	worker    = "worker-1"
	rival     = "worker-2"
	leaseTTL  = uint64(60_000)
	claimTTL  = uint64(1_000)
)

// runtimeFixture is what the store's specs share: the harness, the spec's
// fresh clock and path, its open store, and the helpers as methods.
type runtimeFixture struct {
	h Harness
	*fresh
	s rt.Store
}

// The runtime contract's rules, one Describe per operation (see spec/runtime
// for the rules as the contract states them), grouped in runtime_*.go.
func runtimeSpecs(h Harness) {
	fx := &runtimeFixture{h: h}

	BeforeEach(func() {
		if fx.h.Runtime == nil {
			Skip("backend does not implement the runtime store")
		}
		fx.fresh = newFresh(fx.h, "runtime.db")
		fx.s = fx.open(fx.path)
	})

	runtimeLeaseSpecs(fx)
	runtimeCommitSpecs(fx)
	runtimeGraphSpecs(fx)
	runtimeQueueSpecs(fx)
	runtimeMiscSpecs(fx)
}

// open opens a store on path and closes it when the spec ends.
func (fx *runtimeFixture) open(path string) rt.Store {
	GinkgoHelper()
	return openForSpec(fx.fresh, fx.h.Runtime, path, "runtime", func(st rt.Store, once *closeOnce) rt.Store {
		return runtimeHandle{st, once}
	})
}

func (fx *runtimeFixture) advance(ms uint64) { fx.clock.Advance(time.Duration(ms) * time.Millisecond) }

func (fx *runtimeFixture) now() int64 { return fx.clock.Now().UnixMilli() }

func (fx *runtimeFixture) u64(v uint64) *uint64 { return &v }

// Leases.

func (fx *runtimeFixture) tryClaimOn(st rt.Store, sess, owner string) *rt.SessionExecutionLease {
	GinkgoHelper()
	l, err := st.TryClaimSessionExecutionLease(fx.ctx, sess, owner, leaseTTL)
	Expect(err).NotTo(HaveOccurred(), "try_claim_session_execution_lease %s %s", sess, owner)
	return l
}

func (fx *runtimeFixture) tryClaim(owner string) *rt.SessionExecutionLease {
	GinkgoHelper()
	return fx.tryClaimOn(fx.s, rtSession, owner)
}

func (fx *runtimeFixture) lease(owner string) *rt.SessionExecutionLease {
	GinkgoHelper()
	l := fx.tryClaim(owner)
	Expect(l).NotTo(BeNil(), "%s claims the session lease", owner)
	return l
}

func (fx *runtimeFixture) fenceOf(l *rt.SessionExecutionLease) *rt.SessionExecutionLeaseFence {
	fence := l.Fence()
	return &fence
}

// fenceVariants are fences that differ from l's in one field each.
func (fx *runtimeFixture) fenceVariants(l *rt.SessionExecutionLease) map[string]rt.SessionExecutionLeaseFence {
	out := map[string]rt.SessionExecutionLeaseFence{}
	for what, m := range map[string]func(*rt.SessionExecutionLeaseFence){
		"another owner":         func(x *rt.SessionExecutionLeaseFence) { x.OwnerID = rival },
		"another token":         func(x *rt.SessionExecutionLeaseFence) { x.LeaseToken = "forged" },
		"another fencing token": func(x *rt.SessionExecutionLeaseFence) { x.FencingToken++ },
		"another session":       func(x *rt.SessionExecutionLeaseFence) { x.SessionID = rtOther },
	} {
		fence := l.Fence()
		m(&fence)
		out[what] = fence
	}
	return out
}

// Commits.

func (fx *runtimeFixture) commitOf(l *rt.SessionExecutionLease, checkpoint string) rt.RuntimeCommit {
	cm := rt.RuntimeCommit{SessionID: rtSession, Graph: rt.GraphDelta{Kind: rt.GraphUnchanged},
		Checkpoint: []byte(checkpoint), Config: spec.RawJSON(`{"model":"m-1"}`)}
	if l != nil {
		cm.Lease = fx.fenceOf(l)
	}
	return cm
}

func (fx *runtimeFixture) commitOn(st rt.Store, cm rt.RuntimeCommit) rt.CommitResult {
	GinkgoHelper()
	res, err := st.CommitRuntimeState(fx.ctx, cm)
	Expect(err).NotTo(HaveOccurred(), "commit_runtime_state")
	return res
}

func (fx *runtimeFixture) commit(cm rt.RuntimeCommit) rt.CommitResult {
	GinkgoHelper()
	return fx.commitOn(fx.s, cm)
}

func (fx *runtimeFixture) node(id, parent string) rt.Node {
	return rt.Node{NodeID: id, ParentID: parent, Data: spec.RawJSON(`{"text":"` + id + `"}`)}
}

func (fx *runtimeFixture) appendNodes(leaf string, nodes ...rt.Node) rt.GraphDelta {
	return rt.GraphDelta{Kind: rt.GraphAppend, Nodes: nodes, LeafNodeID: leaf}
}

func (fx *runtimeFixture) loadOn(st rt.Store, scope rt.ReadScope) *rt.SessionRead {
	GinkgoHelper()
	read, err := st.LoadSession(fx.ctx, scope)
	Expect(err).NotTo(HaveOccurred(), "load_session")
	return read
}

func (fx *runtimeFixture) load(scope rt.ReadScope) *rt.SessionRead {
	GinkgoHelper()
	return fx.loadOn(fx.s, scope)
}

func (fx *runtimeFixture) nodeIDs(g rt.Graph) []string {
	ids := []string{}
	for _, n := range g.Nodes {
		ids = append(ids, n.NodeID)
	}
	return ids
}

func (fx *runtimeFixture) loadNode(id string) *rt.Node {
	GinkgoHelper()
	n, err := fx.s.LoadNode(fx.ctx, id)
	Expect(err).NotTo(HaveOccurred(), "load_node %s", id)
	return n
}

func (fx *runtimeFixture) tombstone(ids ...string) {
	GinkgoHelper()
	Expect(fx.s.TombstoneNodes(fx.ctx, ids)).To(Succeed())
}

func (fx *runtimeFixture) vacuum() int {
	GinkgoHelper()
	rep, err := fx.s.Vacuum(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return rep.RemovedNodeCount
}

func (fx *runtimeFixture) attachment(id string) *rt.Attachment {
	GinkgoHelper()
	a, err := fx.s.LoadAttachment(fx.ctx, id)
	Expect(err).NotTo(HaveOccurred(), "load_attachment %s", id)
	return a
}

func (fx *runtimeFixture) stage(sess, id, data string) {
	GinkgoHelper()
	Expect(fx.s.StageAttachment(fx.ctx, sess, id, []byte(data))).To(Succeed())
}

// Queued work.

func (fx *runtimeFixture) draft(slot rt.SlotPolicy, key string) rt.QueuedWorkBatchDraft {
	return rt.QueuedWorkBatchDraft{SessionID: rtSession, DeliveryPolicy: rt.DeliverNextTurn, SlotPolicy: slot, MergeKey: key,
		AvailableAtMs: fx.now(), Payloads: []spec.RawJSON{spec.RawJSON(`{"text":"hello"}`)}}
}

func (fx *runtimeFixture) enqueueOn(st rt.Store, d rt.QueuedWorkBatchDraft) rt.QueuedWorkBatch {
	GinkgoHelper()
	b, err := st.EnqueueQueuedWork(fx.ctx, d)
	Expect(err).NotTo(HaveOccurred(), "enqueue_queued_work")
	return b
}

func (fx *runtimeFixture) enqueue(d rt.QueuedWorkBatchDraft) rt.QueuedWorkBatch {
	GinkgoHelper()
	return fx.enqueueOn(fx.s, d)
}

func (fx *runtimeFixture) mergeable() rt.QueuedWorkBatch {
	GinkgoHelper()
	return fx.enqueue(fx.draft(rt.SlotMergeable, "k"))
}

func (fx *runtimeFixture) batchIDs(bs []rt.QueuedWorkBatch) []string {
	ids := []string{}
	for _, b := range bs {
		ids = append(ids, b.BatchID)
	}
	return ids
}

func (fx *runtimeFixture) claimOn(st rt.Store, l *rt.SessionExecutionLease, owner string, boundary rt.QueuedWorkClaimBoundary, max int) *rt.QueuedWorkClaim {
	GinkgoHelper()
	c, err := st.ClaimReadyQueuedWork(fx.ctx, rtSession, l.Fence(), owner, boundary, claimTTL, max)
	Expect(err).NotTo(HaveOccurred(), "claim_ready_queued_work")
	return c
}

func (fx *runtimeFixture) claimWork(l *rt.SessionExecutionLease, owner string, max int) *rt.QueuedWorkClaim {
	GinkgoHelper()
	return fx.claimOn(fx.s, l, owner, rt.BoundaryTurn, max)
}

func (fx *runtimeFixture) claimed(c *rt.QueuedWorkClaim) []string {
	GinkgoHelper()
	Expect(c).NotTo(BeNil(), "a claim was won")
	return fx.batchIDs(c.Batches)
}

func (fx *runtimeFixture) list(sess string) []rt.QueuedWorkBatch {
	GinkgoHelper()
	bs, err := fx.s.ListQueuedWork(fx.ctx, sess)
	Expect(err).NotTo(HaveOccurred())
	return bs
}

func (fx *runtimeFixture) pending() []rt.QueuedWorkBatch {
	GinkgoHelper()
	bs, err := fx.s.ListPendingQueuedWork(fx.ctx, rtSession)
	Expect(err).NotTo(HaveOccurred())
	return bs
}

func (fx *runtimeFixture) cancel(sess, id string) *rt.QueuedWorkBatch {
	GinkgoHelper()
	b, err := fx.s.CancelQueuedWorkBatch(fx.ctx, sess, id)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// runtimeObserved is everything the specs can observe without changing
// anything, to show that a failed operation changed nothing.
type runtimeObserved struct {
	Session, Path *rt.SessionRead
	Queue         [][]rt.QueuedWorkBatch
	Pending       []rt.QueuedWorkBatch
	Meta          spec.RawJSON
	Attachments   []*rt.Attachment
}

func (fx *runtimeFixture) state() runtimeObserved {
	GinkgoHelper()
	meta, err := fx.s.LoadSessionMeta(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return runtimeObserved{
		Session:     fx.load(rt.FullGraph()),
		Path:        fx.load(rt.ActivePathTo("")),
		Queue:       [][]rt.QueuedWorkBatch{fx.list(rtSession), fx.list(rtOther)},
		Pending:     fx.pending(),
		Meta:        meta,
		Attachments: []*rt.Attachment{fx.attachment("att-1"), fx.attachment("att-2")},
	}
}

// refused checks that err has the kind and that nothing changed.
func (fx *runtimeFixture) refused(before runtimeObserved, err error, kind error) {
	GinkgoHelper()
	refusedUnchanged(fx.state, before, err, kind)
}

func (fx *runtimeFixture) refusedCommit(cm rt.RuntimeCommit, kind error) {
	GinkgoHelper()
	before := fx.state()
	_, err := fx.s.CommitRuntimeState(fx.ctx, cm)
	fx.refused(before, err, kind)
}

// runtimeHandle is a runtime store whose Close the spec and the cleanup share.
type runtimeHandle struct {
	rt.Store
	once *closeOnce
}

func (s runtimeHandle) Close() error { return s.once.Close() }
