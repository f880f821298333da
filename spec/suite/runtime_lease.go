package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The session execution lease: claimed, renewed and released.
func runtimeLeaseSpecs(fx *runtimeFixture) {
	Describe("try_claim_session_execution_lease", func() {
		It("grants a lease with fencing token 1, claimed at now and expiring at now + ttl, when the session never had one", Rules("runtime.try_claim_session_execution_lease.grant"), func() {
			l := fx.lease(worker)
			Expect(l.LeaseToken).NotTo(BeEmpty())
			Expect(*l).To(Equal(r.SessionExecutionLease{SessionID: rtSession, OwnerID: worker, LeaseToken: l.LeaseToken,
				FencingToken: 1, ClaimedAtMs: fx.now(), ExpiresAtMs: fx.now() + int64(leaseTTL)}))
		})
		It("extends a live lease of the same owner to now + ttl, keeping its token, fencing token and claim time", Rules("runtime.try_claim_session_execution_lease.extend_own"), func() {
			l := fx.lease(worker)
			fx.advance(400)
			again := fx.lease(worker)
			want := *l
			want.ExpiresAtMs = fx.now() + int64(leaseTTL)
			Expect(*again).To(Equal(want))
			fx.advance(leaseTTL - 1)
			Expect(fx.tryClaim(rival)).To(BeNil(), "the extended lease is live past the first expiry")
		})
		It("answers no lease to another owner while the lease is live, up to 1ms before its expiry, and changes nothing", Rules("runtime.try_claim_session_execution_lease.other_owner", "runtime.expiry"), Bound("runtime.expiry#expiry", spec.Below), func() {
			l := fx.lease(worker)
			Expect(fx.tryClaim(rival)).To(BeNil())
			fx.advance(leaseTTL - 1)
			Expect(fx.tryClaim(rival)).To(BeNil())
			fx.commit(fx.commitOf(l, "cp"))
		})
		It("treats a lease whose expiry equals now as not live: another owner wins it with the next fencing token", Rules("runtime.expiry", "runtime.try_claim_session_execution_lease.grant"), Bound("runtime.expiry#expiry", spec.At), Bound("runtime.try_claim_session_execution_lease.grant#step", spec.Above), func() {
			l := fx.lease(worker)
			fx.advance(leaseTTL)
			won := fx.tryClaim(rival)
			Expect(won).NotTo(BeNil(), "a lease whose expiry equals now has expired")
			Expect(won.FencingToken).To(Equal(uint64(2)))
			Expect(won.LeaseToken).NotTo(Equal(l.LeaseToken))
			fx.refusedCommit(fx.commitOf(l, "cp"), r.ErrSessionExecutionLeaseExpired)
		})
		It("grants the same owner a new lease after expiry: a new token, the next fencing token, claimed at now", Rules("runtime.try_claim_session_execution_lease.grant"), Bound("runtime.try_claim_session_execution_lease.grant#step", spec.Above), func() {
			l := fx.lease(worker)
			fx.advance(leaseTTL + 1)
			again := fx.lease(worker)
			Expect(again.FencingToken).To(Equal(uint64(2)))
			Expect(again.LeaseToken).NotTo(Equal(l.LeaseToken))
			Expect(again.ClaimedAtMs).To(Equal(fx.now()))
			_, err := fx.s.RenewSessionExecutionLease(fx.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "the old fence lost its authority")
		})
		It("keeps counting fencing tokens across releases", Rules("runtime.try_claim_session_execution_lease.fence_survives_release"), Bound("runtime.try_claim_session_execution_lease.grant#step", spec.Above), func() {
			l := fx.lease(worker)
			Expect(fx.s.ReleaseSessionExecutionLease(fx.ctx, l.Fence())).To(Succeed())
			l2 := fx.lease(rival)
			Expect(l2.FencingToken).To(Equal(uint64(2)))
			Expect(fx.s.ReleaseSessionExecutionLease(fx.ctx, l2.Fence())).To(Succeed())
			Expect(fx.lease(worker).FencingToken).To(Equal(uint64(3)))
		})
		It("gives a granted lease the token <session>:<owner>:<now>:<fencing token>", Rules("runtime.try_claim_session_execution_lease.token_format"), func() {
			fx.advance(7)
			l := fx.lease(worker)
			Expect(l.LeaseToken).To(Equal(r.LeaseToken(rtSession, worker, fx.now(), l.FencingToken)))
		})
		It("keeps each session's lease apart", Rules("runtime.try_claim_session_execution_lease.per_session"), func() {
			fx.lease(worker)
			l := fx.tryClaimOn(fx.s, rtOther, rival)
			Expect(l).NotTo(BeNil())
			Expect(l.FencingToken).To(Equal(uint64(1)))
		})
	})

	Describe("renew_session_execution_lease", func() {
		It("extends the live lease to now + ttl, keeping its token, fencing token and claim time", Rules("runtime.renew_session_execution_lease.extends"), func() {
			l := fx.lease(worker)
			fx.advance(500)
			renewed, err := fx.s.RenewSessionExecutionLease(fx.ctx, l.Fence(), leaseTTL)
			Expect(err).NotTo(HaveOccurred())
			want := *l
			want.ExpiresAtMs = fx.now() + int64(leaseTTL)
			Expect(renewed).To(Equal(want))
			fx.advance(leaseTTL - 1)
			Expect(fx.tryClaim(rival)).To(BeNil(), "the renewed lease is live past the first expiry")
		})
		It("renews 1ms before expiry, and fails session_execution_lease_expired exactly at expiry and after", Rules("runtime.renew_session_execution_lease.live_match", "runtime.expiry"), Bound("runtime.expiry#expiry", spec.Below, spec.At, spec.Above), func() {
			l := fx.lease(worker)
			fx.advance(leaseTTL - 1)
			_, err := fx.s.RenewSessionExecutionLease(fx.ctx, l.Fence(), leaseTTL)
			Expect(err).NotTo(HaveOccurred())
			fx.advance(leaseTTL)
			_, err = fx.s.RenewSessionExecutionLease(fx.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "at expiry")
			fx.advance(1)
			_, err = fx.s.RenewSessionExecutionLease(fx.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), "after expiry")
			Expect(fx.tryClaim(rival)).NotTo(BeNil(), "a failed renew extended nothing")
		})
		It("fails session_execution_lease_expired when the owner, token, fencing token or session differ, changing nothing", Rules("runtime.renew_session_execution_lease.live_match"), func() {
			l := fx.lease(worker)
			for what, fence := range fx.fenceVariants(l) {
				_, err := fx.s.RenewSessionExecutionLease(fx.ctx, fence, 10*leaseTTL)
				Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired), what)
			}
			fx.advance(leaseTTL)
			Expect(fx.tryClaim(rival)).NotTo(BeNil(), "the lease still expired at its first expiry")
		})
		It("fails session_execution_lease_expired for a released lease and for a session that never had one", Rules("runtime.renew_session_execution_lease.live_match"), func() {
			l := fx.lease(worker)
			Expect(fx.s.ReleaseSessionExecutionLease(fx.ctx, l.Fence())).To(Succeed())
			_, err := fx.s.RenewSessionExecutionLease(fx.ctx, l.Fence(), leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired))
			_, err = fx.s.RenewSessionExecutionLease(fx.ctx, r.SessionExecutionLeaseFence{SessionID: rtOther, OwnerID: worker, LeaseToken: "t", FencingToken: 1}, leaseTTL)
			Expect(err).To(MatchError(r.ErrSessionExecutionLeaseExpired))
		})
	})

	Describe("release_session_execution_lease", func() {
		It("clears the lease when owner, token and fencing token match: another owner wins it at once", Rules("runtime.release_session_execution_lease.match"), func() {
			l := fx.lease(worker)
			Expect(fx.s.ReleaseSessionExecutionLease(fx.ctx, l.Fence())).To(Succeed())
			won := fx.tryClaim(rival)
			Expect(won).NotTo(BeNil())
			Expect(won.FencingToken).To(Equal(uint64(2)))
			fx.refusedCommit(fx.commitOf(l, "cp"), r.ErrSessionExecutionLeaseExpired)
		})
		It("changes nothing when the owner, token, fencing token or session differ", Rules("runtime.release_session_execution_lease.match"), func() {
			l := fx.lease(worker)
			for what, fence := range fx.fenceVariants(l) {
				Expect(fx.s.ReleaseSessionExecutionLease(fx.ctx, fence)).To(Succeed(), what)
				Expect(fx.tryClaim(rival)).To(BeNil(), "after a release with %s", what)
			}
			fx.commit(fx.commitOf(l, "cp"))
		})
	})
}
