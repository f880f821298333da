package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Queued work: enqueued, claimed under the session lease, renewed,
// abandoned, cancelled and listed.
func runtimeQueueSpecs(fx *runtimeFixture) {
	Describe("enqueue_queued_work", func() {
		It("queues a batch with its payloads as items in order, enqueued at now, with the store's initial claim fencing token",
			Rules("runtime.enqueue_queued_work.batch", "runtime.enqueue_queued_work.item_ids", "runtime.enqueue_queued_work.initial_claim_fence"), func() {
				d := fx.draft(r.SlotExclusive, "")
				d.Payloads = []spec.RawJSON{spec.RawJSON(`{"n":1}`), spec.RawJSON(`{"n":2}`)}
				d.AvailableAtMs = fx.now() + 50
				fx.advance(3)
				b := fx.enqueue(d)
				Expect(b.BatchID).NotTo(BeEmpty())
				fx.expectSame(b, r.QueuedWorkBatch{BatchID: b.BatchID, SessionID: rtSession, DeliveryPolicy: r.DeliverNextTurn,
					SlotPolicy: r.SlotExclusive, AvailableAtMs: d.AvailableAtMs, EnqueuedAtMs: fx.now(), ClaimFencingToken: b.ClaimFencingToken,
					Items: []r.QueuedWorkItem{{ItemID: r.ItemID(b.BatchID, 0), Payload: d.Payloads[0]}, {ItemID: r.ItemID(b.BatchID, 1), Payload: d.Payloads[1]}}},
					"runtime.enqueue_queued_work.batch")
				Expect(fx.list(rtSession)).To(Equal([]r.QueuedWorkBatch{b}))
				other := fx.mergeable()
				Expect(other.ClaimFencingToken).To(Equal(b.ClaimFencingToken), allowed("runtime.enqueue_queued_work.initial_claim_fence", "%d, the first batch's", b.ClaimFencingToken))
			})
		It("answers the queued batch for a source key already queued in the session, and adds nothing", Rules("runtime.enqueue_queued_work.source_key"), func() {
			d := fx.draft(r.SlotMergeable, "k")
			d.SourceKey = "source-1"
			first := fx.enqueue(d)
			fx.advance(10)
			d.Payloads = []spec.RawJSON{spec.RawJSON(`{"text":"again"}`)}
			Expect(fx.enqueue(d)).To(Equal(first))
			Expect(fx.list(rtSession)).To(Equal([]r.QueuedWorkBatch{first}))
		})
		It("queues the same source key in another session as another batch", Rules("runtime.enqueue_queued_work.source_key", "runtime.enqueue_queued_work.batch_id"), func() {
			d := fx.draft(r.SlotMergeable, "k")
			d.SourceKey = "source-1"
			a := fx.enqueue(d)
			d.SessionID = rtOther
			b := fx.enqueue(d)
			Expect(b.BatchID).NotTo(Equal(a.BatchID))
			Expect(fx.list(rtOther)).To(Equal([]r.QueuedWorkBatch{b}))
		})
		It("always queues drafts without a source key, in enqueue order, with distinct batch ids", Rules("runtime.enqueue_queued_work.batch", "runtime.enqueue_queued_work.batch_id"), func() {
			a, b, c := fx.mergeable(), fx.mergeable(), fx.mergeable()
			Expect(fx.batchIDs(fx.list(rtSession))).To(Equal([]string{a.BatchID, b.BatchID, c.BatchID}))
			Expect(a.BatchID).NotTo(Equal(b.BatchID))
			Expect(b.BatchID).NotTo(Equal(c.BatchID))
		})
		It("gives a new batch an id that no batch the store holds has, in any session", Rules("runtime.enqueue_queued_work.batch_id"), func() {
			a := fx.mergeable()
			d := fx.draft(r.SlotMergeable, "k")
			d.SessionID = rtOther
			b := fx.enqueue(d)
			Expect(fx.cancel(rtSession, a.BatchID)).NotTo(BeNil())
			c := fx.mergeable()
			Expect(c.BatchID).NotTo(Equal(b.BatchID), allowed("runtime.enqueue_queued_work.batch_id", "any id but the held batch %s's", b.BatchID))
		})
		It("rejects an unknown delivery or slot policy with invalid_argument", Rules("runtime.invalid_argument_at_any_point"), func() {
			before := fx.state()
			d := fx.draft(r.SlotMergeable, "k")
			d.DeliveryPolicy = "someday"
			_, err := fx.s.EnqueueQueuedWork(fx.ctx, d)
			fx.refused(before, err, r.ErrInvalidArgument)
			d = fx.draft("shared", "k")
			_, err = fx.s.EnqueueQueuedWork(fx.ctx, d)
			fx.refused(before, err, r.ErrInvalidArgument)
		})
		It("answers a draft of an unknown policy whose source key is queued with invalid_argument or the queued batch", Rules("runtime.invalid_argument_at_any_point"), func() {
			d := fx.draft(r.SlotMergeable, "k")
			d.SourceKey = "source-1"
			first := fx.enqueue(d)
			before := fx.state()
			d.SlotPolicy = "shared"
			got, err := fx.s.EnqueueQueuedWork(fx.ctx, d)
			if err == nil {
				Expect(got).To(Equal(first), allowed("runtime.invalid_argument_at_any_point", "invalid_argument, or the batch queued under the source key"))
			} else {
				Expect(err).To(MatchError(r.ErrInvalidArgument), allowed("runtime.invalid_argument_at_any_point", "invalid_argument, or the batch queued under the source key"))
			}
			Expect(fx.state()).To(Equal(before))
		})
	})

	Describe("claim_ready_queued_work", func() {
		It("claims nothing when max_batches is 0, even without a live lease, and the first batch when it is 1", Rules("runtime.claim_ready_queued_work.max_zero"), Bound("runtime.claim_ready_queued_work.max_zero#zero", spec.At, spec.Above), func() {
			first := fx.mergeable()
			fx.mergeable()
			c, err := fx.s.ClaimReadyQueuedWork(fx.ctx, rtSession, r.SessionExecutionLeaseFence{SessionID: rtSession}, worker, r.BoundaryTurn, claimTTL, 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(c).To(BeNil())
			Expect(fx.pending()).To(HaveLen(2))
			Expect(fx.claimed(fx.claimWork(fx.lease(worker), worker, 1))).To(Equal([]string{first.BatchID}), "max_batches 1, one above 0")
		})
		It("claims at most max_batches: all of one fewer or of max_batches claimable batches, the first max_batches of one more", Rules("runtime.claim_ready_queued_work.prefix"), Bound("runtime.claim_ready_queued_work.prefix#max_batches", spec.Below, spec.At, spec.Above), func() {
			l := fx.lease(worker)
			b := []r.QueuedWorkBatch{fx.mergeable(), fx.mergeable(), fx.mergeable()}
			ids := fx.batchIDs(b)
			for _, tc := range []struct {
				max  int
				side string
				want []string
			}{{4, "one fewer claimable than max_batches", ids}, {3, "max_batches claimable", ids}, {2, "one more claimable than max_batches", ids[:2]}} {
				c := fx.claimWork(l, worker, tc.max)
				Expect(fx.claimed(c)).To(Equal(tc.want), allowed("runtime.claim_ready_queued_work.prefix#max_batches", "%s, max_batches %d: %d batches", tc.side, tc.max, len(tc.want)))
				Expect(fx.s.AbandonQueuedWorkClaim(fx.ctx, *c)).To(Succeed())
			}
		})
		It("requires the session's live lease: any other fails session_execution_lease_expired and claims nothing", Rules("runtime.claim_ready_queued_work.lease_live"), func() {
			l := fx.lease(worker)
			fx.mergeable()
			before := fx.state()
			for what, fence := range fx.fenceVariants(l) {
				_, err := fx.s.ClaimReadyQueuedWork(fx.ctx, rtSession, fence, worker, r.BoundaryTurn, claimTTL, 1)
				Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), what)
			}
			fx.advance(leaseTTL)
			_, err := fx.s.ClaimReadyQueuedWork(fx.ctx, rtSession, l.Fence(), worker, r.BoundaryTurn, claimTTL, 1)
			fx.refused(before, err, r.ErrSessionExecutionLeaseExpired)
		})
		It("claims ready batches in enqueue order until now + ttl, each claimed batch's claim fencing token up by one",
			Rules("runtime.claim_ready_queued_work.candidates", "runtime.claim_ready_queued_work.prefix", "runtime.claim_ready_queued_work.batch_fence",
				"runtime.claim_ready_queued_work.claim_lease", "runtime.claim_ready_queued_work.claim_fence",
				"runtime.claim_ready_queued_work.answered_batches"), Bound("runtime.claim_ready_queued_work.batch_fence#step", spec.Above), func() {
				l := fx.lease(worker)
				b1, b2, b3 := fx.mergeable(), fx.mergeable(), fx.mergeable()
				f0 := b1.ClaimFencingToken
				fx.advance(7)
				c := fx.claimWork(l, worker, 2)
				Expect(fx.claimed(c)).To(Equal([]string{b1.BatchID, b2.BatchID}))
				Expect(c.SessionID).To(Equal(rtSession))
				Expect(c.OwnerID).To(Equal(worker))
				Expect(c.ClaimID).NotTo(BeEmpty())
				Expect(c.LeaseToken).NotTo(BeEmpty())
				Expect(c.ClaimedAtMs).To(Equal(fx.now()))
				Expect(c.ExpiresAtMs).To(Equal(fx.now() + int64(claimTTL)))
				fx.expectClaimFence(c)
				queue := fx.list(rtSession)
				Expect([]uint64{queue[0].ClaimFencingToken, queue[1].ClaimFencingToken, queue[2].ClaimFencingToken}).To(Equal([]uint64{f0 + 1, f0 + 1, f0}))
				Expect(fx.batchIDs(fx.pending())).To(Equal([]string{b3.BatchID}))
			})
		It("claims in enqueue order however many batches came before: of twelve queued, the first two", Rules("runtime.claim_ready_queued_work.candidates"), func() {
			// Past ten batches, ids that end in a count sort otherwise as
			// text ("…10" before "…2"): the order is enqueueing's all the
			// same.
			l := fx.lease(worker)
			var b []r.QueuedWorkBatch
			for range 12 {
				b = append(b, fx.mergeable())
			}
			c := fx.claimWork(l, worker, 2)
			Expect(fx.claimed(c)).To(Equal(fx.batchIDs(b[:2])), "twelve batches queued, max_batches 2: the first two enqueued")
		})
		It("skips delayed work until its available_at: 1ms before it is not claimed, at available_at it is, and after it", Rules("runtime.claim_ready_queued_work.candidates"), Bound("runtime.claim_ready_queued_work.candidates#available_at", spec.Below, spec.At, spec.Above), func() {
			l := fx.lease(worker)
			d := fx.draft(r.SlotMergeable, "k")
			d.AvailableAtMs = fx.now() + 500
			delayed, later := fx.enqueue(d), fx.enqueue(d)
			ready := fx.mergeable()
			Expect(fx.claimed(fx.claimWork(l, worker, 10))).To(Equal([]string{ready.BatchID}), "delayed work does not block ready work")
			fx.advance(499)
			Expect(fx.claimWork(l, worker, 10)).To(BeNil())
			fx.advance(1)
			Expect(fx.claimed(fx.claimWork(l, worker, 1))).To(Equal([]string{delayed.BatchID}), "at available_at")
			fx.advance(1)
			Expect(fx.claimed(fx.claimWork(l, worker, 1))).To(Equal([]string{later.BatchID}), "1ms after available_at")
		})
		// No seed states a size, but a store that applies a LIMIT 100
		// before it filters the candidates (issue 26 item 6) never reaches
		// work queued behind 100 it cannot claim.
		It("claims ready work queued behind 100 batches not yet available", Rules("runtime.claim_ready_queued_work.candidates"), func() {
			l := fx.lease(worker)
			d := fx.draft(r.SlotExclusive, "")
			d.AvailableAtMs = fx.now() + 10_000
			for range spec.ScanLimit {
				fx.enqueue(d)
			}
			ready := fx.mergeable()
			Expect(fx.claimed(fx.claimWork(l, worker, 1))).To(Equal([]string{ready.BatchID}))
		})
		It("does not claim a batch a live claim holds; at that claim's expiry it is claimed again, its fence up by one",
			Rules("runtime.claim_ready_queued_work.candidates", "runtime.expiry", "runtime.claim_ready_queued_work.batch_fence", "runtime.claim_ready_queued_work.claim_fence",
				"runtime.claim_ready_queued_work.answered_batches"), Bound("runtime.expiry#expiry", spec.Below, spec.At), Bound("runtime.claim_ready_queued_work.batch_fence#step", spec.Above), func() {
				l := fx.lease(worker)
				b := fx.mergeable()
				f0 := b.ClaimFencingToken
				first := fx.claimWork(l, worker, 1)
				Expect(fx.claimed(first)).To(Equal([]string{b.BatchID}))
				fx.advance(claimTTL - 1)
				Expect(fx.claimWork(l, rival, 1)).To(BeNil())
				fx.advance(1)
				again := fx.claimWork(l, rival, 1)
				Expect(fx.claimed(again)).To(Equal([]string{b.BatchID}))
				Expect(fx.list(rtSession)[0].ClaimFencingToken).To(Equal(f0+2), "two claims, two increments")
				fx.expectClaimFence(again)
				Expect(again.FencingToken).To(BeNumerically(">", first.FencingToken))
			})
		It("never returns a claim that owns only some of its batches", Rules("runtime.claim_ready_queued_work.all_or_nothing"), func() {
			l := fx.lease(worker)
			b1, b2, b3 := fx.mergeable(), fx.mergeable(), fx.mergeable()
			Expect(fx.claimed(fx.claimWork(l, worker, 1))).To(Equal([]string{b1.BatchID}))
			second := fx.claimWork(l, rival, 3)
			Expect(fx.claimed(second)).To(Equal([]string{b2.BatchID, b3.BatchID}), "a batch another live claim holds is never in a claim")
			cm := fx.commitOf(l, "cp")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{second.Completed()}
			fx.commit(cm)
			Expect(fx.batchIDs(fx.list(rtSession))).To(Equal([]string{b1.BatchID}))
		})
		It("claims an exclusive first batch alone", Rules("runtime.claim_ready_queued_work.prefix_reading"), func() {
			l := fx.lease(worker)
			x := fx.enqueue(fx.draft(r.SlotExclusive, "k"))
			m := fx.mergeable()
			Expect(fx.claimed(fx.claimWork(l, worker, 10))).To(Equal([]string{x.BatchID}))
			Expect(fx.claimed(fx.claimWork(l, worker, 10))).To(Equal([]string{m.BatchID}))
		})
		It("takes a prefix of at most max_batches, which an exclusive batch ends, and another merge key as the seed's readings allow",
			Rules("runtime.claim_ready_queued_work.prefix", "runtime.claim_ready_queued_work.prefix_reading"), func() {
				l := fx.lease(worker)
				fx.mergeable()
				fx.mergeable()
				fx.mergeable()
				fx.enqueue(fx.draft(r.SlotMergeable, "other key"))
				fx.mergeable()
				fx.enqueue(fx.draft(r.SlotMergeable, ""))
				fx.enqueue(fx.draft(r.SlotMergeable, ""))
				fx.enqueue(fx.draft(r.SlotExclusive, "k"))
				fx.mergeable()
				c := fx.claimAsAllowed(fx.s, l, worker, r.BoundaryTurn, 2)
				Expect(c.Batches).To(HaveLen(2), "at most max_batches")
				for range 10 {
					if fx.claimAsAllowed(fx.s, l, worker, r.BoundaryTurn, 10) == nil {
						break
					}
				}
				Expect(fx.pending()).To(BeEmpty(), "every batch was claimed")
			})
		It("delivers only interrupt batches at a step boundary, where a next_turn batch ends the prefix", Rules("runtime.claim_ready_queued_work.prefix_reading"), func() {
			l := fx.lease(worker)
			interrupt := func() r.QueuedWorkBatch {
				d := fx.draft(r.SlotMergeable, "k")
				d.DeliveryPolicy = r.DeliverInterrupt
				return fx.enqueue(d)
			}
			i1 := interrupt()
			n := fx.mergeable()
			i2 := interrupt()
			Expect(fx.claimed(fx.claimOn(fx.s, l, worker, r.BoundaryStep, 10))).To(Equal([]string{i1.BatchID}))
			Expect(fx.claimOn(fx.s, l, worker, r.BoundaryStep, 10)).To(BeNil(), "a next_turn batch first in line")
			// At a turn boundary both are deliverable: the next_turn batch
			// first, the interrupt one with it or in the next claim, as the
			// reading of the prefix rule has it.
			c := fx.claimAsAllowed(fx.s, l, worker, r.BoundaryTurn, 10)
			Expect(fx.claimed(c)[0]).To(Equal(n.BatchID))
			if len(c.Batches) == 1 {
				Expect(fx.claimed(fx.claimAsAllowed(fx.s, l, worker, r.BoundaryTurn, 10))).To(Equal([]string{i2.BatchID}))
			}
		})
		It("answers none when nothing is ready, and rejects an unknown boundary with invalid_argument",
			Rules("runtime.claim_ready_queued_work.prefix", "runtime.invalid_argument_at_any_point"), func() {
				l := fx.lease(worker)
				Expect(fx.claimWork(l, worker, 10)).To(BeNil())
				fx.mergeable()
				before := fx.state()
				_, err := fx.s.ClaimReadyQueuedWork(fx.ctx, rtSession, l.Fence(), worker, "sometime", claimTTL, 1)
				fx.refused(before, err, r.ErrInvalidArgument)
			})
		It("answers an unknown boundary with invalid_argument or what a check before it answers (max_batches 0, a lease that is not live)",
			Rules("runtime.invalid_argument_at_any_point"), func() {
				l := fx.lease(worker)
				fx.mergeable()
				before := fx.state()
				c, err := fx.s.ClaimReadyQueuedWork(fx.ctx, rtSession, l.Fence(), worker, "sometime", claimTTL, 0)
				if err == nil {
					Expect(c).To(BeNil(), allowed("runtime.invalid_argument_at_any_point", "invalid_argument or none"))
				} else {
					Expect(err).To(MatchError(r.ErrInvalidArgument), allowed("runtime.invalid_argument_at_any_point", "invalid_argument or none"))
				}
				Expect(fx.state()).To(Equal(before))
				forged := l.Fence()
				forged.LeaseToken = "forged"
				_, err = fx.s.ClaimReadyQueuedWork(fx.ctx, rtSession, forged, worker, "sometime", claimTTL, 1)
				fx.refusedAny(before, err, "runtime.invalid_argument_at_any_point", r.ErrInvalidArgument, r.ErrSessionExecutionLeaseExpired)
			})
	})

	Describe("renew_queued_work_claim", func() {
		It("extends a held claim to now + ttl", Rules("runtime.renew_queued_work_claim.changed"), func() {
			l := fx.lease(worker)
			fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			fx.advance(500)
			renewed, err := fx.s.RenewQueuedWorkClaim(fx.ctx, *c, claimTTL)
			Expect(err).NotTo(HaveOccurred())
			want := *c
			want.ExpiresAtMs = fx.now() + int64(claimTTL)
			Expect(renewed).To(Equal(want))
			fx.advance(claimTTL - 1)
			Expect(fx.claimWork(l, rival, 1)).To(BeNil(), "the renewed claim holds past its first expiry")
		})
		It("renews a claim that has expired but still holds its batches: it holds them again", Rules("runtime.renew_queued_work_claim.no_expiry_check"), func() {
			l := fx.lease(worker)
			b := fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			fx.advance(claimTTL + 5)
			renewed, err := fx.s.RenewQueuedWorkClaim(fx.ctx, *c, claimTTL)
			Expect(err).NotTo(HaveOccurred(), allowed("runtime.renew_queued_work_claim.no_expiry_check", "the claim, renewed: the seed's UPDATE has no expiry condition"))
			Expect(renewed.ExpiresAtMs).To(Equal(fx.now() + int64(claimTTL)))
			Expect(fx.claimWork(l, rival, 1)).To(BeNil(), "the renewed claim holds its batch again")
			Expect(fx.cancel(rtSession, b.BatchID)).To(BeNil())
			cm := fx.commitOf(l, "cp")
			cm.CompletedQueueClaims = []r.CompletedQueueClaim{renewed.Completed()}
			fx.commit(cm)
			Expect(fx.list(rtSession)).To(BeEmpty())
		})
		It("fails queued_work_claim_expired when no batch is held by its id and token (another token, abandoned, claimed again), changing nothing",
			Rules("runtime.renew_queued_work_claim.changed"), func() {
				l := fx.lease(worker)
				fx.mergeable()
				c := fx.claimWork(l, worker, 1)
				forged := *c
				forged.LeaseToken = "forged"
				before := fx.state()
				_, err := fx.s.RenewQueuedWorkClaim(fx.ctx, forged, 10*claimTTL)
				fx.refused(before, err, r.ErrQueuedWorkClaimExpired)
				fx.advance(claimTTL)
				again := fx.claimWork(l, rival, 1)
				Expect(again).NotTo(BeNil())
				before = fx.state()
				_, err = fx.s.RenewQueuedWorkClaim(fx.ctx, *c, claimTTL)
				fx.refused(before, err, r.ErrQueuedWorkClaimExpired)
				Expect(fx.s.AbandonQueuedWorkClaim(fx.ctx, *again)).To(Succeed())
				before = fx.state()
				_, err = fx.s.RenewQueuedWorkClaim(fx.ctx, *again, claimTTL)
				fx.refused(before, err, r.ErrQueuedWorkClaimExpired)
			})
		It("renews the batches it still holds when it holds only some of them, whichever it answers",
			Rules("runtime.renew_queued_work_claim.no_expiry_check", "runtime.renew_queued_work_claim.changed"), func() {
				l := fx.lease(worker)
				b1, b2 := fx.mergeable(), fx.mergeable()
				c := fx.claimWork(l, worker, 2)
				Expect(fx.claimed(c)).To(Equal([]string{b1.BatchID, b2.BatchID}))
				part := c.Completed()
				part.BatchIDs = []string{b1.BatchID}
				cm := fx.commitOf(l, "cp")
				cm.CompletedQueueClaims = []r.CompletedQueueClaim{part}
				fx.commit(cm)
				fx.advance(claimTTL - 1)
				renewed, err := fx.s.RenewQueuedWorkClaim(fx.ctx, *c, claimTTL)
				if err != nil {
					Expect(err).To(MatchError(r.ErrQueuedWorkClaimExpired), allowed("runtime.renew_queued_work_claim.changed", "the claim or queued_work_claim_expired"))
				} else {
					Expect(renewed.ExpiresAtMs).To(Equal(fx.now() + int64(claimTTL)))
				}
				fx.advance(claimTTL - 1)
				Expect(fx.pending()).To(BeEmpty(), allowed("runtime.renew_queued_work_claim.no_expiry_check", "the batch still held renewed, either way"))
			})
	})

	Describe("abandon_queued_work_claim", func() {
		It("frees the claim's batches: the next claimer takes them with their fence up by one", Rules("runtime.abandon_queued_work_claim.frees"), func() {
			l := fx.lease(worker)
			b1, b2 := fx.mergeable(), fx.mergeable()
			c := fx.claimWork(l, worker, 2)
			Expect(fx.s.AbandonQueuedWorkClaim(fx.ctx, *c)).To(Succeed())
			Expect(fx.batchIDs(fx.pending())).To(Equal([]string{b1.BatchID, b2.BatchID}))
			again := fx.claimWork(l, rival, 2)
			Expect(fx.claimed(again)).To(Equal([]string{b1.BatchID, b2.BatchID}))
			Expect(fx.list(rtSession)[0].ClaimFencingToken).To(Equal(b1.ClaimFencingToken+2), "two claims, two increments")
			fx.expectClaimFence(again)
		})
		It("changes nothing for a claim whose id or token does not match", Rules("runtime.abandon_queued_work_claim.frees"), func() {
			l := fx.lease(worker)
			fx.mergeable()
			c := fx.claimWork(l, worker, 1)
			before := fx.state()
			for _, m := range []func(*r.QueuedWorkClaim){
				func(x *r.QueuedWorkClaim) { x.LeaseToken = "forged" },
				func(x *r.QueuedWorkClaim) { x.ClaimID = "forged" },
			} {
				changed := *c
				m(&changed)
				Expect(fx.s.AbandonQueuedWorkClaim(fx.ctx, changed)).To(Succeed())
			}
			Expect(fx.state()).To(Equal(before))
			Expect(fx.claimWork(l, rival, 1)).To(BeNil())
		})
	})

	Describe("cancel_queued_work_batch", func() {
		It("removes an unclaimed batch and answers it", Rules("runtime.cancel_queued_work_batch.free_only"), func() {
			b := fx.mergeable()
			other := fx.mergeable()
			Expect(fx.cancel(rtSession, b.BatchID)).To(Equal(&b))
			Expect(fx.list(rtSession)).To(Equal([]r.QueuedWorkBatch{other}))
		})
		It("keeps a batch a live claim holds and answers none, until the claim's expiry", Rules("runtime.cancel_queued_work_batch.free_only", "runtime.expiry"), Bound("runtime.expiry#expiry", spec.Below, spec.At), func() {
			l := fx.lease(worker)
			b := fx.mergeable()
			fx.claimWork(l, worker, 1)
			before := fx.state()
			Expect(fx.cancel(rtSession, b.BatchID)).To(BeNil())
			Expect(fx.state()).To(Equal(before))
			fx.advance(claimTTL)
			gone := fx.cancel(rtSession, b.BatchID)
			Expect(gone).NotTo(BeNil())
			Expect(gone.BatchID).To(Equal(b.BatchID))
			Expect(fx.list(rtSession)).To(BeEmpty())
		})
		It("answers none for an unknown batch or another session's", Rules("runtime.cancel_queued_work_batch.free_only"), func() {
			b := fx.mergeable()
			Expect(fx.cancel(rtSession, "unknown")).To(BeNil())
			Expect(fx.cancel(rtOther, b.BatchID)).To(BeNil())
			Expect(fx.list(rtSession)).To(HaveLen(1))
		})
	})

	Describe("list_queued_work", func() {
		It("lists every batch of the session in enqueue order, claimed or delayed, and no other session's", Rules("runtime.list_queued_work.all", "runtime.list_queued_work.statements"), func() {
			l := fx.lease(worker)
			b1 := fx.mergeable()
			d := fx.draft(r.SlotMergeable, "k")
			d.AvailableAtMs = fx.now() + 10_000
			b2 := fx.enqueue(d)
			d.SessionID = rtOther
			fx.enqueue(d)
			fx.claimWork(l, worker, 1)
			Expect(fx.batchIDs(fx.list(rtSession))).To(Equal([]string{b1.BatchID, b2.BatchID}))
		})
	})

	Describe("list_pending_queued_work", func() {
		It("lists the unclaimed batches and those whose claim expired, delayed ones included, in enqueue order", Rules("runtime.list_pending_queued_work.free", "runtime.expiry"), func() {
			l := fx.lease(worker)
			b1 := fx.mergeable()
			fx.claimWork(l, worker, 1)
			d := fx.draft(r.SlotMergeable, "k")
			d.AvailableAtMs = fx.now() + 10_000
			b2 := fx.enqueue(d)
			b3 := fx.mergeable()
			Expect(fx.batchIDs(fx.pending())).To(Equal([]string{b2.BatchID, b3.BatchID}))
			fx.advance(claimTTL)
			Expect(fx.batchIDs(fx.pending())).To(Equal([]string{b1.BatchID, b2.BatchID, b3.BatchID}), "a claim whose expiry equals now has expired")
		})
	})
}
