package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// Two handles on one file, and opening a locked database.
func continuityOpenSpecs(fx *continuityFixture) {
	Describe("two handles on one database", func() {
		It("keep the fencing rules across handles, as two processes would", Rules("continuity.shared_files"), func() {
			need(fx.h.Capabilities.SharedFiles, spec.CapSharedFiles, "two handles on one file")
			t := fx.open(fx.path)
			fx.upsert(fx.rec(contID, contSession, 0, 0), 5)
			Expect(t.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSecond, 0, 0), 4)).To(MatchError(c.ErrStaleFencingToken))
			Expect(t.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSecond, 0, 0), 6)).To(Succeed())
			Expect(fx.resolved(contID).SessionID).To(Equal(contSecond), "the first handle sees the second's write")
			Expect(fx.s.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSession, 0, 0), 5)).To(MatchError(c.ErrStaleFencingToken))
		})
	})

	Describe("open", func() {
		It("waits for a database another connection holds write-locked, and gives up by its timeout_ms plus a slack of "+spec.LockedOpenSlack.String(), Rules("continuity.open_waits_for_lock"), func() {
			waitsForALockedDatabase(fx.h, fx.fresh, fx.h.Continuity, func(st c.Store) {
				Expect(st.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSession, 0, 0), 1)).To(Succeed())
			})
		})
	})

	Describe("power loss", func() {
		It("keeps every record, snapshot and fence it acknowledged through a power cut that loses everything it never synced", Rules("continuity.survives_power_loss"), func() {
			path, cut := powerCutFile(&fx.h, c.Contract)
			Expect(fx.s.Close()).To(Succeed())
			fx.s = fx.open(path)
			fx.upsert(fx.rec(contID, contSession, 0, 0), 15)
			fx.save(fx.write(contOther, contSecond, 0, 1, 3, "x"))
			before := fx.state()
			cut(fx.s.Close)
			fx.s = fx.open(path)
			Expect(fx.state()).To(Equal(before), c.Contract.Explain("continuity.survives_power_loss"))
			Expect(fx.maxFence()).To(Equal(c.FencingToken(15)), "the high-water mark survives the power cut")
		})
	})
}
