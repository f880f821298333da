package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	c "github.com/storecheck/storecheck/spec/continuity"
)

// The ids of the continuity specs, cont-prefixed where the runtime specs
// name a session too.
const (
	contID      c.Identity  = "triage:main"
	contOther   c.Identity  = "triage:other"
	contSession c.SessionID = "session-a"
	contSecond  c.SessionID = "session-b"
)

// continuityFixture is what the store's specs share: the harness, the spec's
// fresh clock and path, its open store, and the helpers as methods.
type continuityFixture struct {
	h Harness
	*fresh
	s c.Store
}

// The continuity contract's rules, one Describe per operation (see
// spec/continuity for the rules as the contract states them), grouped in
// continuity_*.go.
func continuitySpecs(h Harness) {
	fx := &continuityFixture{h: h}

	BeforeEach(func() {
		if fx.h.Continuity == nil {
			Skip("backend does not implement the continuity store")
		}
		fx.fresh = newFresh(fx.h, "continuity.db")
		fx.s = fx.open(fx.path)
	})

	continuityRecordSpecs(fx)
	continuitySnapshotSpecs(fx)
	continuityOpenSpecs(fx)
}

// open opens a store on path and closes it when the spec ends.
func (fx *continuityFixture) open(path string) c.Store {
	GinkgoHelper()
	return openForSpec(fx.fresh, fx.h.Continuity, path, "continuity", func(st c.Store, once *closeOnce) c.Store {
		return continuityHandle{st, once}
	})
}

func (fx *continuityFixture) rec(identity c.Identity, sess c.SessionID, gen c.Generation, version c.CheckpointVersion) c.Record {
	return c.Record{Identity: identity, AgentRuntimeID: "rt-1", SessionID: sess, Generation: gen, CheckpointVersion: version}
}

func (fx *continuityFixture) upsert(r c.Record, fence c.FencingToken) {
	GinkgoHelper()
	Expect(fx.s.UpsertContinuityRecord(fx.ctx, r, fence)).To(Succeed(), "upsert_continuity_record %+v fence %d", r, fence)
}

func (fx *continuityFixture) write(identity c.Identity, sess c.SessionID, gen c.Generation, version c.CheckpointVersion, fence c.FencingToken, data string) c.SnapshotWrite {
	return c.SnapshotWrite{Identity: identity, SessionID: sess, Generation: gen, CheckpointVersion: version, FencingToken: fence, Data: []byte(data)}
}

func (fx *continuityFixture) save(w c.SnapshotWrite) {
	GinkgoHelper()
	Expect(fx.s.SaveSessionSnapshot(fx.ctx, w)).To(Succeed(), "save_session_snapshot %+v", w)
}

// resolved is the identity's record, or nil when it is uninitialized.
func (fx *continuityFixture) resolved(identity c.Identity) *c.Record {
	GinkgoHelper()
	m, err := fx.s.ResolveMany(fx.ctx, []c.Identity{identity})
	Expect(err).NotTo(HaveOccurred())
	Expect(m).To(HaveKey(identity))
	if m[identity].State == c.Uninitialized {
		Expect(m[identity].Record).To(BeNil(), "an uninitialized identity has no record")
		return nil
	}
	Expect(m[identity].State).To(Equal(c.Ready))
	Expect(m[identity].Record).NotTo(BeNil(), "a ready identity has its record")
	return m[identity].Record
}

// loaded is the session's snapshot bytes, or nil when there is none.
func (fx *continuityFixture) loaded(sess c.SessionID) []byte {
	GinkgoHelper()
	snap, err := fx.s.LoadSessionSnapshot(fx.ctx, sess)
	Expect(err).NotTo(HaveOccurred())
	if snap == nil {
		return nil
	}
	if snap.Data == nil {
		return []byte{}
	}
	return snap.Data
}

func (fx *continuityFixture) maxFence() c.FencingToken {
	GinkgoHelper()
	m, err := fx.s.MaxFencingToken(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return m
}

// continuityObserved is everything the specs can observe about two
// identities and two sessions, to show that a failed operation changed
// nothing.
type continuityObserved struct {
	Records   []*c.Record
	Snapshots [][]byte
	MaxFence  c.FencingToken
}

func (fx *continuityFixture) state() continuityObserved {
	GinkgoHelper()
	return continuityObserved{
		Records:   []*c.Record{fx.resolved(contID), fx.resolved(contOther)},
		Snapshots: [][]byte{fx.loaded(contSession), fx.loaded(contSecond)},
		MaxFence:  fx.maxFence(),
	}
}

// refused checks that err has the kind and that nothing changed.
func (fx *continuityFixture) refused(before continuityObserved, err error, kind error) {
	GinkgoHelper()
	refusedUnchanged(fx.state, before, err, kind)
}

// continuityHandle is a continuity store whose Close the spec and the cleanup share.
type continuityHandle struct {
	c.Store
	once *closeOnce
}

func (s continuityHandle) Close() error { return s.once.Close() }
