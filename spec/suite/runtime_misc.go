package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	rt "github.com/storecheck/storecheck/spec/runtime"
)

// Session meta, attachments, the durability tier, minted ids and two
// handles on one file.
func runtimeMiscSpecs(fx *runtimeFixture) {
	Describe("save_session_meta", func() {
		It("keeps the last saved meta exactly, which load_session_meta returns", func() {
			meta, err := fx.s.LoadSessionMeta(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(meta).To(BeNil(), "no meta before the first save")
			Expect(fx.s.SaveSessionMeta(fx.ctx, spec.RawJSON(`{"title":"first"}`))).To(Succeed())
			Expect(fx.s.SaveSessionMeta(fx.ctx, spec.RawJSON(`{"title": "second"}`))).To(Succeed())
			meta, err = fx.s.LoadSessionMeta(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(meta).To(Equal(spec.RawJSON(`{"title": "second"}`)))
		})
	})

	Describe("stage_attachment", func() {
		It("stages an uncommitted attachment that load_attachment returns exactly; an unknown id loads none", func() {
			fx.stage(rtSession, "att-1", "\x00bytes\xff")
			Expect(fx.attachment("att-1")).To(Equal(&rt.Attachment{AttachmentID: "att-1", SessionID: rtSession, Data: []byte("\x00bytes\xff")}))
			Expect(fx.attachment("att-2")).To(BeNil())
		})
		It("keeps the first staging of an id, its commit time included", func() {
			fx.stage(rtSession, "att-1", "first")
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.CommittedAttachmentIDs = []string{"att-1"}
			fx.commit(cm)
			committed := fx.attachment("att-1")
			fx.advance(5)
			fx.stage(rtOther, "att-1", "second")
			Expect(fx.attachment("att-1")).To(Equal(committed))
		})
	})

	Describe("durability_tier", func() {
		It("is durable for a store on a file, which finds every acknowledged commit, lease and batch when opened again", func() {
			need(fx.h.Capabilities.Files, "files", "survival across reopen")
			tier, err := fx.s.DurabilityTier(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(tier).To(Equal(rt.Durable))
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("n", fx.node("n", ""))
			fx.commit(cm)
			fx.mergeable()
			Expect(fx.s.SaveSessionMeta(fx.ctx, spec.RawJSON(`{"m":1}`))).To(Succeed())
			before := fx.state()
			Expect(fx.s.Close()).To(Succeed())
			fx.s = fx.open(fx.path)
			Expect(fx.state()).To(Equal(before))
			Expect(fx.tryClaim(rival)).To(BeNil(), "the lease survives")
			fx.commit(fx.commitOf(l, "after reopen"))
		})
	})

	// The ids the store mints are the contract's (spec/runtime/ids.go): a
	// caller presents them back, and the checkers compare answers exactly.
	Describe("minted ids", func() {
		It("gives a granted lease the token <session>:<owner>:<now>:<fencing token>", func() {
			fx.advance(7)
			l := fx.lease(worker)
			Expect(l.LeaseToken).To(Equal(rt.LeaseToken(rtSession, worker, fx.now(), l.FencingToken)))
		})
		It("numbers batches by the store's enqueues, across sessions, never reusing a number, and items by their index", func() {
			a := fx.enqueue(fx.draft(rt.SlotMergeable, "k"))
			d := fx.draft(rt.SlotMergeable, "k")
			d.SessionID = rtOther
			b := fx.enqueue(d)
			c, err := fx.s.CancelQueuedWorkBatch(fx.ctx, rtSession, a.BatchID)
			Expect(err).NotTo(HaveOccurred())
			Expect(c).NotTo(BeNil())
			third := fx.enqueue(fx.draft(rt.SlotMergeable, "k"))
			Expect([]string{a.BatchID, b.BatchID, third.BatchID}).To(Equal([]string{
				rt.BatchID(rtSession, 1), rt.BatchID(rtOther, 2), rt.BatchID(rtSession, 3)}))
			Expect(third.Items[0].ItemID).To(Equal(rt.ItemID(third.BatchID, 0)))
		})
		It("gives a claim the id and token of its first batch, its claim count, its owner and now", func() {
			l := fx.lease(worker)
			b := fx.enqueue(fx.draft(rt.SlotMergeable, "k"))
			fx.advance(5)
			c := fx.claimWork(l, worker, 1)
			Expect(c).NotTo(BeNil())
			Expect(c.ClaimID).To(Equal(rt.ClaimID(rtSession, b.BatchID, 1)))
			Expect(c.LeaseToken).To(Equal(rt.ClaimToken(c.ClaimID, worker, fx.now())))
		})
	})

	Describe("two handles on one database", func() {
		It("a second handle cannot win the session lease or a queued work claim the first holds", func() {
			need(fx.h.Capabilities.SharedFiles, "shared-files", "two handles on one file")
			t := fx.open(fx.path)
			l := fx.lease(worker)
			Expect(fx.tryClaimOn(t, rtSession, rival)).To(BeNil(), "the second handle sees the first's lease")
			b := fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			Expect(fx.claimed(c)).To(Equal([]string{b.BatchID}))
			Expect(fx.claimOn(t, l, rival, rt.BoundaryTurn, 1)).To(BeNil(), "the second handle sees the first's claim")
			gone, err := t.CancelQueuedWorkBatch(fx.ctx, rtSession, b.BatchID)
			Expect(err).NotTo(HaveOccurred())
			Expect(gone).To(BeNil())
			forged := l.Fence()
			forged.OwnerID = rival
			_, err = t.CommitRuntimeState(fx.ctx, rt.RuntimeCommit{SessionID: rtSession, Lease: &forged, Graph: rt.GraphDelta{Kind: rt.GraphUnchanged}})
			Expect(err).To(MatchError(rt.ErrSessionExecutionLeaseExpired))
			fx.advance(leaseTTL)
			won := fx.tryClaimOn(t, rtSession, rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)), "the fencing count is shared")
			_, err = fx.s.CommitRuntimeState(fx.ctx, fx.commitOf(l, "zombie"))
			Expect(err).To(MatchError(rt.ErrSessionExecutionLeaseExpired), "the first handle's old lease lost its authority")
			fx.commitOn(t, fx.commitOf(won, "from the second handle"))
			Expect(fx.load(rt.FullGraph()).Checkpoint).To(Equal([]byte("from the second handle")), "the first handle sees the second's commit")
		})
	})
}
