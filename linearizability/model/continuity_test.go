package model

import (
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
