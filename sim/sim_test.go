package sim

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

var continuitySubject = Subject{
	Model:       model.Continuity{},
	NewWorkload: linearizability.DefaultContinuityWorkload.New,
	RareEvents:  append(slices.Clone(model.ContinuityEvents), EventCrashInside, EventAnswerLost, EventKill, EventPowerCut),
	Rival:       linearizability.ContinuityRival,
}

func referenceBackend(b bugs.Bug) Launcher {
	return InProcess(stores.Backend(stores.Options{Bug: b}), "continuity")
}

// The same seed gives the same trace, byte for byte, and the schedule it
// records replays to that same trace.
func TestSameSeedSameTrace(t *testing.T) {
	t.Parallel() // one seed at a time: it overlaps the sweeps
	ctx := context.Background()
	for seed := range int64(30) {
		a, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		b, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if a.Hash() != b.Hash() || a.Ops < 200 {
			t.Fatalf("seed %d: two runs, two traces (%d and %d lines, %d operations)", seed, len(a.Trace), len(b.Trace), a.Ops)
		}
		c, err := Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), a.Schedule, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if c.Hash() != a.Hash() {
			t.Fatalf("seed %d: the recorded schedule replays to another trace", seed)
		}
		if !a.Yielded {
			t.Fatalf("seed %d: the reference reached no yield point", seed)
		}
	}
}

// Over the default sweep (power cuts on, as storecheck sim has them) the
// reference is never flagged, and the runs reach every rare event the
// store names. Where FUSE is missing, the power cut is the one event the
// sweep may miss, and only with the reason.
func TestDefaultSweepCoversTheRareEventsAndNeverFlagsTheReference(t *testing.T) {
	cov := Coverage{}
	noPower := ""
	err := Sweep(context.Background(), continuitySubject, referenceBackend(bugs.Bug{}), DefaultSeeds.Seeds(Shard{}), Params{PowerCuts: true}, 0, ScratchDir(),
		func(r Result) {
			if r.NoPowerCuts != "" {
				noPower = r.NoPowerCuts
			}
			if r.Failure != nil {
				t.Errorf("seed %d: the reference was flagged: %v\n%s", r.Schedule.Seed, r.Failure, strings.Join(r.Trace, "\n"))
			}
			if r.Inconclusive {
				t.Errorf("seed %d: inconclusive", r.Schedule.Seed)
			}
			cov.Add(r)
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := continuitySubject.RareEvents
	var faults []string
	for _, k := range fault.Kinds() {
		if k.Draw != nil { // a kind no seed draws (sync_cut) is named by the exhaustive mode only
			faults = append(faults, "fault "+k.Name)
		}
	}
	if noPower != "" {
		t.Logf("power loss not explored: %s", noPower)
		want = slices.DeleteFunc(slices.Clone(want), func(e string) bool { return e == EventPowerCut })
		faults = slices.DeleteFunc(faults, func(f string) bool { return f == "fault power_cut" })
	}
	if missing := cov.Missing(want); len(missing) > 0 {
		t.Fatalf("the default sweep never reached: %s", strings.Join(missing, "; "))
	}
	// Every fault package fault defines is drawn by some seed.
	if missing := cov.Missing(faults); len(missing) > 0 {
		t.Fatalf("the default sweep never drew: %s", strings.Join(missing, "; "))
	}
}

// A write-behind cache that acknowledges upserts before they are durable:
// with one process only a crash shows it; the default sweep finds it and
// shrinks the failure to a few steps that still fail the same way.
func TestWriteBehindIsFoundByACrashAndShrunk(t *testing.T) {
	ctx := context.Background()
	backend := referenceBackend(bugs.ContinuityWriteBehind)
	for _, seed := range DefaultSeeds.Seeds(Shard{}) {
		res, err := Explore(ctx, continuitySubject, backend, seed, Params{Processes: 1}, ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure == nil {
			continue
		}
		small, err := Shrink(ctx, continuitySubject, backend, res, ScratchDir(), 2000)
		if err != nil {
			t.Fatal(err)
		}
		if small.Failure.Signature() != res.Failure.Signature() {
			t.Fatalf("shrinking changed the failure: %v became %v", res.Failure, small.Failure)
		}
		if len(small.Schedule.Steps) > 20 {
			t.Fatalf("seed %d shrunk to %d steps only:\n%s", seed, len(small.Schedule.Steps), strings.Join(small.Trace, "\n"))
		}
		crashed := false
		for _, st := range small.Schedule.Steps {
			if st.Kind == StepFault {
				switch st.Fault.(type) {
				case fault.Kill, fault.CrashAt:
					crashed = true
				}
			}
		}
		if !crashed {
			t.Fatalf("with one process the failure needs a crash:\n%s", strings.Join(small.Trace, "\n"))
		}
		// The correct reference passes the same small schedule.
		ok, err := Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), small.Schedule, ScratchDir())
		if err != nil || ok.Failure != nil {
			t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
		}
		t.Logf("seed %d: %d steps shrunk to %d:\n%s\n%v", seed, len(res.Schedule.Steps), len(small.Schedule.Steps), strings.Join(small.Trace, "\n"), small.Failure)
		return
	}
	t.Fatal("the default sweep never found the write-behind bug")
}

func TestSchedulesRoundTrip(t *testing.T) {
	ctx := context.Background()
	a, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), 7, Params{Steps: 50}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	back := savedAndRead(t, a.Schedule)
	b, _ := Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), back, t.TempDir())
	if a.Hash() != b.Hash() {
		t.Fatal("a saved schedule replays differently")
	}
}

