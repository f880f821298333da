package suite

import (
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Session meta, attachments, the durability tier, minted ids and two
// handles on one file.
func runtimeMiscSpecs(fx *runtimeFixture) {
	Describe("save_session_meta", func() {
		It("keeps the last saved meta, which load_session_meta returns", Rules("runtime.save_session_meta.last_wins", "runtime.load_session_meta.last_saved", "runtime.opaque_values"), func() {
			meta, err := fx.s.LoadSessionMeta(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(meta).To(BeNil(), "no meta before the first save")
			Expect(fx.s.SaveSessionMeta(fx.ctx, spec.RawJSON(`{"title":"first"}`))).To(Succeed())
			Expect(fx.s.SaveSessionMeta(fx.ctx, spec.RawJSON(`{"title": "second"}`))).To(Succeed())
			meta, err = fx.s.LoadSessionMeta(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			fx.expectSame(meta, spec.RawJSON(`{"title": "second"}`), "runtime.load_session_meta.last_saved")
		})
	})

	Describe("stage_attachment", func() {
		It("stages an uncommitted attachment that load_attachment returns exactly; an unknown id loads none", Rules("runtime.stage_attachment.first_staging", "runtime.load_attachment.as_staged"), func() {
			fx.stage(rtSession, "att-1", "\x00bytes\xff")
			fx.expectAttachment("att-1", &r.Attachment{AttachmentID: "att-1", SessionID: rtSession, Data: []byte("\x00bytes\xff")})
			Expect(fx.attachment("att-2")).To(BeNil())
		})
		It("keeps the first or the latest staging of an id not yet committed", Rules("runtime.stage_attachment.first_staging"), func() {
			fx.stage(rtSession, "att-1", "first")
			fx.stage(rtSession, "att-1", "second")
			Expect(string(fx.attachment("att-1").Data)).To(BeElementOf("first", "second"),
				allowed("runtime.stage_attachment.first_staging", "the first staging's bytes or the latest's"))
		})
		It("keeps a committed attachment's staging, its commit time included", Rules("runtime.stage_attachment.first_staging"), func() {
			fx.stage(rtSession, "att-1", "first")
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.CommittedAttachmentIDs = []string{"att-1"}
			fx.commit(cm)
			committed := fx.attachment("att-1")
			fx.advance(5)
			fx.stage(rtOther, "att-1", "second")
			fx.expectAttachment("att-1", committed)
		})
	})

	Describe("durability_tier", func() {
		It("is durable for a store on a file, which finds every acknowledged commit, lease and batch when opened again", Rules("runtime.durability_tier.durable"), func() {
			need(fx.h.Capabilities.Files, spec.CapFiles, "survival across reopen")
			tier, err := fx.s.DurabilityTier(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(tier).To(Equal(r.Durable))
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

	Describe("power loss", func() {
		It("keeps every commit, lease, batch, meta and attachment it acknowledged through a power cut that loses everything it never synced", Rules("runtime.survives_power_loss"), func() {
			path, cut := powerCutFile(&fx.h, r.Contract)
			Expect(fx.s.Close()).To(Succeed())
			fx.s = fx.open(path)
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("n", fx.node("n", ""))
			fx.commit(cm)
			fx.mergeable()
			Expect(fx.s.SaveSessionMeta(fx.ctx, spec.RawJSON(`{"m":1}`))).To(Succeed())
			Expect(fx.s.StageAttachment(fx.ctx, rtSession, "att-1", []byte("png"))).To(Succeed())
			before := fx.state()
			cut(fx.s.Close)
			fx.s = fx.open(path)
			Expect(fx.state()).To(Equal(before), r.Contract.Explain("runtime.survives_power_loss"))
			Expect(fx.tryClaim(rival)).To(BeNil(), "the lease survives the power cut")
			fx.commit(fx.commitOf(l, "after the power cut"))
		})

		// A disk may persist the writes between two syncs in any subset
		// (spec.PowerLossModel): here the writes of one file survive
		// and every other file's are lost, for each file that has some
		// when the power goes; the names made since the folder's last
		// sync survive (a prefix the entry model allows: all of them).
		It("keeps every attachment it acknowledged through a power cut that keeps one file's unsynced writes and loses the others'", Rules("runtime.survives_power_loss"), func() {
			for i := 0; ; i++ {
				p := powerCutDisk(&fx.h, r.Contract)
				Expect(fx.s.Close()).To(Succeed())
				fx.s = fx.open(p.path)
				Expect(fx.s.StageAttachment(fx.ctx, rtSession, "att-1", []byte("png"))).To(Succeed())
				before := fx.attachment("att-1")
				unsynced, err := p.d.Unsynced(p.dir)
				Expect(err).NotTo(HaveOccurred())
				files := slices.DeleteFunc(fault.FatedFiles(unsynced), func(f string) bool { return len(unsynced[f]) == 0 })
				if i >= len(files) {
					return
				}
				var kept lossyfs.Fates
				for n := range unsynced[files[i]] {
					kept = append(kept, lossyfs.Kept{File: files[i], N: n + 1})
				}
				names, err := p.d.Entries(p.dir)
				Expect(err).NotTo(HaveOccurred())
				p.cutKeeping(fx.s.Close, kept, len(names))
				fx.s = fx.open(p.path)
				Expect(fx.attachment("att-1")).To(Equal(before), "only %s's unsynced writes survived: %s", files[i], r.Contract.Explain("runtime.survives_power_loss"))
			}
		})

		// A failed fsync drops the dirty data, and a retry succeeds
		// without it (spec.PowerLossAfterFailedSync): a staging answered
		// ok is held to it; one answered an error may or may not survive.
		// (Not a meta save: the seed's save_session_meta answers Ok
		// whatever its store did.)
		It("keeps an attachment it staged ok when a sync failed under it through a power cut", Rules("runtime.survives_power_loss"), func() {
			// For each file the store holds open, its next sync fails.
			for i := 0; ; i++ {
				p := powerCutDisk(&fx.h, r.Contract)
				Expect(fx.s.Close()).To(Succeed())
				fx.s = fx.open(p.path)
				Expect(fx.s.StageAttachment(fx.ctx, rtSession, "att-1", []byte("png"))).To(Succeed())
				files := p.openFiles()
				if i >= len(files) {
					return
				}
				Expect(p.d.FailSync(p.dir, files[i], 1)).To(Succeed())
				err := fx.s.StageAttachment(fx.ctx, rtSession, "att-2", []byte("pdf"))
				p.cut(fx.s.Close, nil)
				fx.s = fx.open(p.path)
				staged := &r.Attachment{AttachmentID: "att-2", SessionID: rtSession, Data: []byte("pdf")}
				if err == nil {
					Expect(fx.attachment("att-2")).To(Equal(staged), "the next sync of %s failed: %s", files[i], r.Contract.Explain("runtime.survives_power_loss"))
				} else {
					Expect(fx.attachment("att-2")).To(BeElementOf((*r.Attachment)(nil), staged), "the next sync of %s failed: %s", files[i], r.Contract.Explain("runtime.survives_power_loss"))
				}
			}
		})
	})

	// The ids the store mints where the seed does not show how (batch ids,
	// claim ids and tokens, checkpoint refs) are the store's: the specs
	// learn them from answers and present them back; items follow the
	// seed's format for the batch id the store answered.
	Describe("minted ids", func() {
		It("accepts back every id it answered: a batch id to cancel, a claim's id and token to renew, abandon and complete, a checkpoint ref to read",
			Rules("runtime.minted_ids"), func() {
				l := fx.lease(worker)
				b1, b2 := fx.mergeable(), fx.mergeable()
				Expect(fx.cancel(rtSession, b1.BatchID)).NotTo(BeNil(), allowed("runtime.minted_ids", "the batch %s it answered, cancelled", b1.BatchID))
				c := fx.claimWork(l, worker, 1)
				Expect(fx.claimed(c)).To(Equal([]string{b2.BatchID}))
				_, err := fx.s.RenewQueuedWorkClaim(fx.ctx, *c, claimTTL)
				Expect(err).NotTo(HaveOccurred(), allowed("runtime.minted_ids", "the claim %s / %s it answered, renewed", c.ClaimID, c.LeaseToken))
				Expect(fx.s.AbandonQueuedWorkClaim(fx.ctx, *c)).To(Succeed())
				c = fx.claimWork(l, worker, 1)
				cm := fx.commitOf(l, "cp")
				cm.CompletedQueueClaims = []r.CompletedQueueClaim{c.Completed()}
				res := fx.commit(cm)
				Expect(fx.list(rtSession)).To(BeEmpty(), allowed("runtime.minted_ids", "the claim it answered, completed"))
				Expect(fx.load(r.FullGraph()).CheckpointRef).To(Equal(res.CheckpointRef))
			})
		It("gives the items of a batch the ids <batch id>:item:<index>, of the batch id it answered", Rules("runtime.enqueue_queued_work.item_ids"), func() {
			d := fx.draft(r.SlotMergeable, "k")
			d.Payloads = append(d.Payloads, spec.RawJSON(`{"n":2}`), spec.RawJSON(`{"n":3}`))
			b := fx.enqueue(d)
			for i, it := range b.Items {
				Expect(it.ItemID).To(Equal(r.ItemID(b.BatchID, i)))
			}
		})
		It("gives a new claim an id and token that no live claim has", Rules("runtime.claim_ready_queued_work.claim_lease"), func() {
			l := fx.lease(worker)
			fx.mergeable()
			fx.mergeable()
			a := fx.claimWork(l, worker, 1)
			b := fx.claimWork(l, worker, 1)
			Expect(a).NotTo(BeNil())
			Expect(b).NotTo(BeNil())
			Expect([]string{b.ClaimID, b.LeaseToken}).NotTo(Equal([]string{a.ClaimID, a.LeaseToken}),
				allowed("runtime.claim_ready_queued_work.claim_lease", "any id and token but the live claim's %s / %s", a.ClaimID, a.LeaseToken))
			Expect(fx.s.AbandonQueuedWorkClaim(fx.ctx, *a)).To(Succeed())
			Expect(fx.claimWork(l, rival, 1)).NotTo(BeNil(), "abandoning the first claim freed its batch only")
			Expect(fx.claimWork(l, rival, 1)).To(BeNil(), "the second claim still holds its batch")
		})
	})

	Describe("two handles on one database", func() {
		It("a second handle cannot win the session lease or a queued work claim the first holds", Rules("runtime.write_lock"), func() {
			need(fx.h.Capabilities.SharedFiles, spec.CapSharedFiles, "two handles on one file")
			t := fx.open(fx.path)
			l := fx.lease(worker)
			Expect(fx.tryClaimOn(t, rtSession, rival)).To(BeNil(), "the second handle sees the first's lease")
			b := fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			Expect(fx.claimed(c)).To(Equal([]string{b.BatchID}))
			Expect(fx.claimOn(t, l, rival, r.BoundaryTurn, 1)).To(BeNil(), "the second handle sees the first's claim")
			gone, err := t.CancelQueuedWorkBatch(fx.ctx, rtSession, b.BatchID)
			Expect(err).NotTo(HaveOccurred())
			Expect(gone).To(BeNil())
			forged := l.Fence()
			forged.OwnerID = rival
			_, err = t.CommitRuntimeState(fx.ctx, r.RuntimeCommit{SessionID: rtSession, Lease: &forged, Graph: r.GraphDelta{Kind: r.GraphUnchanged}})
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired))
			fx.advance(leaseTTL)
			won := fx.tryClaimOn(t, rtSession, rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)), "the fencing count is shared")
			_, err = fx.s.CommitRuntimeState(fx.ctx, fx.commitOf(l, "zombie"))
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "the first handle's old lease lost its authority")
			fx.commitOn(t, fx.commitOf(won, "from the second handle"))
			Expect(fx.load(r.FullGraph()).Checkpoint).To(equalBytes([]byte("from the second handle")), "the first handle sees the second's commit")
		})
	})
}
