package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cont "github.com/storecheck/storecheck/spec/continuity"
)

// Two handles on one file, and opening a locked database.
func continuityOpenSpecs(fx *continuityFixture) {
	Describe("two handles on one database", func() {
		It("keep the fencing rules across handles, as two processes would", Rules("continuity.shared_files"), func() {
			need(fx.h.Capabilities.SharedFiles, spec.CapSharedFiles, "two handles on one file")
			t := fx.open(fx.path)
			fx.upsert(fx.rec(contID, contSession, 0, 0), 5)
			Expect(t.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSecond, 0, 0), 4)).To(MatchError(cont.ErrStaleFencingToken))
			Expect(t.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSecond, 0, 0), 6)).To(Succeed())
			Expect(fx.resolved(contID).SessionID).To(Equal(contSecond), "the first handle sees the second's write")
			Expect(fx.s.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSession, 0, 0), 5)).To(MatchError(cont.ErrStaleFencingToken))
		})
	})

	Describe("open", func() {
		It("waits for a database another connection holds write-locked, and gives up by its timeout_ms plus a slack of "+spec.LockedOpenSlack.String(), Rules("continuity.open_waits_for_lock"), func() {
			waitsForALockedDatabase(fx.h, fx.fresh, fx.h.Continuity, func(st cont.Store) {
				Expect(st.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSession, 0, 0), 1)).To(Succeed())
			})
		})
	})
}