func TestSeedsAndShards(t *testing.T) {
	r, err := ParseSeeds("3..9")
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for i := 1; i <= 3; i++ {
		all = append(all, r.Seeds(Shard{i, 3})...)
	}
	if len(all) != 7 {
		t.Fatalf("3 shards of 3..9 hold %v", all)
	}
	seen := map[int64]bool{}
	for _, s := range all {
		if seen[s] || s < 3 || s > 9 {
			t.Fatalf("shards overlap or stray: %v", all)
		}
		seen[s] = true
	}
	for _, bad := range []string{"x", "9..3", "1..y"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("seeds %q accepted", bad)
		}
	}
	for _, bad := range []string{"0/3", "4/3", "1", "a/b"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("shard %q accepted", bad)
		}
	}
}

// The racy continuity bugs (the upsert's check read outside its write
// transaction; an in-process lock instead of a transaction, which orders
// one handle's upserts and no other's) are found from one seed within the
// default sweep, in process: the seed's scheduler pauses one upsert between
// its read and its write while another's commits. Each failure shrinks to a
// few steps, replays the same way every time, and the correct reference
// passes the shrunk schedule.
func TestRacyBugsAreReproducedFromOneSeed(t *testing.T) {
	ctx := context.Background()
	for _, bug := range []bugs.Bug{bugs.ContinuityUpsertCheckOutsideTx, bugs.ContinuityProcessLock} {
		t.Run(bug.Name(), func(t *testing.T) {
			backend := referenceBackend(bug)
			for _, seed := range DefaultSeeds.Seeds(Shard{}) {
				res, err := Explore(ctx, continuitySubject, backend, seed, Params{}, ScratchDir())
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure == nil {
					continue
				}
				small, err := Shrink(ctx, continuitySubject, backend, res, ScratchDir(), 2000)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(small.Schedule.Steps); n > 12 || small.Failure.Signature() != res.Failure.Signature() {
					t.Fatalf("seed %d shrunk to %d steps, failing as %q:\n%s", seed, n, small.Failure.Signature(), small.InterleavingText(50))
				}
				overlapped := false
				for _, row := range func() []Row { _, rows := small.Interleaving(); return rows }() {
					for _, c := range row.Cells {
						overlapped = overlapped || c == "┊"
					}
				}
				if !overlapped {
					t.Fatalf("seed %d: the shrunk failure has no operations in flight together:\n%s", seed, small.InterleavingText(50))
				}
				for range 100 {
					again, err := Run(ctx, continuitySubject, backend, small.Schedule, ScratchDir())
					if err != nil || again.Failure == nil || again.Failure.Signature() != small.Failure.Signature() || again.Hash() != small.Hash() {
						t.Fatalf("a replay of the shrunk schedule did not fail the same way: %v %v", err, again.Failure)
					}
				}
				if ok, err := Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), small.Schedule, ScratchDir()); err != nil || ok.Failure != nil {
					t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
				}
				t.Logf("seed %d: %d steps shrunk to %d:\n%s", seed, len(res.Schedule.Steps), len(small.Schedule.Steps), small.InterleavingText(50))
				return
			}
			t.Fatalf("the default sweep never found %s", bug.Name())
		})
	}
}

