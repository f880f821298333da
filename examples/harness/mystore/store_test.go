package mystore

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// Every write operation, run down its successful path, reaches exactly the
// crash points CrashPoints declares: the simulator arms only what a
// harness declares, so a point missing from the list is never crashed at,
// and one listed that is never reached is a crash never explored.
func TestCrashPointsAreTheOnesReached(t *testing.T) {
	var mu sync.Mutex
	reached := map[string]bool{}
	spec.SetCrashHook(func(p string) {
		mu.Lock()
		reached[p] = true
		mu.Unlock()
	})
	defer spec.SetCrashHook(nil)
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := func(sess c.SessionID, gen c.Generation) c.Record {
		return c.Record{Identity: "a", AgentRuntimeID: "rt", SessionID: sess, Generation: gen}
	}
	must(s.UpsertContinuityRecord(ctx, rec("s1", 1), 1))
	must(s.SaveSessionSnapshot(ctx, c.SnapshotWrite{Identity: "a", SessionID: "s1", Generation: 1, CheckpointVersion: 1, FencingToken: 1, Data: []byte("x")}))
	if ok, err := s.DeleteSessionSnapshotIfCurrentRevision(ctx, "s1", c.SnapshotRevision([]byte("x"))); !ok || err != nil {
		t.Fatal(ok, err)
	}
	prev := rec("s1", 1)
	must(s.UpsertContinuityRecord(ctx, rec("s2", 2), 2))
	must(s.RollbackContinuityRecord(ctx, rec("s2", 2), &prev, 2))
	must(s.DeleteContinuityRecord(ctx, "a", 2))
	got := slices.Sorted(maps.Keys(reached))
	if want := slices.Sorted(slices.Values(CrashPoints)); !slices.Equal(got, want) {
		t.Errorf("reached %v\ndeclared %v", got, want)
	}
}
