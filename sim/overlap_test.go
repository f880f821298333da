package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
)

// onePlace is a run as a store without shared_files gets it: one process,
// its clients' operations overlapping inside it (concurrent_requests), or
// not.
func onePlace(overlap bool) Params { return Params{Processes: 1, Overlap: overlap} }

// The check-then-write race between two callers of one process (the
// upsert's fence read in one transaction, its write in a second, in a store
// declared as the seed's: one process, serving its callers at once): with
// operations overlapping inside the one process, the first seed of the
// default sweep finds it, the failure shrinks to a few steps of two callers
// of process 0 that replay it byte for byte, and the correct reference
// passes the shrunk schedule; with one operation in flight at a time, no
// seed up to it finds it, and the result says races inside the process
// were not explored.
func TestOneProcessRaceIsReproducedWhenOperationsOverlap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bug := bugs.ContinuityOneProcessCheckOutsideTx
	backend := referenceBackend(bug)
	var found *Result
	for seed := DefaultSeeds.First; seed <= DefaultSeeds.First+4 && found == nil; seed++ {
		res, err := Explore(ctx, continuitySubject, backend, seed, onePlace(true), ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure != nil {
			found = &res
		}
	}
	if found == nil {
		t.Fatalf("no seed of the default sweep's first five found the race between two callers of one process")
	}
	if seed := found.Schedule.Seed; seed != DefaultSeeds.First {
		t.Errorf("the race took seed %d; the default sweep's first seed, %d, found it before", seed, DefaultSeeds.First)
	}
	res := *found
	seed := res.Schedule.Seed
	if res.Failure.Backend != nil {
		t.Fatalf("seed %d failed otherwise: %v", seed, res.Failure)
	}
	small, err := Shrink(ctx, continuitySubject, backend, res, ScratchDir(), 2000)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(small.Schedule.Steps); n > 12 || small.Failure.Signature() != res.Failure.Signature() || !small.Schedule.Overlap || small.Schedule.Processes != 1 {
		t.Fatalf("seed %d shrunk to %d steps, failing as %q:\n%s", seed, n, small.Failure.Signature(), small.InterleavingText(50))
	}
	columns, rows := small.Interleaving()
	callers := 0
	for _, c := range columns {
		if strings.HasPrefix(c, "p0.c") {
			callers++
		}
	}
	overlapped := false
	for _, row := range rows {
		for _, c := range row.Cells {
			overlapped = overlapped || c == "┊"
		}
	}
	if callers < 2 || !overlapped {
		t.Fatalf("seed %d: the shrunk failure shows no two callers of process 0 in flight together (columns %q):\n%s", seed, columns, small.InterleavingText(50))
	}
	// Saved and read back, the schedule replays the same trace.
	saved := savedAndRead(t, small.Schedule)
	if !saved.Overlap {
		t.Fatal("the saved schedule read back without its overlap")
	}
	for range 20 {
		again, err := Run(ctx, continuitySubject, backend, saved, ScratchDir())
		if err != nil || again.Failure == nil || again.Hash() != small.Hash() {
			t.Fatalf("a replay of the shrunk schedule did not fail the same way: %v %v", err, again.Failure)
		}
	}
	if ok, err := Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), small.Schedule, ScratchDir()); err != nil || ok.Failure != nil {
		t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
	}
	t.Logf("seed %d: %d steps shrunk to %d:\n%s", seed, len(res.Schedule.Steps), len(small.Schedule.Steps), small.InterleavingText(50))

	// One operation in flight at a time: the same seeds miss it, and say
	// what they did not explore.
	for s := int64(1); s <= seed; s++ {
		res, err := Explore(ctx, continuitySubject, backend, s, onePlace(false), ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure != nil {
			t.Fatalf("seed %d found the race with one operation in flight at a time: %v", s, res.Failure)
		}
		if !strings.Contains(strings.Join(res.Unexplored(), "\n"), "races inside the process were not explored") {
			t.Fatalf("seed %d: the result does not say races inside the process were not explored: %q", s, res.Unexplored())
		}
	}
}

// A whole seed's run with operations overlapping inside one process (the
// correct reference: no failure ends it early, so it keeps its faults,
// crashes and clock jumps), saved and read back, replays the same trace,
// every time.
func TestAnOverlappingRunReplaysItsTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	backend := referenceBackend(bugs.Bug{})
	res, err := Explore(ctx, continuitySubject, backend, DefaultSeeds.First, onePlace(true), ScratchDir())
	if err != nil || res.Failure != nil || res.Inconclusive {
		t.Fatalf("the reference's seed %d: %v %v", DefaultSeeds.First, err, res.Failure)
	}
	overlapped := false
	_, rows := res.Interleaving()
	for _, row := range rows {
		for _, c := range row.Cells {
			overlapped = overlapped || c == "┊"
		}
	}
	if !res.Schedule.Overlap || !overlapped {
		t.Fatalf("seed %d had no two operations in flight together on its process", DefaultSeeds.First)
	}
	saved := savedAndRead(t, res.Schedule)
	for range 5 {
		again, err := Run(ctx, continuitySubject, backend, saved, ScratchDir())
		if err != nil || again.Failure != nil || again.Hash() != res.Hash() {
			i := 0
			for i < min(len(res.Trace), len(again.Trace)) && res.Trace[i] == again.Trace[i] {
				i++
			}
			t.Fatalf("the replay parted from the run at trace line %d of %d (%v, %v)", i, len(res.Trace), err, again.Failure)
		}
	}
}