// A backend without yield points still runs: operations interleave whole,
// and the result says that interleavings inside operations were not
// explored.
func TestWholeOperationsRunAndSaySo(t *testing.T) {
	res, err := Explore(context.Background(), continuitySubject, referenceBackend(bugs.Bug{}), 5, Params{Whole: true}, t.TempDir())
	if err != nil || res.Failure != nil {
		t.Fatal(err, res.Failure)
	}
	want := []string{"interleavings inside operations were not explored: the backend reached no yield point (operations interleave whole)",
		"power loss not explored: power cuts are off"}
	if res.Yielded || !slices.Equal(res.Unexplored(), want) {
		t.Fatalf("yielded %v, unexplored %q", res.Yielded, res.Unexplored())
	}
}

// oneReadPerIdentity is the reference whose resolve_many reads one identity
// at a time, each read its own transaction, as the seed's resolve_many
// runs one statement per identity outside any transaction: a write of
// another process may come between two of them (the rule
// continuity.resolve_many.one_read_per_identity).
type oneReadPerIdentity struct{ Process }

func (p oneReadPerIdentity) Apply(ctx context.Context, op spec.Op) (any, error) {
	o, ok := op.(c.ResolveMany)
	if !ok || len(o.Identities) < 2 {
		return p.Process.Apply(ctx, op)
	}
	out := map[c.Identity]c.Resolution{}
	for _, id := range o.Identities {
		res, err := p.Process.Apply(ctx, c.ResolveMany{Identities: []c.Identity{id}})
		if err != nil {
			return nil, err
		}
		maps.Copy(out, res.(map[c.Identity]c.Resolution))
	}
	return out, nil
}

type oneReadPerIdentityBackend struct{ Launcher }

func (b oneReadPerIdentityBackend) Start(ctx context.Context, n int, path string, clock clockwork.Clock) (Process, error) {
	p, err := b.Launcher.Start(ctx, n, path, clock)
	if err != nil {
		return nil, err
	}
	return oneReadPerIdentity{p}, nil
}

// A backend that reads resolve_many's identities one at a time, pausing at
// a yield point between them, is never flagged: the oracle places each
// identity's read at its own moment of the call.
func TestAReadInSeveralStatementsIsJudgedPartByPart(t *testing.T) {
	backend := oneReadPerIdentityBackend{referenceBackend(bugs.Bug{})}
	split := 0
	err := Sweep(context.Background(), continuitySubject, backend, DefaultSeeds.Seeds(Shard{}), Params{}, 0, ScratchDir(),
		func(r Result) {
			if r.Failure != nil {
				t.Errorf("seed %d: flagged: %v\n%s", r.Schedule.Seed, r.Failure, r.InterleavingText(50))
			}
			for _, m := range r.Moves {
				if strings.Contains(m.Text, "resolve_many {") {
					split++
				}
			}
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if split == 0 {
		t.Fatal("no resolve_many of several identities ran")
	}
}

// savedAndRead is s written to a schedule file and read back, as a replay
// of a saved failure reads it.
func savedAndRead(t *testing.T, s Schedule) Schedule {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schedule.json")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSchedule(path, stores.Contracts())
	if err != nil {
		t.Fatal(err)
	}
	return back
}
