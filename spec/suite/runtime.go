package suite

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The runtime contract's rules, one Describe per operation (see spec/runtime
// for the rules as the contract states them).
func runtimeSpecs(h Harness) {
	const (
		session  = "session-a"
		other    = "session-b"
		worker   = "worker-1"
		rival    = "worker-2"
		leaseTTL = uint64(60_000)
		claimTTL = uint64(1_000)
	)
	var (
		f *fresh
		s r.Store
	)

	// open opens a store on path and closes it when the spec ends.
	open := func(path string) r.Store {
		st, err := h.Runtime(f.ctx, Options{Path: path, Clock: f.clock})
		Expect(err).NotTo(HaveOccurred(), "open the runtime store")
		closed := false
		DeferCleanup(func() {
			if !closed {
				closed = true
				Expect(st.Close()).To(Succeed())
			}
		})
		return &runtimeCloseOnce{Store: st, closed: &closed}
	}
	advance := func(ms uint64) { f.clock.Advance(time.Duration(ms) * time.Millisecond) }
	now := func() int64 { return f.clock.Now().UnixMilli() }
	u64 := func(v uint64) *uint64 { return &v }

	// Leases.
	tryClaimOn := func(st r.Store, sess, owner string) *r.SessionExecutionLease {
		GinkgoHelper()
		l, err := st.TryClaimSessionExecutionLease(f.ctx, sess, owner, leaseTTL)
		Expect(err).NotTo(HaveOccurred(), "try_claim_session_execution_lease %s %s", sess, owner)
		return l
	}
	tryClaim := func(owner string) *r.SessionExecutionLease {
		GinkgoHelper()
		return tryClaimOn(s, session, owner)
	}
	lease := func(owner string) *r.SessionExecutionLease {
		GinkgoHelper()
		l := tryClaim(owner)
		Expect(l).NotTo(BeNil(), "%s claims the session lease", owner)
		return l
	}
	fenceOf := func(l *r.SessionExecutionLease) *r.SessionExecutionLeaseFence {
		fence := l.Fence()
		return &fence
	}
	// fenceVariants are fences that differ from l's in one field each.
	fenceVariants := func(l *r.SessionExecutionLease) map[string]r.SessionExecutionLeaseFence {
		out := map[string]r.SessionExecutionLeaseFence{}
		for what, m := range map[string]func(*r.SessionExecutionLeaseFence){
			"another owner":         func(x *r.SessionExecutionLeaseFence) { x.OwnerID = rival },
			"another token":         func(x *r.SessionExecutionLeaseFence) { x.LeaseToken = "forged" },
			"another fencing token": func(x *r.SessionExecutionLeaseFence) { x.FencingToken++ },
			"another session":       func(x *r.SessionExecutionLeaseFence) { x.SessionID = other },
		} {
			fence := l.Fence()
			m(&fence)
			out[what] = fence
		}
		return out
	}

	// Commits.
	commitOf := func(l *r.SessionExecutionLease, checkpoint string) r.RuntimeCommit {
		cm := r.RuntimeCommit{SessionID: session, Graph: r.GraphDelta{Kind: r.GraphUnchanged},
			Checkpoint: []byte(checkpoint), Config: spec.RawJSON(`{"model":"m-1"}`)}
		if l != nil {
			cm.Lease = fenceOf(l)
		}
		return cm
	}
	commitOn := func(st r.Store, cm r.RuntimeCommit) r.CommitResult {
		GinkgoHelper()
		res, err := st.CommitRuntimeState(f.ctx, cm)
		Expect(err).NotTo(HaveOccurred(), "commit_runtime_state")
		return res
	}
	commit := func(cm r.RuntimeCommit) r.CommitResult {
		GinkgoHelper()
		return commitOn(s, cm)
	}
	node := func(id, parent string) r.Node {
		return r.Node{NodeID: id, ParentID: parent, Data: spec.RawJSON(`{"text":"` + id + `"}`)}
	}
	appendNodes := func(leaf string, nodes ...r.Node) r.GraphDelta {
		return r.GraphDelta{Kind: r.GraphAppend, Nodes: nodes, LeafNodeID: leaf}
	}
	loadOn := func(st r.Store, scope r.ReadScope) *r.SessionRead {
		GinkgoHelper()
		read, err := st.LoadSession(f.ctx, scope)
		Expect(err).NotTo(HaveOccurred(), "load_session")
		return read
	}
	load := func(scope r.ReadScope) *r.SessionRead {
		GinkgoHelper()
		return loadOn(s, scope)
	}
	nodeIDs := func(g r.Graph) []string {
		ids := []string{}
		for _, n := range g.Nodes {
			ids = append(ids, n.NodeID)
		}
		return ids
	}
	loadNode := func(id string) *r.Node {
		GinkgoHelper()
		n, err := s.LoadNode(f.ctx, id)
		Expect(err).NotTo(HaveOccurred(), "load_node %s", id)
		return n
	}
	tombstone := func(ids ...string) {
		GinkgoHelper()
		Expect(s.TombstoneNodes(f.ctx, ids)).To(Succeed())
	}
	vacuum := func() int {
		GinkgoHelper()
		rep, err := s.Vacuum(f.ctx)
		Expect(err).NotTo(HaveOccurred())
		return rep.RemovedNodeCount
	}
	attachment := func(id string) *r.Attachment {
		GinkgoHelper()
		a, err := s.LoadAttachment(f.ctx, id)
		Expect(err).NotTo(HaveOccurred(), "load_attachment %s", id)
		return a
	}
	stage := func(sess, id, data string) {
		GinkgoHelper()
		Expect(s.StageAttachment(f.ctx, sess, id, []byte(data))).To(Succeed())
	}

	// Queued work.
	draft := func(slot r.SlotPolicy, key string) r.QueuedWorkBatchDraft {
		return r.QueuedWorkBatchDraft{SessionID: session, DeliveryPolicy: r.DeliverNextTurn, SlotPolicy: slot, MergeKey: key,
			AvailableAtMs: now(), Payloads: []spec.RawJSON{spec.RawJSON(`{"text":"hello"}`)}}
	}
	enqueueOn := func(st r.Store, d r.QueuedWorkBatchDraft) r.QueuedWorkBatch {
		GinkgoHelper()
		b, err := st.EnqueueQueuedWork(f.ctx, d)
		Expect(err).NotTo(HaveOccurred(), "enqueue_queued_work")
		return b
	}
	enqueue := func(d r.QueuedWorkBatchDraft) r.QueuedWorkBatch {
		GinkgoHelper()
		return enqueueOn(s, d)
	}
	mergeable := func() r.QueuedWorkBatch {
		GinkgoHelper()
		return enqueue(draft(r.SlotMergeable, "k"))
	}
	batchIDs := func(bs []r.QueuedWorkBatch) []string {
		ids := []string{}
		for _, b := range bs {
			ids = append(ids, b.BatchID)
		}
		return ids
	}
	claimOn := func(st r.Store, l *r.SessionExecutionLease, owner string, boundary r.QueuedWorkClaimBoundary, max int) *r.QueuedWorkClaim {
		GinkgoHelper()
		c, err := st.ClaimReadyQueuedWork(f.ctx, session, l.Fence(), owner, boundary, claimTTL, max)
		Expect(err).NotTo(HaveOccurred(), "claim_ready_queued_work")
		return c
	}
	claimWork := func(l *r.SessionExecutionLease, owner string, max int) *r.QueuedWorkClaim {
		GinkgoHelper()
		return claimOn(s, l, owner, r.BoundaryTurn, max)
	}
	claimed := func(c *r.QueuedWorkClaim) []string {
		GinkgoHelper()
		Expect(c).NotTo(BeNil(), "a claim was won")
		return batchIDs(c.Batches)
	}
	list := func(sess string) []r.QueuedWorkBatch {
		GinkgoHelper()
		bs, err := s.ListQueuedWork(f.ctx, sess)
		Expect(err).NotTo(HaveOccurred())
		return bs
	}
	pending := func() []r.QueuedWorkBatch {
		GinkgoHelper()
		bs, err := s.ListPendingQueuedWork(f.ctx, session)
		Expect(err).NotTo(HaveOccurred())
		return bs
	}
	cancel := func(sess, id string) *r.QueuedWorkBatch {
		GinkgoHelper()
		b, err := s.CancelQueuedWorkBatch(f.ctx, sess, id)
		Expect(err).NotTo(HaveOccurred())
		return b
	}

	// state is everything the specs can observe without changing anything,
	// to show that a failed operation changed nothing.
	type observed struct {
		Session, Path *r.SessionRead
		Queue         [][]r.QueuedWorkBatch
		Pending       []r.QueuedWorkBatch
		Meta          spec.RawJSON
		Attachments   []*r.Attachment
	}
	state := func() observed {
		GinkgoHelper()
		meta, err := s.LoadSessionMeta(f.ctx)
		Expect(err).NotTo(HaveOccurred())
		return observed{
			Session:     load(r.FullGraph()),
			Path:        load(r.ActivePathTo("")),
			Queue:       [][]r.QueuedWorkBatch{list(session), list(other)},
			Pending:     pending(),
			Meta:        meta,
			Attachments: []*r.Attachment{attachment("att-1"), attachment("att-2")},
		}
	}
	// refused checks that err has the kind and that nothing changed.
	refused := func(before observed, err error, kind error) {
		GinkgoHelper()
		Expect(err).To(MatchError(kind))
		Expect(state()).To(Equal(before), "a failed operation changes nothing")
	}
	refusedCommit := func(cm r.RuntimeCommit, kind error) {
		GinkgoHelper()
		before := state()
		_, err := s.CommitRuntimeState(f.ctx, cm)
		refused(before, err, kind)
	}

	BeforeEach(func() {
		if h.Runtime == nil {
			Skip("backend does not implement the runtime store")
		}
		f = newFresh(h, "runtime.db")
		s = open(f.path)
	})

	Describe("try_claim_session_execution_lease", func() {
		It("grants a lease with fencing token 1, claimed at now and expiring at now + ttl, when the session never had one", func() {
			l := lease(worker)
			Expect(l.LeaseToken).NotTo(BeEmpty())
			Expect(*l).To(Equal(r.SessionExecutionLease{SessionID: session, OwnerID: worker, LeaseToken: l.LeaseToken,
				FencingToken: 1, ClaimedAtMs: now(), ExpiresAtMs: now() + int64(leaseTTL)}))
		})
		It("extends a live lease of the same owner to now + ttl, keeping its token, fencing token and claim time", func() {
			l := lease(worker)
			advance(400)
			again := lease(worker)
			want := *l
			want.ExpiresAtMs = now() + int64(leaseTTL)
			Expect(*again).To(Equal(want))
			advance(leaseTTL - 1)
			Expect(tryClaim(rival)).To(BeNil(), "the extended lease is live past the first expiry")
		})
		It("answers no lease to another owner while the lease is live, up to 1ms before its expiry, and changes nothing", func() {
			l := lease(worker)
			Expect(tryClaim(rival)).To(BeNil())
			advance(leaseTTL - 1)
			Expect(tryClaim(rival)).To(BeNil())
			commit(commitOf(l, "cp"))
		})
		It("treats a lease whose expiry equals now as not live: another owner wins it with the next fencing token", func() {
			l := lease(worker)
			advance(leaseTTL)
			won := tryClaim(rival)
			Expect(won).NotTo(BeNil(), "a lease whose expiry equals now has expired")
			Expect(won.FencingToken).To(Equal(uint64(2)))
			Expect(won.LeaseToken).NotTo(Equal(l.LeaseToken))
			refusedCommit(commitOf(l, "cp"), r.ErrSessionExecutionLeaseExpired)
		})
		It("grants the same owner a new lease after expiry: a new token, the next fencing token, claimed at now", func() {
			l := lease(worker)
			advance(leaseTTL + 1)
			again := lease(worker)
			Expect(again.FencingToken).To(Equal(uint64(2)))
			Expect(again.LeaseToken).NotTo(Equal(l.LeaseToken))
			Expect(again.ClaimedAtMs).To(Equal(now()))
			_, err := s.RenewSessionExecutionLease(f.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "the old fence lost its authority")
		})
		It("keeps counting fencing tokens across releases", func() {
			l := lease(worker)
			Expect(s.ReleaseSessionExecutionLease(f.ctx, l.Fence())).To(Succeed())
			l2 := lease(rival)
			Expect(l2.FencingToken).To(Equal(uint64(2)))
			Expect(s.ReleaseSessionExecutionLease(f.ctx, l2.Fence())).To(Succeed())
			Expect(lease(worker).FencingToken).To(Equal(uint64(3)))
		})
		It("keeps each session's lease apart", func() {
			lease(worker)
			l := tryClaimOn(s, other, rival)
			Expect(l).NotTo(BeNil())
			Expect(l.FencingToken).To(Equal(uint64(1)))
		})
	})

	Describe("renew_session_execution_lease", func() {
		It("extends the live lease to now + ttl, keeping its token, fencing token and claim time", func() {
			l := lease(worker)
			advance(500)
			renewed, err := s.RenewSessionExecutionLease(f.ctx, l.Fence(), leaseTTL)
			Expect(err).NotTo(HaveOccurred())
			want := *l
			want.ExpiresAtMs = now() + int64(leaseTTL)
			Expect(renewed).To(Equal(want))
			advance(leaseTTL - 1)
			Expect(tryClaim(rival)).To(BeNil(), "the renewed lease is live past the first expiry")
		})
		It("renews 1ms before expiry, and fails session_execution_lease_expired exactly at expiry and after", func() {
			l := lease(worker)
			advance(leaseTTL - 1)
			_, err := s.RenewSessionExecutionLease(f.ctx, l.Fence(), leaseTTL)
			Expect(err).NotTo(HaveOccurred())
			advance(leaseTTL)
			_, err = s.RenewSessionExecutionLease(f.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "at expiry")
			advance(1)
			_, err = s.RenewSessionExecutionLease(f.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "after expiry")
			Expect(tryClaim(rival)).NotTo(BeNil(), "a failed renew extended nothing")
		})
		It("fails session_execution_lease_expired when the owner, token, fencing token or session differ, changing nothing", func() {
			l := lease(worker)
			for what, fence := range fenceVariants(l) {
				_, err := s.RenewSessionExecutionLease(f.ctx, fence, 10*leaseTTL)
				Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), what)
			}
			advance(leaseTTL)
			Expect(tryClaim(rival)).NotTo(BeNil(), "the lease still expired at its first expiry")
		})
		It("fails session_execution_lease_expired for a released lease and for a session that never had one", func() {
			l := lease(worker)
			Expect(s.ReleaseSessionExecutionLease(f.ctx, l.Fence())).To(Succeed())
			_, err := s.RenewSessionExecutionLease(f.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired))
			_, err = s.RenewSessionExecutionLease(f.ctx, r.SessionExecutionLeaseFence{SessionID: other, OwnerID: worker, LeaseToken: "t", FencingToken: 1}, leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired))
		})
	})

	Describe("release_session_execution_lease", func() {
		It("clears the lease when owner, token and fencing token match: another owner wins it at once", func() {
			l := lease(worker)
			Expect(s.ReleaseSessionExecutionLease(f.ctx, l.Fence())).To(Succeed())
			won := tryClaim(rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)))
			refusedCommit(commitOf(l, "cp"), r.ErrSessionExecutionLeaseExpired)
		})
		It("changes nothing when the owner, token, fencing token or session differ", func() {
			l := lease(worker)
			for what, fence := range fenceVariants(l) {
				Expect(s.ReleaseSessionExecutionLease(f.ctx, fence)).To(Succeed(), what)
				Expect(tryClaim(rival)).To(BeNil(), "after a release with %s", what)
			}
			commit(commitOf(l, "cp"))
		})
	})

	Describe("commit_runtime_state", func() {
		It("commits the first state at revision 1, and load_session returns every part of it", func() {
			l := lease(worker)
			cm := commitOf(l, "\x00checkpoint\xff")
			cm.Graph = appendNodes("child", node("root", ""), node("child", "root"))
			cm.AgentFrames = spec.RawJSON(`[{"id":"frame-1"}]`)
			cm.CurrentAgentFrameID = "frame-1"
			cm.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}}}
			res := commit(cm)
			Expect(res).To(Equal(r.CommitResult{HeadRevision: 1, CheckpointRef: r.CheckpointRef(cm.Checkpoint)}))
			Expect(load(r.FullGraph())).To(Equal(&r.SessionRead{
				SessionID: session, HeadRevision: 1, Config: cm.Config, AgentFrames: cm.AgentFrames,
				CurrentAgentFrameID: "frame-1", Graph: r.Graph{Nodes: cm.Graph.Nodes, LeafNodeID: "child"},
				CheckpointRef: res.CheckpointRef, Checkpoint: cm.Checkpoint, TokenLedger: cm.UsageDeltas,
			}))
		})
		It("moves the revision up by one per commit and makes the last checkpoint and config the head's", func() {
			l := lease(worker)
			for i, cp := range []string{"one", "two", "three"} {
				Expect(commit(commitOf(l, cp)).HeadRevision).To(Equal(uint64(i + 1)))
			}
			cm := commitOf(l, "four")
			cm.Config = spec.RawJSON(`{"model":"m-2"}`)
			commit(cm)
			read := load(r.FullGraph())
			Expect(read.HeadRevision).To(Equal(uint64(4)))
			Expect(read.Checkpoint).To(Equal([]byte("four")))
			Expect(read.CheckpointRef).To(Equal(r.CheckpointRef([]byte("four"))))
			Expect(read.Config).To(Equal(spec.RawJSON(`{"model":"m-2"}`)))
		})
		It("accepts expected_head_revision equal to the stored revision, 0 before the first commit", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.ExpectedHeadRevision = u64(0)
			Expect(commit(cm).HeadRevision).To(Equal(uint64(1)))
			cm.ExpectedHeadRevision = u64(1)
			Expect(commit(cm).HeadRevision).To(Equal(uint64(2)))
		})
		It("rejects any other expected_head_revision with head_revision_conflict and leaves no trace", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.ExpectedHeadRevision = u64(1)
			refusedCommit(cm, r.ErrHeadRevisionConflict)
			Expect(load(r.FullGraph())).To(BeNil(), "nothing before the first commit")
			commit(commitOf(l, "first"))
			cm.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 1}}}
			for _, stale := range []uint64{0, 2} {
				cm.ExpectedHeadRevision = u64(stale)
				refusedCommit(cm, r.ErrHeadRevisionConflict)
			}
		})
		It("rejects a commit without a lease with session_execution_lease_expired and leaves no trace", func() {
			l := lease(worker)
			commit(commitOf(l, "first"))
			refusedCommit(commitOf(nil, "second"), r.ErrSessionExecutionLeaseExpired)
		})
		It("rejects a lease that is not the live one (another owner, token, fencing token or session, or released) with session_execution_lease_expired", func() {
			l := lease(worker)
			commit(commitOf(l, "first"))
			for what, fence := range fenceVariants(l) {
				By(what)
				cm := commitOf(l, "second")
				cm.Lease = &fence
				refusedCommit(cm, r.ErrSessionExecutionLeaseExpired)
			}
			Expect(s.ReleaseSessionExecutionLease(f.ctx, l.Fence())).To(Succeed())
			refusedCommit(commitOf(l, "second"), r.ErrSessionExecutionLeaseExpired)
		})
		It("commits 1ms before the lease expires, and fails session_execution_lease_expired at expiry and after", func() {
			l := lease(worker)
			advance(leaseTTL - 1)
			commit(commitOf(l, "in time"))
			advance(1)
			refusedCommit(commitOf(l, "at expiry"), r.ErrSessionExecutionLeaseExpired)
			advance(1)
			refusedCommit(commitOf(l, "after expiry"), r.ErrSessionExecutionLeaseExpired)
		})
		It("binds the store to the session of its first commit: another session fails session_binding_mismatch", func() {
			l := lease(worker)
			commit(commitOf(l, "a"))
			lo := tryClaimOn(s, other, worker)
			Expect(lo).NotTo(BeNil())
			cm := commitOf(lo, "b")
			cm.SessionID = other
			refusedCommit(cm, r.ErrSessionBindingMismatch)
		})
		It("rejects a turn commit of another session with runtime_turn_commit_conflict", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.TurnCommit = &r.TurnCommit{SessionID: other, TurnID: "turn-1", TurnCommitHash: "h1"}
			refusedCommit(cm, r.ErrRuntimeTurnCommitConflict)
		})
		It("answers a replay of a committed turn with the same hash with the first result, and writes nothing", func() {
			l := lease(worker)
			cm := commitOf(l, "turn one")
			cm.TurnCommit = &r.TurnCommit{SessionID: session, TurnID: "turn-1", TurnCommitHash: "h1"}
			first := commit(cm)
			commit(commitOf(l, "later"))
			before := state()
			replay := cm
			replay.Checkpoint = []byte("replayed")
			replay.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 5}}}
			Expect(commit(replay)).To(Equal(first))
			Expect(state()).To(Equal(before), "a replay writes nothing")
		})
		It("still releases the lease when a replay of a committed turn asks", func() {
			l := lease(worker)
			cm := commitOf(l, "turn one")
			cm.TurnCommit = &r.TurnCommit{SessionID: session, TurnID: "turn-1", TurnCommitHash: "h1"}
			first := commit(cm)
			cm.ReleaseLease = fenceOf(l)
			Expect(commit(cm)).To(Equal(first))
			Expect(tryClaim(rival)).NotTo(BeNil(), "the replay released the lease")
		})
		It("rejects a replay of a committed turn with another hash with runtime_turn_commit_conflict", func() {
			l := lease(worker)
			cm := commitOf(l, "turn one")
			cm.TurnCommit = &r.TurnCommit{SessionID: session, TurnID: "turn-1", TurnCommitHash: "h1"}
			commit(cm)
			cm.TurnCommit = &r.TurnCommit{SessionID: session, TurnID: "turn-1", TurnCommitHash: "h2"}
			cm.Checkpoint = []byte("another outcome")
			refusedCommit(cm, r.ErrRuntimeTurnCommitConflict)
		})
		It("deletes the batches of the queue claims it completes, and only those", func() {
			l := lease(worker)
			b1, b2, b3 := mergeable(), mergeable(), mergeable()
			c := claimWork(l, worker, 2)
			Expect(claimed(c)).To(Equal([]string{b1.BatchID, b2.BatchID}))
			cm := commitOf(l, "cp")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{c.Completed()}
			commit(cm)
			Expect(batchIDs(list(session))).To(Equal([]string{b3.BatchID}))
		})
		It("rejects completed claims not held (another token, another session, expired) with queued_work_claim_expired, and the head does not move", func() {
			l := lease(worker)
			commit(commitOf(l, "first"))
			mergeable()
			c := claimWork(l, worker, 1)
			Expect(c).NotTo(BeNil())
			for what, m := range map[string]func(*r.CompletedQueueClaim){
				"another token":   func(x *r.CompletedQueueClaim) { x.LeaseToken = "forged" },
				"another session": func(x *r.CompletedQueueClaim) { x.SessionID = other },
				"another claim":   func(x *r.CompletedQueueClaim) { x.ClaimID = "forged" },
			} {
				By(what)
				done := c.Completed()
				m(&done)
				cm := commitOf(l, "second")
				cm.CompletedQueueClaims = []r.CompletedQueueClaim{done}
				refusedCommit(cm, r.ErrQueuedWorkClaimExpired)
			}
			advance(claimTTL)
			cm := commitOf(l, "second")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{c.Completed()}
			refusedCommit(cm, r.ErrQueuedWorkClaimExpired)
			Expect(load(r.FullGraph()).HeadRevision).To(Equal(uint64(1)))
		})
		It("keeps the nodes and moves the leaf for an unchanged graph delta", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.Graph = appendNodes("b", node("root", ""), node("a", "root"), node("b", "root"))
			commit(cm)
			cm.Graph = r.GraphDelta{Kind: r.GraphUnchanged, LeafNodeID: "a"}
			commit(cm)
			Expect(load(r.FullGraph()).Graph).To(Equal(r.Graph{Nodes: []r.Node{node("root", ""), node("a", "root"), node("b", "root")}, LeafNodeID: "a"}))
			Expect(load(r.ActivePathTo("")).Graph).To(Equal(r.Graph{Nodes: []r.Node{node("root", ""), node("a", "root")}, LeafNodeID: "a"}))
		})
		It("appends nodes after the stored ones", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.Graph = appendNodes("root", node("root", ""))
			commit(cm)
			cm.Graph = appendNodes("child", node("child", "root"))
			commit(cm)
			Expect(load(r.FullGraph()).Graph).To(Equal(r.Graph{Nodes: []r.Node{node("root", ""), node("child", "root")}, LeafNodeID: "child"}))
		})
		It("replaces the whole graph, tombstoned nodes included", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.Graph = appendNodes("a", node("root", ""), node("a", "root"))
			commit(cm)
			tombstone("a")
			cm.Graph = r.GraphDelta{Kind: r.GraphReplaceFull, Nodes: []r.Node{node("x", ""), node("y", "x")}, LeafNodeID: "y"}
			commit(cm)
			Expect(load(r.FullGraph()).Graph).To(Equal(r.Graph{Nodes: []r.Node{node("x", ""), node("y", "x")}, LeafNodeID: "y"}))
			Expect(loadNode("root")).To(BeNil())
			Expect(vacuum()).To(BeZero(), "the replaced graph took its tombstones with it")
		})
		It("rejects an append of a node id already stored (even tombstoned) or repeated in the delta with graph_node_conflict, and leaves no trace", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.Graph = appendNodes("a", node("root", ""), node("a", "root"))
			commit(cm)
			tombstone("a")
			cm.Checkpoint = []byte("another")
			cm.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 1}}}
			overwrite := r.Node{NodeID: "root", Data: spec.RawJSON(`{"text":"overwritten"}`)}
			for _, delta := range []r.GraphDelta{
				appendNodes("root", overwrite),
				appendNodes("a", node("a", "root")),
				appendNodes("n", node("n", "root"), node("n", "root")),
			} {
				cm.Graph = delta
				refusedCommit(cm, r.ErrGraphNodeConflict)
			}
			Expect(loadNode("root")).To(Equal(&r.Node{NodeID: "root", Data: node("root", "").Data}))
		})
		It("rejects an unknown graph delta kind with invalid_argument", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.Graph = r.GraphDelta{Kind: "rewrite"}
			refusedCommit(cm, r.ErrInvalidArgument)
		})
		It("appends usage deltas: the token ledger merges them per source and model, summed, ordered by source then model", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.UsageDeltas = []r.UsageEntry{
				{Source: "tool", Model: "m-1", Usage: r.Usage{InputTokens: 7}},
				{Source: "agent", Model: "m-2", Usage: r.Usage{InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}},
			}
			commit(cm)
			cm.UsageDeltas = []r.UsageEntry{
				{Source: "agent", Model: "m-2", Usage: r.Usage{InputTokens: 10, OutputTokens: 20, CachedInputTokens: 30, ReasoningTokens: 40}},
				{Source: "agent", Model: "m-1", Usage: r.Usage{OutputTokens: 5}},
			}
			commit(cm)
			Expect(load(r.FullGraph()).TokenLedger).To(Equal([]r.UsageEntry{
				{Source: "agent", Model: "m-1", Usage: r.Usage{OutputTokens: 5}},
				{Source: "agent", Model: "m-2", Usage: r.Usage{InputTokens: 11, OutputTokens: 22, CachedInputTokens: 33, ReasoningTokens: 44}},
				{Source: "tool", Model: "m-1", Usage: r.Usage{InputTokens: 7}},
			}))
		})
		It("marks this session's staged attachments committed once: a later commit keeps the first commit time", func() {
			l := lease(worker)
			stage(session, "att-1", "bytes one")
			stage(other, "att-2", "bytes two")
			first := now()
			cm := commitOf(l, "cp")
			cm.CommittedAttachmentIDs = []string{"att-1", "att-2", "att-unknown"}
			commit(cm)
			Expect(attachment("att-1")).To(Equal(&r.Attachment{AttachmentID: "att-1", SessionID: session, Data: []byte("bytes one"), CommittedAtMs: &first}))
			Expect(attachment("att-2").CommittedAtMs).To(BeNil(), "another session's attachment is left alone")
			Expect(attachment("att-unknown")).To(BeNil(), "an unknown id stages nothing")
			advance(5)
			cm.CommittedAttachmentIDs = []string{"att-1"}
			commit(cm)
			Expect(attachment("att-1").CommittedAtMs).To(Equal(&first), "the first commit time stays")
		})
		It("releases the lease with the commit when asked", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.ReleaseLease = fenceOf(l)
			commit(cm)
			won := tryClaim(rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)))
		})
	})

	Describe("load_session", func() {
		// graph commits root <- a <- b and root <- c, at leaf b.
		graph := func() {
			GinkgoHelper()
			cm := commitOf(lease(worker), "cp")
			cm.Graph = appendNodes("b", node("root", ""), node("a", "root"), node("b", "a"), node("c", "root"))
			commit(cm)
		}
		It("returns none before the first commit, for either scope", func() {
			Expect(load(r.FullGraph())).To(BeNil())
			Expect(load(r.ActivePathTo(""))).To(BeNil())
		})
		It("returns the full graph in commit order, with the head's leaf", func() {
			graph()
			Expect(nodeIDs(load(r.FullGraph()).Graph)).To(Equal([]string{"root", "a", "b", "c"}))
			Expect(load(r.FullGraph()).Graph.LeafNodeID).To(Equal("b"))
		})
		It("returns the active path from the root to the head's leaf, root first", func() {
			graph()
			Expect(load(r.ActivePathTo("")).Graph).To(Equal(r.Graph{Nodes: []r.Node{node("root", ""), node("a", "root"), node("b", "a")}, LeafNodeID: "b"}))
		})
		It("returns the active path to the leaf the scope names", func() {
			graph()
			read := load(r.ActivePathTo("c"))
			Expect(read.Graph).To(Equal(r.Graph{Nodes: []r.Node{node("root", ""), node("c", "root")}, LeafNodeID: "c"}))
			Expect(read.HeadRevision).To(Equal(uint64(1)))
		})
		It("ends the active path at a tombstoned node, and gives no nodes for an unknown leaf", func() {
			graph()
			tombstone("a")
			Expect(nodeIDs(load(r.ActivePathTo("b")).Graph)).To(Equal([]string{"b"}))
			read := load(r.ActivePathTo("nowhere"))
			Expect(read.Graph.Nodes).To(BeEmpty())
			Expect(read.Graph.LeafNodeID).To(Equal("nowhere"))
		})
	})

	Describe("load_node", func() {
		It("returns a committed node exactly", func() {
			cm := commitOf(lease(worker), "cp")
			n := r.Node{NodeID: "n", Data: spec.RawJSON(`{"text": "spaced \u00e9", "k": [1, 2]}`)}
			cm.Graph = appendNodes("n", n)
			commit(cm)
			Expect(loadNode("n")).To(Equal(&n))
		})
		It("returns none for an unknown node and for a tombstoned one", func() {
			cm := commitOf(lease(worker), "cp")
			cm.Graph = appendNodes("n", node("n", ""))
			commit(cm)
			Expect(loadNode("unknown")).To(BeNil())
			tombstone("n")
			Expect(loadNode("n")).To(BeNil())
		})
	})

	Describe("tombstone_nodes", func() {
		It("takes the nodes out of load_node and both graph scopes; unknown ids are ignored", func() {
			cm := commitOf(lease(worker), "cp")
			cm.Graph = appendNodes("b", node("root", ""), node("a", "root"), node("b", "root"))
			commit(cm)
			tombstone("b", "unknown")
			Expect(loadNode("b")).To(BeNil())
			Expect(nodeIDs(load(r.FullGraph()).Graph)).To(Equal([]string{"root", "a"}))
			Expect(load(r.ActivePathTo("")).Graph.Nodes).To(BeEmpty())
			Expect(loadNode("a")).NotTo(BeNil())
		})
	})

	Describe("vacuum", func() {
		It("removes the tombstoned nodes and reports how many; a second vacuum removes none", func() {
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.Graph = appendNodes("c", node("a", ""), node("b", "a"), node("c", "a"))
			commit(cm)
			Expect(vacuum()).To(BeZero(), "nothing is tombstoned")
			tombstone("b", "c")
			Expect(vacuum()).To(Equal(2))
			Expect(vacuum()).To(BeZero())
			Expect(nodeIDs(load(r.FullGraph()).Graph)).To(Equal([]string{"a"}))
			cm.Graph = appendNodes("b", node("b", "a"))
			commit(cm)
			Expect(loadNode("b")).NotTo(BeNil(), "a vacuumed node id may be appended again")
		})
	})

	Describe("save_session_meta", func() {
		It("keeps the last saved meta exactly, which load_session_meta returns", func() {
			meta, err := s.LoadSessionMeta(f.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(meta).To(BeNil(), "no meta before the first save")
			Expect(s.SaveSessionMeta(f.ctx, spec.RawJSON(`{"title":"first"}`))).To(Succeed())
			Expect(s.SaveSessionMeta(f.ctx, spec.RawJSON(`{"title": "second"}`))).To(Succeed())
			meta, err = s.LoadSessionMeta(f.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(meta).To(Equal(spec.RawJSON(`{"title": "second"}`)))
		})
	})

	Describe("gc_unreachable", func() {
		It("removes the checkpoints the head no longer names and reports how many; the head's stays", func() {
			l := lease(worker)
			for _, cp := range []string{"one", "two", "two", "three"} {
				commit(commitOf(l, cp))
			}
			rep, err := s.GcUnreachable(f.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.RemovedCheckpointCount).To(Equal(2), "equal bytes are one checkpoint")
			Expect(load(r.FullGraph()).Checkpoint).To(Equal([]byte("three")))
			rep, err = s.GcUnreachable(f.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.RemovedCheckpointCount).To(BeZero())
		})
	})

	Describe("durability_tier", func() {
		It("is durable for a store on a file, which finds every acknowledged commit, lease and batch when opened again", func() {
			need(h.Capabilities.Files, "files", "survival across reopen")
			tier, err := s.DurabilityTier(f.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(tier).To(Equal(r.Durable))
			l := lease(worker)
			cm := commitOf(l, "cp")
			cm.Graph = appendNodes("n", node("n", ""))
			commit(cm)
			mergeable()
			Expect(s.SaveSessionMeta(f.ctx, spec.RawJSON(`{"m":1}`))).To(Succeed())
			before := state()
			Expect(s.Close()).To(Succeed())
			s = open(f.path)
			Expect(state()).To(Equal(before))
			Expect(tryClaim(rival)).To(BeNil(), "the lease survives")
			commit(commitOf(l, "after reopen"))
		})
	})

	Describe("enqueue_queued_work", func() {
		It("queues a batch with its payloads as items in order, enqueued at now, with claim fencing token 0", func() {
			d := draft(r.SlotExclusive, "")
			d.Payloads = []spec.RawJSON{spec.RawJSON(`{"n":1}`), spec.RawJSON(`{"n":2}`)}
			d.AvailableAtMs = now() + 50
			advance(3)
			b := enqueue(d)
			Expect(b.BatchID).NotTo(BeEmpty())
			Expect(b).To(Equal(r.QueuedWorkBatch{BatchID: b.BatchID, SessionID: session, DeliveryPolicy: r.DeliverNextTurn,
				SlotPolicy: r.SlotExclusive, AvailableAtMs: d.AvailableAtMs, EnqueuedAtMs: now(), ClaimFencingToken: 0,
				Items: []r.QueuedWorkItem{{ItemID: b.BatchID + ":item:0", Payload: d.Payloads[0]}, {ItemID: b.BatchID + ":item:1", Payload: d.Payloads[1]}}}))
			Expect(list(session)).To(Equal([]r.QueuedWorkBatch{b}))
		})
		It("answers the queued batch for a source key already queued in the session, and adds nothing", func() {
			d := draft(r.SlotMergeable, "k")
			d.SourceKey = "source-1"
			first := enqueue(d)
			advance(10)
			d.Payloads = []spec.RawJSON{spec.RawJSON(`{"text":"again"}`)}
			Expect(enqueue(d)).To(Equal(first))
			Expect(list(session)).To(Equal([]r.QueuedWorkBatch{first}))
		})
		It("queues the same source key in another session as another batch", func() {
			d := draft(r.SlotMergeable, "k")
			d.SourceKey = "source-1"
			a := enqueue(d)
			d.SessionID = other
			b := enqueue(d)
			Expect(b.BatchID).NotTo(Equal(a.BatchID))
			Expect(list(other)).To(Equal([]r.QueuedWorkBatch{b}))
		})
		It("always queues drafts without a source key, in enqueue order, with distinct batch ids", func() {
			a, b, c := mergeable(), mergeable(), mergeable()
			Expect(batchIDs(list(session))).To(Equal([]string{a.BatchID, b.BatchID, c.BatchID}))
			Expect(a.BatchID).NotTo(Equal(b.BatchID))
			Expect(b.BatchID).NotTo(Equal(c.BatchID))
		})
		It("never reuses the id of a cancelled batch", func() {
			a := mergeable()
			Expect(cancel(session, a.BatchID)).NotTo(BeNil())
			Expect(mergeable().BatchID).NotTo(Equal(a.BatchID))
		})
		It("rejects an unknown delivery or slot policy with invalid_argument", func() {
			before := state()
			d := draft(r.SlotMergeable, "k")
			d.DeliveryPolicy = "someday"
			_, err := s.EnqueueQueuedWork(f.ctx, d)
			refused(before, err, r.ErrInvalidArgument)
			d = draft("shared", "k")
			_, err = s.EnqueueQueuedWork(f.ctx, d)
			refused(before, err, r.ErrInvalidArgument)
		})
	})

	Describe("claim_ready_queued_work", func() {
		It("claims nothing when max_batches is 0, even without a live lease", func() {
			mergeable()
			c, err := s.ClaimReadyQueuedWork(f.ctx, session, r.SessionExecutionLeaseFence{SessionID: session}, worker, r.BoundaryTurn, claimTTL, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(c).To(BeNil())
			Expect(pending()).To(HaveLen(1))
		})
		It("requires the session's live lease: any other fails session_execution_lease_expired and claims nothing", func() {
			l := lease(worker)
			mergeable()
			before := state()
			for what, fence := range fenceVariants(l) {
				_, err := s.ClaimReadyQueuedWork(f.ctx, session, fence, worker, r.BoundaryTurn, claimTTL, 1)
				Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), what)
			}
			advance(leaseTTL)
			_, err := s.ClaimReadyQueuedWork(f.ctx, session, l.Fence(), worker, r.BoundaryTurn, claimTTL, 1)
			refused(before, err, r.ErrSessionExecutionLeaseExpired)
		})
		It("claims ready batches in enqueue order until now + ttl, each claimed batch's claim fencing token up by one", func() {
			l := lease(worker)
			b1, b2, b3 := mergeable(), mergeable(), mergeable()
			advance(7)
			c := claimWork(l, worker, 2)
			Expect(claimed(c)).To(Equal([]string{b1.BatchID, b2.BatchID}))
			Expect(c.SessionID).To(Equal(session))
			Expect(c.OwnerID).To(Equal(worker))
			Expect(c.ClaimID).NotTo(BeEmpty())
			Expect(c.LeaseToken).NotTo(BeEmpty())
			Expect(c.FencingToken).To(Equal(uint64(1)))
			Expect(c.ClaimedAtMs).To(Equal(now()))
			Expect(c.ExpiresAtMs).To(Equal(now() + int64(claimTTL)))
			for _, b := range c.Batches {
				Expect(b.ClaimFencingToken).To(Equal(uint64(1)))
			}
			queue := list(session)
			Expect([]uint64{queue[0].ClaimFencingToken, queue[1].ClaimFencingToken, queue[2].ClaimFencingToken}).To(Equal([]uint64{1, 1, 0}))
			Expect(batchIDs(pending())).To(Equal([]string{b3.BatchID}))
		})
		It("skips delayed work until its available_at: 1ms before it is not claimed, at available_at it is", func() {
			l := lease(worker)
			d := draft(r.SlotMergeable, "k")
			d.AvailableAtMs = now() + 500
			delayed := enqueue(d)
			ready := mergeable()
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{ready.BatchID}), "delayed work does not block ready work")
			advance(499)
			Expect(claimWork(l, worker, 10)).To(BeNil())
			advance(1)
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{delayed.BatchID}))
		})
		It("does not claim a batch a live claim holds; at that claim's expiry it is claimed again, its fence up by one", func() {
			l := lease(worker)
			b := mergeable()
			first := claimWork(l, worker, 1)
			Expect(claimed(first)).To(Equal([]string{b.BatchID}))
			advance(claimTTL - 1)
			Expect(claimWork(l, rival, 1)).To(BeNil())
			advance(1)
			again := claimWork(l, rival, 1)
			Expect(claimed(again)).To(Equal([]string{b.BatchID}))
			Expect(again.FencingToken).To(Equal(uint64(2)))
			Expect(again.Batches[0].ClaimFencingToken).To(Equal(uint64(2)))
			Expect(again.ClaimID).NotTo(Equal(first.ClaimID))
			Expect(again.LeaseToken).NotTo(Equal(first.LeaseToken))
		})
		It("never returns a claim that owns only some of its batches", func() {
			l := lease(worker)
			b1, b2, b3 := mergeable(), mergeable(), mergeable()
			Expect(claimed(claimWork(l, worker, 1))).To(Equal([]string{b1.BatchID}))
			second := claimWork(l, rival, 3)
			Expect(claimed(second)).To(Equal([]string{b2.BatchID, b3.BatchID}), "a batch another live claim holds is never in a claim")
			cm := commitOf(l, "cp")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{second.Completed()}
			commit(cm)
			Expect(batchIDs(list(session))).To(Equal([]string{b1.BatchID}))
		})
		It("claims an exclusive first batch alone", func() {
			l := lease(worker)
			x := enqueue(draft(r.SlotExclusive, "k"))
			m := mergeable()
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{x.BatchID}))
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{m.BatchID}))
		})
		It("adds following mergeable batches of the first one's merge key up to max_batches; another key or an exclusive batch ends the prefix", func() {
			l := lease(worker)
			b1, b2, b3 := mergeable(), mergeable(), mergeable()
			o := enqueue(draft(r.SlotMergeable, "other key"))
			b5 := mergeable()
			x := enqueue(draft(r.SlotExclusive, "k"))
			Expect(claimed(claimWork(l, worker, 2))).To(Equal([]string{b1.BatchID, b2.BatchID}))
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{b3.BatchID}))
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{o.BatchID}))
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{b5.BatchID}))
			Expect(claimed(claimWork(l, worker, 10))).To(Equal([]string{x.BatchID}))
		})
		It("delivers only interrupt batches at a step boundary, where a next_turn batch ends the prefix", func() {
			l := lease(worker)
			interrupt := func() r.QueuedWorkBatch {
				d := draft(r.SlotMergeable, "k")
				d.DeliveryPolicy = r.DeliverInterrupt
				return enqueue(d)
			}
			i1 := interrupt()
			n := mergeable()
			i2 := interrupt()
			Expect(claimed(claimOn(s, l, worker, r.BoundaryStep, 10))).To(Equal([]string{i1.BatchID}))
			Expect(claimOn(s, l, worker, r.BoundaryStep, 10)).To(BeNil(), "a next_turn batch first in line")
			Expect(claimed(claimOn(s, l, worker, r.BoundaryTurn, 10))).To(Equal([]string{n.BatchID, i2.BatchID}))
		})
		It("answers none when nothing is ready, and rejects an unknown boundary with invalid_argument", func() {
			l := lease(worker)
			Expect(claimWork(l, worker, 10)).To(BeNil())
			mergeable()
			before := state()
			_, err := s.ClaimReadyQueuedWork(f.ctx, session, l.Fence(), worker, "sometime", claimTTL, 1)
			refused(before, err, r.ErrInvalidArgument)
		})
	})

	Describe("renew_queued_work_claim", func() {
		It("extends a held claim to now + ttl", func() {
			l := lease(worker)
			mergeable()
			c := claimWork(l, worker, 1)
			advance(500)
			renewed, err := s.RenewQueuedWorkClaim(f.ctx, *c, claimTTL)
			Expect(err).NotTo(HaveOccurred())
			want := *c
			want.ExpiresAtMs = now() + int64(claimTTL)
			Expect(renewed).To(Equal(want))
			advance(claimTTL - 1)
			Expect(claimWork(l, rival, 1)).To(BeNil(), "the renewed claim holds past its first expiry")
		})
		It("fails queued_work_claim_expired with another token, at the claim's expiry, or once abandoned, changing nothing", func() {
			l := lease(worker)
			mergeable()
			c := claimWork(l, worker, 1)
			forged := *c
			forged.LeaseToken = "forged"
			_, err := s.RenewQueuedWorkClaim(f.ctx, forged, 10*claimTTL)
			Expect(err).To(MatchError(r.ErrQueuedWorkClaimExpired))
			advance(claimTTL)
			before := state()
			_, err = s.RenewQueuedWorkClaim(f.ctx, *c, claimTTL)
			refused(before, err, r.ErrQueuedWorkClaimExpired)
			again := claimWork(l, worker, 1)
			Expect(s.AbandonQueuedWorkClaim(f.ctx, *again)).To(Succeed())
			_, err = s.RenewQueuedWorkClaim(f.ctx, *again, claimTTL)
			Expect(err).To(MatchError(r.ErrQueuedWorkClaimExpired))
		})
	})

	Describe("abandon_queued_work_claim", func() {
		It("frees the claim's batches: the next claimer takes them with their fence up by one", func() {
			l := lease(worker)
			b1, b2 := mergeable(), mergeable()
			c := claimWork(l, worker, 2)
			Expect(s.AbandonQueuedWorkClaim(f.ctx, *c)).To(Succeed())
			Expect(batchIDs(pending())).To(Equal([]string{b1.BatchID, b2.BatchID}))
			again := claimWork(l, rival, 2)
			Expect(claimed(again)).To(Equal([]string{b1.BatchID, b2.BatchID}))
			Expect(again.FencingToken).To(Equal(uint64(2)))
		})
		It("changes nothing for a claim whose id or token does not match", func() {
			l := lease(worker)
			mergeable()
			c := claimWork(l, worker, 1)
			before := state()
			for _, m := range []func(*r.QueuedWorkClaim){
				func(x *r.QueuedWorkClaim) { x.LeaseToken = "forged" },
				func(x *r.QueuedWorkClaim) { x.ClaimID = "forged" },
			} {
				changed := *c
				m(&changed)
				Expect(s.AbandonQueuedWorkClaim(f.ctx, changed)).To(Succeed())
			}
			Expect(state()).To(Equal(before))
			Expect(claimWork(l, rival, 1)).To(BeNil())
		})
	})

	Describe("cancel_queued_work_batch", func() {
		It("removes an unclaimed batch and answers it", func() {
			b := mergeable()
			other := mergeable()
			Expect(cancel(session, b.BatchID)).To(Equal(&b))
			Expect(list(session)).To(Equal([]r.QueuedWorkBatch{other}))
		})
		It("keeps a batch a live claim holds and answers none, until the claim's expiry", func() {
			l := lease(worker)
			b := mergeable()
			claimWork(l, worker, 1)
			before := state()
			Expect(cancel(session, b.BatchID)).To(BeNil())
			Expect(state()).To(Equal(before))
			advance(claimTTL)
			gone := cancel(session, b.BatchID)
			Expect(gone).NotTo(BeNil())
			Expect(gone.BatchID).To(Equal(b.BatchID))
			Expect(list(session)).To(BeEmpty())
		})
		It("answers none for an unknown batch or another session's", func() {
			b := mergeable()
			Expect(cancel(session, "unknown")).To(BeNil())
			Expect(cancel(other, b.BatchID)).To(BeNil())
			Expect(list(session)).To(HaveLen(1))
		})
	})

	Describe("list_queued_work", func() {
		It("lists every batch of the session in enqueue order, claimed or delayed, and no other session's", func() {
			l := lease(worker)
			b1 := mergeable()
			d := draft(r.SlotMergeable, "k")
			d.AvailableAtMs = now() + 10_000
			b2 := enqueue(d)
			d.SessionID = other
			enqueue(d)
			claimWork(l, worker, 1)
			Expect(batchIDs(list(session))).To(Equal([]string{b1.BatchID, b2.BatchID}))
		})
	})

	Describe("list_pending_queued_work", func() {
		It("lists the unclaimed batches and those whose claim expired, delayed ones included, in enqueue order", func() {
			l := lease(worker)
			b1 := mergeable()
			claimWork(l, worker, 1)
			d := draft(r.SlotMergeable, "k")
			d.AvailableAtMs = now() + 10_000
			b2 := enqueue(d)
			b3 := mergeable()
			Expect(batchIDs(pending())).To(Equal([]string{b2.BatchID, b3.BatchID}))
			advance(claimTTL)
			Expect(batchIDs(pending())).To(Equal([]string{b1.BatchID, b2.BatchID, b3.BatchID}), "a claim whose expiry equals now has expired")
		})
	})

	Describe("stage_attachment", func() {
		It("stages an uncommitted attachment that load_attachment returns exactly; an unknown id loads none", func() {
			stage(session, "att-1", "\x00bytes\xff")
			Expect(attachment("att-1")).To(Equal(&r.Attachment{AttachmentID: "att-1", SessionID: session, Data: []byte("\x00bytes\xff")}))
			Expect(attachment("att-2")).To(BeNil())
		})
		It("keeps the first staging of an id, its commit time included", func() {
			stage(session, "att-1", "first")
			cm := commitOf(lease(worker), "cp")
			cm.CommittedAttachmentIDs = []string{"att-1"}
			commit(cm)
			committed := attachment("att-1")
			advance(5)
			stage(other, "att-1", "second")
			Expect(attachment("att-1")).To(Equal(committed))
		})
	})

	// The ids the store mints are the contract's (spec/runtime/ids.go): a
	// caller presents them back, and the checkers compare answers exactly.
	Describe("minted ids", func() {
		It("gives a granted lease the token <session>:<owner>:<now>:<fencing token>", func() {
			advance(7)
			l := lease(worker)
			Expect(l.LeaseToken).To(Equal(r.LeaseToken(session, worker, now(), l.FencingToken)))
		})
		It("numbers batches by the store's enqueues, across sessions, never reusing a number, and items by their index", func() {
			a := enqueue(draft(r.SlotMergeable, "k"))
			d := draft(r.SlotMergeable, "k")
			d.SessionID = other
			b := enqueue(d)
			c, err := s.CancelQueuedWorkBatch(f.ctx, session, a.BatchID)
			Expect(err).NotTo(HaveOccurred())
			Expect(c).NotTo(BeNil())
			third := enqueue(draft(r.SlotMergeable, "k"))
			Expect([]string{a.BatchID, b.BatchID, third.BatchID}).To(Equal([]string{
				r.BatchID(session, 1), r.BatchID(other, 2), r.BatchID(session, 3)}))
			Expect(third.Items[0].ItemID).To(Equal(r.ItemID(third.BatchID, 0)))
		})
		It("gives a claim the id and token of its first batch, its claim count, its owner and now", func() {
			l := lease(worker)
			b := enqueue(draft(r.SlotMergeable, "k"))
			advance(5)
			c := claimWork(l, worker, 1)
			Expect(c).NotTo(BeNil())
			Expect(c.ClaimID).To(Equal(r.ClaimID(session, b.BatchID, 1)))
			Expect(c.LeaseToken).To(Equal(r.ClaimToken(c.ClaimID, worker, now())))
		})
	})

	Describe("two handles on one database", func() {
		It("a second handle cannot win the session lease or a queued work claim the first holds", func() {
			need(h.Capabilities.SharedFiles, "shared-files", "two handles on one file")
			t := open(f.path)
			l := lease(worker)
			Expect(tryClaimOn(t, session, rival)).To(BeNil(), "the second handle sees the first's lease")
			b := mergeable()
			c := claimWork(l, worker, 1)
			Expect(claimed(c)).To(Equal([]string{b.BatchID}))
			Expect(claimOn(t, l, rival, r.BoundaryTurn, 1)).To(BeNil(), "the second handle sees the first's claim")
			gone, err := t.CancelQueuedWorkBatch(f.ctx, session, b.BatchID)
			Expect(err).NotTo(HaveOccurred())
			Expect(gone).To(BeNil())
			forged := l.Fence()
			forged.OwnerID = rival
			_, err = t.CommitRuntimeState(f.ctx, r.RuntimeCommit{SessionID: session, Lease: &forged, Graph: r.GraphDelta{Kind: r.GraphUnchanged}})
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired))
			advance(leaseTTL)
			won := tryClaimOn(t, session, rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)), "the fencing count is shared")
			_, err = s.CommitRuntimeState(f.ctx, commitOf(l, "zombie"))
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "the first handle's old lease lost its authority")
			commitOn(t, commitOf(won, "from the second handle"))
			Expect(load(r.FullGraph()).Checkpoint).To(Equal([]byte("from the second handle")), "the first handle sees the second's commit")
		})
	})
}

// runtimeCloseOnce lets a spec close its store early (to reopen the file)
// without the cleanup closing it a second time.
type runtimeCloseOnce struct {
	r.Store
	closed *bool
}

func (s *runtimeCloseOnce) Close() error {
	if *s.closed {
		return nil
	}
	*s.closed = true
	return s.Store.Close()
}
