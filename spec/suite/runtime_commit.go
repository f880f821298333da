package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The one write of a session's state, under its lease.
func runtimeCommitSpecs(fx *runtimeFixture) {
	Describe("commit_runtime_state", func() {
		It("commits the first state at revision 1, and load_session returns every part of it", Rules("runtime.commit_runtime_state.revision", "runtime.commit_runtime_state.checkpoint", "runtime.commit_runtime_state.head_fields", "runtime.load_session.head", "runtime.load_session.statements", "runtime.opaque_values"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "\x00checkpoint\xff")
			cm.Graph = fx.appendNodes("child", fx.node("root", ""), fx.node("child", "root"))
			cm.AgentFrames = spec.RawJSON(`[{"id":"frame-1"}]`)
			cm.CurrentAgentFrameID = "frame-1"
			cm.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}}}
			res := fx.commit(cm)
			Expect(res.HeadRevision).To(Equal(uint64(1)))
			Expect(res.CheckpointRef).NotTo(BeEmpty(), allowed("runtime.commit_runtime_state.checkpoint", "any non-empty ref"))
			fx.expectSame(fx.load(r.FullGraph()), &r.SessionRead{
				SessionID: rtSession, HeadRevision: 1, Config: cm.Config, AgentFrames: cm.AgentFrames,
				CurrentAgentFrameID: "frame-1", Graph: r.Graph{Nodes: cm.Graph.Nodes, LeafNodeID: "child"},
				CheckpointRef: res.CheckpointRef, Checkpoint: cm.Checkpoint, TokenLedger: cm.UsageDeltas,
			}, "runtime.load_session.head")
		})
		It("moves the revision up by one per commit and makes the last checkpoint and config the head's", Rules("runtime.commit_runtime_state.revision", "runtime.commit_runtime_state.checkpoint", "runtime.commit_runtime_state.head_fields"), Bound("runtime.commit_runtime_state.revision#step", spec.Above), func() {
			l := fx.lease(worker)
			for i, cp := range []string{"one", "two", "three"} {
				Expect(fx.commit(fx.commitOf(l, cp)).HeadRevision).To(Equal(uint64(i + 1)))
			}
			cm := fx.commitOf(l, "four")
			cm.Config = spec.RawJSON(`{"model":"m-2"}`)
			res := fx.commit(cm)
			read := fx.load(r.FullGraph())
			Expect(read.HeadRevision).To(Equal(uint64(4)))
			Expect(read.Checkpoint).To(equalBytes([]byte("four")))
			Expect(read.CheckpointRef).To(Equal(res.CheckpointRef), allowed("runtime.commit_runtime_state.checkpoint", "the ref the last commit answered, %s", res.CheckpointRef))
			fx.expectSame(read.Config, spec.RawJSON(`{"model":"m-2"}`), "runtime.commit_runtime_state.head_fields")
		})
		It("accepts expected_head_revision equal to the stored revision, 0 before the first commit", Rules("runtime.commit_runtime_state.expected_revision"), Bound("runtime.commit_runtime_state.expected_revision#stored", spec.At), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.ExpectedHeadRevision = fx.u64(0)
			Expect(fx.commit(cm).HeadRevision).To(Equal(uint64(1)))
			cm.ExpectedHeadRevision = fx.u64(1)
			Expect(fx.commit(cm).HeadRevision).To(Equal(uint64(2)))
		})
		It("rejects any other expected_head_revision with head_revision_conflict and leaves no trace", Rules("runtime.commit_runtime_state.expected_revision", "runtime.failure_leaves_no_trace"), Bound("runtime.commit_runtime_state.expected_revision#stored", spec.Below, spec.Above), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.ExpectedHeadRevision = fx.u64(1)
			fx.refusedCommit(cm, r.ErrHeadRevisionConflict)
			Expect(fx.load(r.FullGraph())).To(BeNil(), "nothing before the first commit")
			fx.commit(fx.commitOf(l, "first"))
			cm.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 1}}}
			for _, stale := range []uint64{0, 2} {
				cm.ExpectedHeadRevision = fx.u64(stale)
				fx.refusedCommit(cm, r.ErrHeadRevisionConflict)
			}
		})
		It("rejects a commit without a lease with session_execution_lease_expired and leaves no trace", Rules("runtime.commit_runtime_state.lease_required"), func() {
			l := fx.lease(worker)
			fx.commit(fx.commitOf(l, "first"))
			fx.refusedCommit(fx.commitOf(nil, "second"), r.ErrSessionExecutionLeaseExpired)
		})
		It("rejects a lease that is not the live one (another owner, token, fencing token or session, or released) with session_execution_lease_expired", Rules("runtime.commit_runtime_state.lease_live"), func() {
			l := fx.lease(worker)
			fx.commit(fx.commitOf(l, "first"))
			for what, fence := range fx.fenceVariants(l) {
				By(what)
				cm := fx.commitOf(l, "second")
				cm.Lease = &fence
				fx.refusedCommit(cm, r.ErrSessionExecutionLeaseExpired)
			}
			Expect(fx.s.ReleaseSessionExecutionLease(fx.ctx, l.Fence())).To(Succeed())
			fx.refusedCommit(fx.commitOf(l, "second"), r.ErrSessionExecutionLeaseExpired)
		})
		It("commits 1ms before the lease expires, and fails session_execution_lease_expired at expiry and after", Rules("runtime.commit_runtime_state.lease_live", "runtime.expiry"), Bound("runtime.expiry#expiry", spec.Below, spec.At, spec.Above), func() {
			l := fx.lease(worker)
			fx.advance(leaseTTL - 1)
			fx.commit(fx.commitOf(l, "in time"))
			fx.advance(1)
			fx.refusedCommit(fx.commitOf(l, "at expiry"), r.ErrSessionExecutionLeaseExpired)
			fx.advance(1)
			fx.refusedCommit(fx.commitOf(l, "after expiry"), r.ErrSessionExecutionLeaseExpired)
		})
		It("binds the store to the session of its first commit: another session fails session_binding_mismatch", Rules("runtime.commit_runtime_state.binding"), func() {
			l := fx.lease(worker)
			fx.commit(fx.commitOf(l, "a"))
			lo := fx.tryClaimOn(fx.s, rtOther, worker)
			Expect(lo).NotTo(BeNil())
			cm := fx.commitOf(lo, "b")
			cm.SessionID = rtOther
			fx.refusedCommit(cm, r.ErrSessionBindingMismatch)
		})
		It("rejects a turn commit of another session with runtime_turn_commit_conflict", Rules("runtime.commit_runtime_state.turn_session"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.TurnCommit = &r.TurnCommit{SessionID: rtOther, TurnID: "turn-1", TurnCommitHash: "h1"}
			fx.refusedCommit(cm, r.ErrRuntimeTurnCommitConflict)
		})
		It("answers a replay of a committed turn with the same hash with the first result, and writes nothing", Rules("runtime.commit_runtime_state.turn_replay"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "turn one")
			cm.TurnCommit = &r.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h1"}
			first := fx.commit(cm)
			fx.commit(fx.commitOf(l, "later"))
			before := fx.state()
			replay := cm
			replay.Checkpoint = []byte("replayed")
			replay.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 5}}}
			Expect(fx.commit(replay)).To(Equal(first))
			Expect(fx.state()).To(Equal(before), "a replay writes nothing")
		})
		It("still releases the lease when a replay of a committed turn asks", Rules("runtime.commit_runtime_state.turn_replay", "runtime.commit_runtime_state.release"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "turn one")
			cm.TurnCommit = &r.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h1"}
			first := fx.commit(cm)
			cm.ReleaseLease = fx.fenceOf(l)
			Expect(fx.commit(cm)).To(Equal(first))
			Expect(fx.tryClaim(rival)).NotTo(BeNil(), "the replay released the lease")
		})
		It("rejects a replay of a committed turn with another hash with runtime_turn_commit_conflict", Rules("runtime.commit_runtime_state.turn_other_hash"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "turn one")
			cm.TurnCommit = &r.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h1"}
			fx.commit(cm)
			cm.TurnCommit = &r.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h2"}
			cm.Checkpoint = []byte("another outcome")
			fx.refusedCommit(cm, r.ErrRuntimeTurnCommitConflict)
		})
		It("deletes the batches of the queue claims it completes, and only those", Rules("runtime.commit_runtime_state.completed_claims_deleted"), func() {
			l := fx.lease(worker)
			b1, b2, b3 := fx.mergeable(), fx.mergeable(), fx.mergeable()
			c := fx.claimWork(l, worker, 2)
			Expect(fx.claimed(c)).To(Equal([]string{b1.BatchID, b2.BatchID}))
			cm := fx.commitOf(l, "cp")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{c.Completed()}
			fx.commit(cm)
			Expect(fx.batchIDs(fx.list(rtSession))).To(Equal([]string{b3.BatchID}))
		})
		It("rejects completed claims not held (another token, claim or session) with queued_work_claim_expired, and the head does not move",
			Rules("runtime.commit_runtime_state.completed_claim_session", "runtime.commit_runtime_state.completed_claim_held"), func() {
				l := fx.lease(worker)
				fx.commit(fx.commitOf(l, "first"))
				fx.mergeable()
				c := fx.claimWork(l, worker, 1)
				Expect(c).NotTo(BeNil())
				for what, m := range map[string]func(*r.CompletedQueueClaim){
					"another token":   func(x *r.CompletedQueueClaim) { x.LeaseToken = "forged" },
					"another session": func(x *r.CompletedQueueClaim) { x.SessionID = rtOther },
					"another claim":   func(x *r.CompletedQueueClaim) { x.ClaimID = "forged" },
				} {
					By(what)
					done := c.Completed()
					m(&done)
					cm := fx.commitOf(l, "second")
					cm.CompletedQueueClaims = []r.CompletedQueueClaim{done}
					fx.refusedCommit(cm, r.ErrQueuedWorkClaimExpired)
				}
				Expect(fx.load(r.FullGraph()).HeadRevision).To(Equal(uint64(1)))
			})
		It("rejects a completed claim whose batch another claim took after it expired with queued_work_claim_expired", Rules("runtime.commit_runtime_state.completed_claim_held"), func() {
			l := fx.lease(worker)
			fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			fx.advance(claimTTL)
			Expect(fx.claimWork(l, rival, 1)).NotTo(BeNil())
			cm := fx.commitOf(l, "second")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{c.Completed()}
			fx.refusedCommit(cm, r.ErrQueuedWorkClaimExpired)
		})
		It("completes a claim that has expired but still holds its batches, or refuses it with queued_work_claim_expired", Rules("runtime.commit_runtime_state.completed_claim_held"), func() {
			l := fx.lease(worker)
			fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			fx.advance(claimTTL)
			cm := fx.commitOf(l, "second")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{c.Completed()}
			before := fx.state()
			_, err := fx.s.CommitRuntimeState(fx.ctx, cm)
			why := allowed("runtime.commit_runtime_state.completed_claim_held", "the commit, its claim's batches deleted, or queued_work_claim_expired")
			if err != nil {
				Expect(err).To(MatchError(r.ErrQueuedWorkClaimExpired), why)
				Expect(fx.state()).To(Equal(before), why)
				return
			}
			Expect(fx.list(rtSession)).To(BeEmpty(), why)
		})
		It("keeps the nodes and moves the leaf for an unchanged graph delta", Rules("runtime.commit_runtime_state.graph_unchanged"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("b", fx.node("root", ""), fx.node("a", "root"), fx.node("b", "root"))
			fx.commit(cm)
			cm.Graph = r.GraphDelta{Kind: r.GraphUnchanged, LeafNodeID: "a"}
			fx.commit(cm)
			fx.expectSame(fx.load(r.FullGraph()).Graph, r.Graph{Nodes: []r.Node{fx.node("root", ""), fx.node("a", "root"), fx.node("b", "root")}, LeafNodeID: "a"}, "runtime.load_session.full_graph")
			fx.expectSame(fx.load(r.ActivePathTo("")).Graph, r.Graph{Nodes: []r.Node{fx.node("root", ""), fx.node("a", "root")}, LeafNodeID: "a"}, "runtime.load_session.active_path")
		})
		It("appends nodes to the stored ones", Rules("runtime.commit_runtime_state.graph_append"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("root", fx.node("root", ""))
			fx.commit(cm)
			cm.Graph = fx.appendNodes("child", fx.node("child", "root"))
			fx.commit(cm)
			fx.expectSame(fx.load(r.FullGraph()).Graph, r.Graph{Nodes: []r.Node{fx.node("root", ""), fx.node("child", "root")}, LeafNodeID: "child"}, "runtime.commit_runtime_state.graph_append")
		})
		It("replaces the whole graph, tombstoned nodes included", Rules("runtime.commit_runtime_state.graph_replace_full"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("a", fx.node("root", ""), fx.node("a", "root"))
			fx.commit(cm)
			fx.tombstone("a")
			cm.Graph = r.GraphDelta{Kind: r.GraphReplaceFull, Nodes: []r.Node{fx.node("x", ""), fx.node("y", "x")}, LeafNodeID: "y"}
			fx.commit(cm)
			fx.expectSame(fx.load(r.FullGraph()).Graph, r.Graph{Nodes: []r.Node{fx.node("x", ""), fx.node("y", "x")}, LeafNodeID: "y"}, "runtime.commit_runtime_state.graph_replace_full")
			Expect(fx.loadNode("root")).To(BeNil())
			Expect(fx.vacuum()).To(BeZero(), "the replaced graph took its tombstones with it")
		})
		It("rejects an append of a node id already stored (even tombstoned) or repeated in the delta with graph_node_conflict or io, and leaves no trace", Rules("runtime.commit_runtime_state.graph_repeated_node"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("a", fx.node("root", ""), fx.node("a", "root"))
			fx.commit(cm)
			fx.tombstone("a")
			cm.Checkpoint = []byte("another")
			cm.UsageDeltas = []r.UsageEntry{{Source: "agent", Model: "m-1", Usage: r.Usage{InputTokens: 1}}}
			overwrite := r.Node{NodeID: "root", Data: spec.RawJSON(`{"text":"overwritten"}`)}
			for _, delta := range []r.GraphDelta{
				fx.appendNodes("root", overwrite),
				fx.appendNodes("a", fx.node("a", "root")),
				fx.appendNodes("n", fx.node("n", "root"), fx.node("n", "root")),
			} {
				cm.Graph = delta
				before := fx.state()
				_, err := fx.s.CommitRuntimeState(fx.ctx, cm)
				fx.refusedAny(before, err, "runtime.commit_runtime_state.graph_repeated_node", r.ErrGraphNodeConflict, r.ErrIO)
			}
			fx.expectSame(fx.loadNode("root"), &r.Node{NodeID: "root", Data: fx.node("root", "").Data}, "runtime.commit_runtime_state.graph_repeated_node")
		})
		It("rejects an unknown graph delta kind with invalid_argument", Rules("runtime.invalid_argument_at_any_point"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = r.GraphDelta{Kind: "rewrite"}
			fx.refusedCommit(cm, r.ErrInvalidArgument)
		})
		It("appends usage deltas: the token ledger merges them per source and model, summed, in any order", Rules("runtime.commit_runtime_state.usage", "runtime.load_session.token_ledger"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.UsageDeltas = []r.UsageEntry{
				{Source: "tool", Model: "m-1", Usage: r.Usage{InputTokens: 7}},
				{Source: "agent", Model: "m-2", Usage: r.Usage{InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}},
			}
			fx.commit(cm)
			cm.UsageDeltas = []r.UsageEntry{
				{Source: "agent", Model: "m-2", Usage: r.Usage{InputTokens: 10, OutputTokens: 20, CachedInputTokens: 30, ReasoningTokens: 40}},
				{Source: "agent", Model: "m-1", Usage: r.Usage{OutputTokens: 5}},
			}
			fx.commit(cm)
			fx.expectSame(fx.load(r.FullGraph()).TokenLedger, []r.UsageEntry{
				{Source: "agent", Model: "m-1", Usage: r.Usage{OutputTokens: 5}},
				{Source: "agent", Model: "m-2", Usage: r.Usage{InputTokens: 11, OutputTokens: 22, CachedInputTokens: 33, ReasoningTokens: 44}},
				{Source: "tool", Model: "m-1", Usage: r.Usage{InputTokens: 7}},
			}, "runtime.load_session.token_ledger")
		})
		It("marks this session's staged attachments committed once: a later commit keeps the first commit time", Rules("runtime.commit_runtime_state.attachments"), func() {
			l := fx.lease(worker)
			fx.stage(rtSession, "att-1", "bytes one")
			fx.stage(rtOther, "att-2", "bytes two")
			first := fx.now()
			cm := fx.commitOf(l, "cp")
			cm.CommittedAttachmentIDs = []string{"att-1", "att-2", "att-unknown"}
			fx.commit(cm)
			fx.expectAttachment("att-1", &r.Attachment{AttachmentID: "att-1", SessionID: rtSession, Data: []byte("bytes one"), CommittedAtMs: &first})
			Expect(fx.attachment("att-2").CommittedAtMs).To(BeNil(), "another session's attachment is left alone")
			Expect(fx.attachment("att-unknown")).To(BeNil(), "an unknown id stages nothing")
			fx.advance(5)
			cm.CommittedAttachmentIDs = []string{"att-1"}
			fx.commit(cm)
			Expect(fx.attachment("att-1").CommittedAtMs).To(Equal(&first), "the first commit time stays")
		})
		It("releases the lease with the commit when asked", Rules("runtime.commit_runtime_state.release"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.ReleaseLease = fx.fenceOf(l)
			fx.commit(cm)
			won := fx.tryClaim(rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)))
		})
		It("answers the first broken rule in the seed's order: binding, turn, lease, expected revision, completed claims, graph", Rules("runtime.commit_runtime_state.check_order"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("n", fx.node("n", ""))
			fx.commit(cm)
			fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			bad := c.Completed()
			bad.LeaseToken = "forged"
			forged := l.Fence()
			forged.LeaseToken = "forged"
			broken := fx.commitOf(l, "broken")
			broken.Graph = fx.appendNodes("n", fx.node("n", ""))
			broken.CompletedQueueClaims = []r.CompletedQueueClaim{bad}
			fx.refusedCommit(broken, r.ErrQueuedWorkClaimExpired)
			broken.ExpectedHeadRevision = fx.u64(7)
			fx.refusedCommit(broken, r.ErrHeadRevisionConflict)
			broken.Lease = &forged
			fx.refusedCommit(broken, r.ErrSessionExecutionLeaseExpired)
			broken.TurnCommit = &r.TurnCommit{SessionID: rtOther, TurnID: "t", TurnCommitHash: "h"}
			fx.refusedCommit(broken, r.ErrRuntimeTurnCommitConflict)
			broken.SessionID = rtOther
			fx.refusedCommit(broken, r.ErrSessionBindingMismatch)
		})
		It("answers an unknown graph delta kind with invalid_argument or what a check before it answers (a lease that is not live, a turn replay)",
			Rules("runtime.invalid_argument_at_any_point"), func() {
				l := fx.lease(worker)
				cm := fx.commitOf(l, "cp")
				cm.TurnCommit = &r.TurnCommit{SessionID: rtSession, TurnID: "turn-1", TurnCommitHash: "h1"}
				first := fx.commit(cm)
				before := fx.state()
				cm.Graph = r.GraphDelta{Kind: "rewrite"}
				res, err := fx.s.CommitRuntimeState(fx.ctx, cm)
				why := allowed("runtime.invalid_argument_at_any_point", "invalid_argument, or the replayed turn's first result")
				if err == nil {
					Expect(res).To(Equal(first), why)
				} else {
					Expect(err).To(MatchError(r.ErrInvalidArgument), why)
				}
				Expect(fx.state()).To(Equal(before))
				cm.TurnCommit = nil
				forged := l.Fence()
				forged.OwnerID = rival
				cm.Lease = &forged
				_, err = fx.s.CommitRuntimeState(fx.ctx, cm)
				fx.refusedAny(before, err, "runtime.invalid_argument_at_any_point", r.ErrInvalidArgument, r.ErrSessionExecutionLeaseExpired)
			})
	})
}
