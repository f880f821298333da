package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// Session snapshots: saved under their record, loaded, matched and
// deleted by revision.
func continuitySnapshotSpecs(fx *continuityFixture) {
	Describe("save_session_snapshot", func() {
		It("saves the snapshot and moves the record's checkpoint version and fence with it", Rules("continuity.save_session_snapshot.saves_and_advances"), Bound("continuity.save_session_snapshot.fence_not_lower#fence", spec.Above), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 1)
			fx.save(fx.write(contID, contSession, 0, 1, 3, "one"))
			Expect(fx.loaded(contSession)).To(equalBytes([]byte("one")))
			Expect(fx.resolved(contID).CheckpointVersion).To(Equal(c.CheckpointVersion(1)))
			Expect(fx.maxFence()).To(Equal(c.FencingToken(3)))
			fx.refused(fx.state(), fx.s.UpsertContinuityRecord(fx.ctx, fx.rec(contID, contSession, 0, 1), 2), c.ErrStaleFencingToken)
		})
		It("accepts the record's own fence", Rules("continuity.save_session_snapshot.fence_not_lower"), Bound("continuity.save_session_snapshot.fence_not_lower#fence", spec.At), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 4)
			fx.save(fx.write(contID, contSession, 0, 1, 4, "one"))
			Expect(fx.loaded(contSession)).To(equalBytes([]byte("one")))
		})
		It("rejects another session than the record's with not_found", Rules("continuity.save_session_snapshot.record_must_match"), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 1)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSecond, 0, 1, 1, "x")), c.ErrNotFound)
		})
		It("rejects another generation than the record's with not_found", Rules("continuity.save_session_snapshot.record_must_match"), func() {
			fx.upsert(fx.rec(contID, contSession, 1, 0), 1)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 0, 1, 1, "x")), c.ErrNotFound)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 2, 1, 1, "x")), c.ErrNotFound)
		})
		It("rejects a fence lower than the record's with stale_fencing_token", Rules("continuity.save_session_snapshot.fence_not_lower"), Bound("continuity.save_session_snapshot.fence_not_lower#fence", spec.Below), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 5)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 0, 1, 4, "x")), c.ErrStaleFencingToken)
		})
		It("rejects a checkpoint version not above the record's with stale_checkpoint_version", Rules("continuity.save_session_snapshot.version_must_advance"), Bound("continuity.save_session_snapshot.version_must_advance#version", spec.Below, spec.At, spec.Above), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 3), 1)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 0, 3, 1, "equal")), c.ErrStaleCheckpointVersion)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 0, 2, 1, "lower")), c.ErrStaleCheckpointVersion)
			fx.save(fx.write(contID, contSession, 0, 4, 1, "higher"))
		})
		It("rejects a snapshot row owned by another identity with corruption, keeping the old bytes", Rules("continuity.save_session_snapshot.snapshot_owner"), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 1)
			fx.save(fx.write(contID, contSession, 0, 1, 1, "first owner"))
			fx.upsert(fx.rec(contOther, contSession, 0, 0), 2)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contOther, contSession, 0, 1, 2, "second owner")), c.ErrCorruption)
			Expect(fx.loaded(contSession)).To(equalBytes([]byte("first owner")))
		})
		It("rejects a snapshot row owned by another generation of the identity with corruption, keeping the old bytes", Rules("continuity.save_session_snapshot.snapshot_owner"), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 1)
			fx.save(fx.write(contID, contSession, 0, 1, 1, "generation 0"))
			fx.upsert(fx.rec(contID, contSession, 1, 0), 2)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 1, 1, 2, "generation 1")), c.ErrCorruption)
			Expect(fx.loaded(contSession)).To(equalBytes([]byte("generation 0")))
			Expect(fx.resolved(contID).CheckpointVersion).To(Equal(c.CheckpointVersion(0)))
		})
		It("checks the record's session and generation, then the fence, then the version, then the snapshot's owner", Rules("continuity.save_session_snapshot.check_order"), func() {
			fx.upsert(fx.rec(contID, contSession, 1, 3), 5)
			fx.save(fx.write(contOther, contSession, 0, 1, 1, "owned by another identity"))
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 0, 2, 4, "x")), c.ErrNotFound)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 1, 2, 4, "x")), c.ErrStaleFencingToken)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 1, 3, 5, "x")), c.ErrStaleCheckpointVersion)
			fx.refused(fx.state(), fx.s.SaveSessionSnapshot(fx.ctx, fx.write(contID, contSession, 1, 4, 5, "x")), c.ErrCorruption)
		})
		It("saves the snapshot when the identity has no record, and creates none", Rules("continuity.save_session_snapshot.without_record"), func() {
			fx.save(fx.write(contID, contSession, 0, 1, 7, "restored first"))
			Expect(fx.loaded(contSession)).To(equalBytes([]byte("restored first")))
			Expect(fx.resolved(contID)).To(BeNil())
		})
		It("keeps each session's snapshot apart", Rules("continuity.load_session_snapshot.latest_bytes"), func() {
			fx.save(fx.write(contID, contSession, 0, 1, 1, "a"))
			fx.save(fx.write(contOther, contSecond, 0, 1, 1, "b"))
			Expect(fx.loaded(contSession)).To(equalBytes([]byte("a")))
			Expect(fx.loaded(contSecond)).To(equalBytes([]byte("b")))
		})
	})

	Describe("load_session_snapshot", func() {
		It("returns none for a session never saved", Rules("continuity.load_session_snapshot.latest_bytes"), func() {
			Expect(fx.loaded(contSession)).To(BeNil())
		})
		It("returns the bytes of the latest save, exactly", Rules("continuity.load_session_snapshot.latest_bytes"), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 1)
			fx.save(fx.write(contID, contSession, 0, 1, 1, "first"))
			fx.save(fx.write(contID, contSession, 0, 2, 1, "\x00second\xff"))
			Expect(fx.loaded(contSession)).To(equalBytes([]byte("\x00second\xff")))
		})
		It("returns an empty snapshot as empty bytes, not as none", Rules("continuity.load_session_snapshot.empty_is_bytes"), func() {
			fx.save(fx.write(contID, contSession, 0, 1, 1, ""))
			Expect(fx.loaded(contSession)).To(equalBytes([]byte{}))
		})
	})

	Describe("session_snapshot_matches_current", func() {
		var cand c.MatchCandidate
		matches := func(m c.MatchCandidate) bool {
			GinkgoHelper()
			ok, err := fx.s.SessionSnapshotMatchesCurrent(fx.ctx, m)
			Expect(err).NotTo(HaveOccurred())
			return ok
		}
		BeforeEach(func() {
			fx.upsert(fx.rec(contID, contSession, 0, 0), 1)
			cand = fx.write(contID, contSession, 0, 1, 1, "bytes")
			fx.save(cand)
		})
		It("is true for the whole provenance tuple, the bytes and the record's current fence", Rules("continuity.session_snapshot_matches_current.whole_tuple"), Bound("continuity.session_snapshot_matches_current.row_fence_is_provenance#row_fence", spec.At), func() {
			Expect(matches(cand)).To(BeTrue())
		})
		It("is false when any part of the tuple or the bytes differ", Rules("continuity.session_snapshot_matches_current.whole_tuple"), func() {
			for _, m := range []func(*c.MatchCandidate){
				func(m *c.MatchCandidate) { m.Identity = contOther },
				func(m *c.MatchCandidate) { m.SessionID = contSecond },
				func(m *c.MatchCandidate) { m.Generation = 1 },
				func(m *c.MatchCandidate) { m.CheckpointVersion = 2 },
				func(m *c.MatchCandidate) { m.Data = []byte("other bytes") },
				func(m *c.MatchCandidate) { m.FencingToken = 2 },
			} {
				changed := cand
				m(&changed)
				Expect(matches(changed)).To(BeFalse(), "candidate %+v", changed)
			}
		})
		It("is false for a stale fence once the record's fence moved, and true for the new one", Rules("continuity.session_snapshot_matches_current.row_fence_is_provenance"), Bound("continuity.session_snapshot_matches_current.row_fence_is_provenance#row_fence", spec.Below), func() {
			fx.upsert(fx.rec(contID, contSession, 0, 1), 2)
			Expect(matches(cand)).To(BeFalse())
			cand.FencingToken = 2
			Expect(matches(cand)).To(BeTrue(), "the snapshot's own fence is provenance and may precede the current one")
		})
		It("is false when the snapshot's fence is above the record's", Rules("continuity.session_snapshot_matches_current.row_fence_is_provenance"), Bound("continuity.session_snapshot_matches_current.row_fence_is_provenance#row_fence", spec.Above), func() {
			fx.save(fx.write(contOther, contSecond, 0, 1, 7, "ahead"))
			fx.upsert(fx.rec(contOther, contSecond, 0, 1), 3)
			Expect(matches(fx.write(contOther, contSecond, 0, 1, 3, "ahead"))).To(BeFalse())
			Expect(matches(fx.write(contOther, contSecond, 0, 1, 7, "ahead"))).To(BeFalse())
		})
		It("is false when the record moved to another checkpoint version", Rules("continuity.session_snapshot_matches_current.whole_tuple"), func() {
			fx.save(fx.write(contID, contSession, 0, 2, 1, "bytes"))
			Expect(matches(cand)).To(BeFalse())
		})
		It("is false for a snapshot with no record", Rules("continuity.session_snapshot_matches_current.whole_tuple"), func() {
			fx.save(fx.write(contOther, contSecond, 0, 1, 1, "orphan"))
			Expect(matches(fx.write(contOther, contSecond, 0, 1, 1, "orphan"))).To(BeFalse())
		})
	})

	Describe("delete_session_snapshot_if_current_revision", func() {
		opaque := func() bool { return fx.h.Capabilities.SnapshotRevision == "opaque" }
		BeforeEach(func() { fx.save(fx.write(contID, contSession, 0, 1, 1, "current")) })
		It("deletes when the revision is the lowercase hex SHA-256 of the stored bytes, and says so", Rules("continuity.delete_session_snapshot_if_current_revision.revision"), func() {
			need(!opaque(), spec.CapSnapshotRevision+` "sha256"`, "deleting at the current revision (the backend declares \"opaque\" revisions, which the kit cannot compute)")
			ok, err := fx.s.DeleteSessionSnapshotIfCurrentRevision(fx.ctx, contSession, c.SnapshotRevision([]byte("current")))
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(fx.loaded(contSession)).To(BeNil())
		})
		It("keeps the snapshot and answers false for any other revision", Rules("continuity.delete_session_snapshot_if_current_revision.other_revision_keeps"), func() {
			before := fx.state()
			revisions := []string{c.SnapshotRevision([]byte("stale")), "", "CURRENT"}
			if opaque() {
				revisions = []string{"", "storecheck: a revision no backend computes"}
			}
			for _, rev := range revisions {
				ok, err := fx.s.DeleteSessionSnapshotIfCurrentRevision(fx.ctx, contSession, rev)
				if opaque() && err != nil {
					// continuity.delete_session_snapshot_if_current_revision.revision:
					// a backend that cannot read the snapshot as a session
					// answers io, as the seed does.
					Expect(err).To(MatchError(c.ErrIO), "revision %q", rev)
					continue
				}
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeFalse(), "revision %q", rev)
			}
			Expect(fx.state()).To(Equal(before))
		})
		It("answers false when the session has no snapshot", Rules("continuity.delete_session_snapshot_if_current_revision.missing_is_false"), func() {
			ok, err := fx.s.DeleteSessionSnapshotIfCurrentRevision(fx.ctx, contSecond, c.SnapshotRevision([]byte("current")))
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse())
		})
	})
}
