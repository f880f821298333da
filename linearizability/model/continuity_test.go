package model

import (
	"math/rand/v2"
	"testing"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// A backend that declares its own snapshot revisions (snapshot_revision
// "opaque") may answer a delete at a revision the kit cannot compute false,
// io or true (and then the snapshot is gone); one that declares none is held
// to the SHA-256 of the bytes.
func TestContinuitySnapshotRevisionIsTheBackendsDeclaredChoice(t *testing.T) {
	save := c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: "a", SessionID: "s", CheckpointVersion: 1, FencingToken: 1, Data: []byte("x")}}
	del := c.DeleteSessionSnapshotIfCurrentRevision{SessionID: "s", ExpectedRevision: "rev-of-the-backend"}
	for _, tc := range []struct {
		caps  spec.Capabilities
		got   Outcome
		allow bool
	}{
		{spec.Capabilities{}, OK(false), true},
		{spec.Capabilities{}, OK(true), false},
		{spec.Capabilities{}, Fail(c.ErrIO), false},
		{spec.Capabilities{SnapshotRevision: "opaque"}, OK(false), true},
		{spec.Capabilities{SnapshotRevision: "opaque"}, OK(true), true},
		{spec.Capabilities{SnapshotRevision: "opaque"}, Fail(c.ErrIO), true},
		{spec.Capabilities{SnapshotRevision: "opaque"}, Fail(c.ErrNotFound), false},
	} {
		m := For(Continuity{}, tc.caps)
		s, _ := Expect(m, m.Init(), save, 0)
		next, _ := Judge(m, s, del, 0, tc.got)
		if (next != nil) != tc.allow {
			t.Errorf("%+v answering %s: allowed %v, want %v", tc.caps, tc.got, next != nil, tc.allow)
		}
		if tc.got.Result == true && next != nil {
			if _, out := Expect(m, next[0], c.LoadSessionSnapshot{SessionID: "s"}, 0); out.Result.(*c.Snapshot) != nil {
				t.Errorf("a delete that answered true left the snapshot")
			}
		}
	}
}

// A continuity state keeps its hash up as it is made from the one before
// (porcupine asks for it at every step); it must stay the hash of what the
// state holds, whatever path led there, or the checker would miss states
// it has seen (slow) or merge states that differ (wrong).
func TestContinuityStateHashIsTheHashOfItsEntries(t *testing.T) {
	rehash := func(s ContinuityState) uint64 {
		var h uint64
		for id, r := range s.records {
			h ^= recordHash(id, r)
		}
		for sess, sn := range s.snaps {
			h ^= snapHash(sess, sn)
		}
		return h
	}
	ids := []c.Identity{"a", "b", "c"}
	sessions := []c.SessionID{"s0", "s1", "s2"}
	rng := rand.New(rand.NewPCG(1, 2))
	m := Continuity{}
	s := m.Init()
	seen := map[uint64]bool{}
	for i := range 5000 {
		id, sess := ids[rng.IntN(len(ids))], sessions[rng.IntN(len(sessions))]
		gen, ver, fence := c.Generation(rng.IntN(3)), c.CheckpointVersion(rng.IntN(3)), c.FencingToken(rng.IntN(4))
		rec := c.Record{Identity: id, AgentRuntimeID: "rt", SessionID: sess, Generation: gen, CheckpointVersion: ver}
		var op spec.Op
		switch rng.IntN(5) {
		case 0, 1:
			op = c.UpsertContinuityRecord{Record: rec, Fence: fence}
		case 2:
			op = c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: id, SessionID: sess, Generation: gen, CheckpointVersion: ver, FencingToken: fence, Data: []byte{byte('x' + rng.IntN(2))}}}
		case 3:
			op = c.RollbackContinuityRecord{Attempt: rec, Fence: fence}
		default:
			op = c.DeleteContinuityRecord{Identity: id, Fence: fence}
		}
		s, _ = Expect(m, s, op, 0)
		cs := s.(ContinuityState)
		if got, want := cs.Hash(), rehash(cs); got != want {
			t.Fatalf("step %d (%s): hash %x, the entries' %x", i, op.Name(), got, want)
		}
		seen[cs.Hash()] = true
	}
	if len(seen) < 50 {
		t.Fatalf("the walk reached %d states only: it cannot show the hash kept up", len(seen))
	}
}
