package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	rt "github.com/storecheck/storecheck/spec/runtime"
)

// The one write of a session's state, under its lease.
func runtimeCommitSpecs(fx *runtimeFixture) {
	Describe("commit_runtime_state", func() {
		It("commits the first state at revision 1, and load_session returns every part of it", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "\x00checkpoint\xff")
			cm.Graph = fx.appendNodes("child", fx.node("root", ""), fx.node("child", "root"))
			cm.AgentFrames = spec.RawJSON(`[{"id":"frame-1"}]`)
			cm.CurrentAgentFrameID = "frame-1"
			cm.UsageDeltas = []rt.UsageEntry{{Source: "agent", Model: "m-1", Usage: rt.Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}}}
			res := fx.commit(cm)
			Expect(res).To(Equal(rt.CommitResult{HeadRevision: 1, CheckpointRef: rt.CheckpointRef(cm.Checkpoint)}))
			Expect(fx.load(rt.FullGraph())).To(Equal(&rt.SessionRead{
				SessionID: rtSession, HeadRevision: 1, Config: cm.Config, AgentFrames: cm.AgentFrames,
				CurrentAgentFrameID: "frame-1", Graph: rt.Graph{Nodes: cm.Graph.Nodes, LeafNodeID: "child"},
				CheckpointRef: res.CheckpointRef, Checkpoint: cm.Checkpoint, TokenLedger: cm.UsageDeltas,
			}))
		})
		It("moves the revision up by one per commit and makes the last checkpoint and config the head's", func() {
			l := fx.lease(worker)
			for i, cp := range []string{"one", "two", "three"} {
				Expect(fx.commit(fx.commitOf(l, cp)).HeadRevision).To(Equal(uint64(i + 1)))
			}
			cm := fx.commitOf(l, "four")
			cm.Config = spec.RawJSON(`{"model":"m-2"}`)
			fx.commit(cm)
			read := fx.load(rt.FullGraph())
			Expect(read.HeadRevision).To(Equal(uint64(4)))
			Expect(read.Checkpoint).To(Equal([]byte("four")))
			Expect(read.CheckpointRef).To(Equal(rt.CheckpointRef([]byte("four"))))
			Expect(read.Config).To(Equal(spec.RawJSON(`{"model":"m-2"}`)))
		})
		It("accepts expected_head_revision equal to the stored revision, 0 before the first commit", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.ExpectedHeadRevision = fx.u64(0)
			Expect(fx.commit(cm).HeadRevision).To(Equal(uint64(1)))
			cm.ExpectedHeadRevision = fx.u64(1)
			Expect(fx.commit(cm).HeadRevision).To(Equal(uint64(2)))
		})
		It("rejects any other expected_head_revision with head_revision_conflict and leaves no trace", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.ExpectedHeadRevision = fx.u64(1)
			fx.refusedCommit(cm, rt.ErrHeadRevisionConflict)
			Expect(fx.load(rt.FullGraph())).To(BeNil(), "nothing before the first commit")
			fx.commit(fx.commitOf(l, "first"))
			cm.UsageDeltas = []rt.UsageEntry{{Source: "agent", Model: "m-1", Usage: rt.Usage{InputTokens: 1}}}
			for _, stale := range []uint64{0, 2} {
				cm.ExpectedHeadRevision = fx.u64(stale)
				fx.refusedCommit(cm, rt.ErrHeadRevisionConflict)
			}
		})
		It("rejects a commit without a lease with session_execution_lease_expired and leaves no trace", func() {
			l := fx.lease(worker)
			fx.commit(fx.commitOf(l, "first"))
			fx.refusedCommit(fx.commitOf(nil, "second"), rt.ErrSessionExecutionLeaseExpired)
		})
		It("rejects a lease that is not the live one (another owner, token, fencing token or session, or released) with session_execution_lease_expired", func() {
			l := fx.lease(worker)
			fx.commit(fx.commitOf(l, "first"))
			for what, fence := range fx.fenceVariants(l) {
				By(what)
				cm := fx.commitOf(l, "second")
				cm.Lease = &fence
				fx.refusedCommit(cm, rt.ErrSessionExecutionLeaseExpired)
			}
			Expect(fx.s.ReleaseSessionExecutionLease(fx.ctx, l.Fence())).To(Succeed())
			fx.refusedCommit(fx.commitOf(l, "second"), rt.ErrSessionExecutionLeaseExpired)
		})
		It("commits 1ms before the lease expires, and fails session_execution_lease_expired at expiry and after", func() {
			l := fx.lease(worker)
			fx.advance(leaseTTL - 1)
			fx.commit(fx.commitOf(l, "in time"))
			fx.advance(1)
			fx.refusedCommit(fx.commitOf(l, "at expiry"), rt.ErrSessionExecutionLeaseExpired)
			fx.advance(1)
			fx.refusedCommit(fx.commitOf(l, "after expiry"), rt.ErrSessionExecutionLeaseExpired)
		})
		It("binds the store to the session of its first commit: another session fails session_binding_mismatch", func() {
			l := fx.lease(worker)
			fx.commit(fx.commitOf(l, "a"))
			lo := fx.tryClaimOn(fx.s, rtOther, worker)
			Expect(lo).NotTo(BeNil())
			cm := fx.commitOf(lo, "b")
			cm.SessionID = rtOther
			fx.refusedCommit(cm, rt.ErrSessionBindingMismatch)
		})
		It("rejects a turn commit of another session with runtime_turn_commit_conflict", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.TurnCommit = &rt.TurnCommit{SessionID: rtOther, TurnID: "turn-1", TurnCommitHash: "h1"}
			fx.refusedCommit(cm, rt.ErrRuntimeTurnCommitConflict)
		})
		It("answers a replay of a committed turn with the same hash with the first result, and writes nothing", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "turn one")
			cm.TurnCommit = &rt.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h1"}
			first := fx.commit(cm)
			fx.commit(fx.commitOf(l, "later"))
			before := fx.state()
			replay := cm
			replay.Checkpoint = []byte("replayed")
			replay.UsageDeltas = []rt.UsageEntry{{Source: "agent", Model: "m-1", Usage: rt.Usage{InputTokens: 5}}}
			Expect(fx.commit(replay)).To(Equal(first))
			Expect(fx.state()).To(Equal(before), "a replay writes nothing")
		})
		It("still releases the lease when a replay of a committed turn asks", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "turn one")
			cm.TurnCommit = &rt.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h1"}
			first := fx.commit(cm)
			cm.ReleaseLease = fx.fenceOf(l)
			Expect(fx.commit(cm)).To(Equal(first))
			Expect(fx.tryClaim(rival)).NotTo(BeNil(), "the replay released the lease")
		})
		It("rejects a replay of a committed turn with another hash with runtime_turn_commit_conflict", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "turn one")
			cm.TurnCommit = &rt.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h1"}
			fx.commit(cm)
			cm.TurnCommit = &rt.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h2"}
			cm.Checkpoint = []byte("another outcome")
			fx.refusedCommit(cm, rt.ErrRuntimeTurnCommitConflict)
		})
		It("deletes the batches of the queue claims it completes, and only those", func() {
			l := fx.lease(worker)
			b1, b2, b3 := fx.mergeable(), fx.mergeable(), fx.mergeable()
			c := fx.claimWork(l, worker, 2)
			Expect(fx.claimed(c)).To(Equal([]string{b1.BatchID, b2.BatchID}))
			cm := fx.commitOf(l, "cp")
			cm.CompletedQueueClaims = []rt.CompletedQueueClaim{c.Completed()}
			fx.commit(cm)
			Expect(fx.batchIDs(fx.list(rtSession))).To(Equal([]string{b3.BatchID}))
		})
		It("rejects completed claims not held (another token, another session, expired) with queued_work_claim_expired, and the head does not move", func() {
			l := fx.lease(worker)
			fx.commit(fx.commitOf(l, "first"))
			fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			Expect(c).NotTo(BeNil())
			for what, m := range map[string]func(*rt.CompletedQueueClaim){
				"another token":   func(x *rt.CompletedQueueClaim) { x.LeaseToken = "forged" },
				"another session": func(x *rt.CompletedQueueClaim) { x.SessionID = rtOther },
				"another claim":   func(x *rt.CompletedQueueClaim) { x.ClaimID = "forged" },
			} {
				By(what)
				done := c.Completed()
				m(&done)
				cm := fx.commitOf(l, "second")
				cm.CompletedQueueClaims = []rt.CompletedQueueClaim{done}
				fx.refusedCommit(cm, rt.ErrQueuedWorkClaimExpired)
			}
			fx.advance(claimTTL)
			cm := fx.commitOf(l, "second")
			cm.CompletedQueueClaims = []rt.CompletedQueueClaim{c.Completed()}
			fx.refusedCommit(cm, rt.ErrQueuedWorkClaimExpired)
			Expect(fx.load(rt.FullGraph()).HeadRevision).To(Equal(uint64(1)))
		})
		It("keeps the nodes and moves the leaf for an unchanged graph delta", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("b", fx.node("root", ""), fx.node("a", "root"), fx.node("b", "root"))
			fx.commit(cm)
			cm.Graph = rt.GraphDelta{Kind: rt.GraphUnchanged, LeafNodeID: "a"}
			fx.commit(cm)
			Expect(fx.load(rt.FullGraph()).Graph).To(Equal(rt.Graph{Nodes: []rt.Node{fx.node("root", ""), fx.node("a", "root"), fx.node("b", "root")}, LeafNodeID: "a"}))
			Expect(fx.load(rt.ActivePathTo("")).Graph).To(Equal(rt.Graph{Nodes: []rt.Node{fx.node("root", ""), fx.node("a", "root")}, LeafNodeID: "a"}))
		})
		It("appends nodes after the stored ones", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("root", fx.node("root", ""))
			fx.commit(cm)
			cm.Graph = fx.appendNodes("child", fx.node("child", "root"))
			fx.commit(cm)
			Expect(fx.load(rt.FullGraph()).Graph).To(Equal(rt.Graph{Nodes: []rt.Node{fx.node("root", ""), fx.node("child", "root")}, LeafNodeID: "child"}))
		})
		It("replaces the whole graph, tombstoned nodes included", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("a", fx.node("root", ""), fx.node("a", "root"))
			fx.commit(cm)
			fx.tombstone("a")
			cm.Graph = rt.GraphDelta{Kind: rt.GraphReplaceFull, Nodes: []rt.Node{fx.node("x", ""), fx.node("y", "x")}, LeafNodeID: "y"}
			fx.commit(cm)
			Expect(fx.load(rt.FullGraph()).Graph).To(Equal(rt.Graph{Nodes: []rt.Node{fx.node("x", ""), fx.node("y", "x")}, LeafNodeID: "y"}))
			Expect(fx.loadNode("root")).To(BeNil())
			Expect(fx.vacuum()).To(BeZero(), "the replaced graph took its tombstones with it")
		})
		It("rejects an append of a node id already stored (even tombstoned) or repeated in the delta with graph_node_conflict, and leaves no trace", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("a", fx.node("root", ""), fx.node("a", "root"))
			fx.commit(cm)
			fx.tombstone("a")
			cm.Checkpoint = []byte("another")
			cm.UsageDeltas = []rt.UsageEntry{{Source: "agent", Model: "m-1", Usage: rt.Usage{InputTokens: 1}}}
			overwrite := rt.Node{NodeID: "root", Data: spec.RawJSON(`{"text":"overwritten"}`)}
			for _, delta := range []rt.GraphDelta{
				fx.appendNodes("root", overwrite),
				fx.appendNodes("a", fx.node("a", "root")),
				fx.appendNodes("n", fx.node("n", "root"), fx.node("n", "root")),
			} {
				cm.Graph = delta
				fx.refusedCommit(cm, rt.ErrGraphNodeConflict)
			}
			Expect(fx.loadNode("root")).To(Equal(&rt.Node{NodeID: "root", Data: fx.node("root", "").Data}))
		})
		It("rejects an unknown graph delta kind with invalid_argument", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = rt.GraphDelta{Kind: "rewrite"}
			fx.refusedCommit(cm, rt.ErrInvalidArgument)
		})
		It("appends usage deltas: the token ledger merges them per source and model, summed, ordered by source then model", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.UsageDeltas = []rt.UsageEntry{
				{Source: "tool", Model: "m-1", Usage: rt.Usage{InputTokens: 7}},
				{Source: "agent", Model: "m-2", Usage: rt.Usage{InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}},
			}
			fx.commit(cm)
			cm.UsageDeltas = []rt.UsageEntry{
				{Source: "agent", Model: "m-2", Usage: rt.Usage{InputTokens: 10, OutputTokens: 20, CachedInputTokens: 30, ReasoningTokens: 40}},
				{Source: "agent", Model: "m-1", Usage: rt.Usage{OutputTokens: 5}},
			}
			fx.commit(cm)
			Expect(fx.load(rt.FullGraph()).TokenLedger).To(Equal([]rt.UsageEntry{
				{Source: "agent", Model: "m-1", Usage: rt.Usage{OutputTokens: 5}},
				{Source: "agent", Model: "m-2", Usage: rt.Usage{InputTokens: 11, OutputTokens: 22, CachedInputTokens: 33, ReasoningTokens: 44}},
				{Source: "tool", Model: "m-1", Usage: rt.Usage{InputTokens: 7}},
			}))
		})
		It("marks this session's staged attachments committed once: a later commit keeps the first commit time", func() {
			l := fx.lease(worker)
			fx.stage(rtSession, "att-1", "bytes one")
			fx.stage(rtOther, "att-2", "bytes two")
			first := fx.now()
			cm := fx.commitOf(l, "cp")
			cm.CommittedAttachmentIDs = []string{"att-1", "att-2", "att-unknown"}
			fx.commit(cm)
			Expect(fx.attachment("att-1")).To(Equal(&rt.Attachment{AttachmentID: "att-1", SessionID: rtSession, Data: []byte("bytes one"), CommittedAtMs: &first}))
			Expect(fx.attachment("att-2").CommittedAtMs).To(BeNil(), "another session's attachment is left alone")
			Expect(fx.attachment("att-unknown")).To(BeNil(), "an unknown id stages nothing")
			fx.advance(5)
			cm.CommittedAttachmentIDs = []string{"att-1"}
			fx.commit(cm)
			Expect(fx.attachment("att-1").CommittedAtMs).To(Equal(&first), "the first commit time stays")
		})
		It("releases the lease with the commit when asked", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.ReleaseLease = fx.fenceOf(l)
			fx.commit(cm)
			won := fx.tryClaim(rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)))
		})
	})
}
