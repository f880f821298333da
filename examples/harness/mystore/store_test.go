package mystore

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/storecheck/storecheck/conformance"
)

// Every write operation, run down its successful path (each call's context
// naming its operation, as the kit's does), reaches exactly the crash
// points CrashPoints declares: the simulator arms only what a
// harness declares, so a point missing from the list is never crashed at,
// and one listed that is never reached is a crash never explored.
func TestCrashPointsAreTheOnesReached(t *testing.T) {
	var mu sync.Mutex
	reached := map[string]bool{}
	conformance.SetCrashHook(func(p string) {
		mu.Lock()
		reached[p] = true
		mu.Unlock()
	})
	defer conformance.SetCrashHook(nil)
	bg := context.Background()
	op := func(name string) context.Context { return conformance.WithOperation(bg, name) }
	s, err := Open(bg, Options{Path: filepath.Join(t.TempDir(), "c.db")})
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
	rec := func(sess conformance.ContinuitySessionID, gen conformance.ContinuityGeneration) conformance.ContinuityRecord {
		return conformance.ContinuityRecord{Identity: "a", AgentRuntimeID: "rt", SessionID: sess, Generation: gen}
	}
	must(s.UpsertContinuityRecord(op("upsert_continuity_record"), rec("s1", 1), 1))
	must(s.SaveSessionSnapshot(op("save_session_snapshot"), conformance.ContinuitySnapshotWrite{Identity: "a", SessionID: "s1", Generation: 1, CheckpointVersion: 1, FencingToken: 1, Data: []byte("x")}))
	if ok, err := s.DeleteSessionSnapshotIfCurrentRevision(op("delete_session_snapshot_if_current_revision"), "s1", conformance.ContinuitySnapshotRevision([]byte("x"))); !ok || err != nil {
		t.Fatal(ok, err)
	}
	prev := rec("s1", 1)
	must(s.UpsertContinuityRecord(op("upsert_continuity_record"), rec("s2", 2), 2))
	must(s.RollbackContinuityRecord(op("rollback_continuity_record"), rec("s2", 2), &prev, 2))
	must(s.DeleteContinuityRecord(op("delete_continuity_record"), "a", 2))
	got := slices.Sorted(maps.Keys(reached))
	if want := slices.Sorted(slices.Values(CrashPoints)); !slices.Equal(got, want) {
		t.Errorf("reached %v\ndeclared %v", got, want)
	}
}
