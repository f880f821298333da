package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// subject is store k as the simulator needs it, for a backend that declares
// no choices.
func subject(k stores.Store) sim.Subject { return storeOf(k).Subject(spec.Capabilities{}) }

// inProcess is the reference with bug (none: the zero Bug) as the
// simulator's in-process backend of store.
func inProcess(bug bugs.Bug, store string) sim.Launcher {
	return sim.InProcess(stores.Backend(stores.Options{Bug: bug}), store)
}

// The simulator's proof: an expiry off-by-one, a fence not bumped on
// re-claim and a write-behind cache (one process: only a crash shows it)
// are each found within the default sweep, and each failure shrinks to a
// schedule of at most 20 steps that still fails the same way and that the
// correct reference passes.
func TestSimFindsAndShrinksTheSeedsBugs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		bug    bugs.Bug
		params sim.Params
	}{
		{bugs.RuntimeLeaseLiveAtExpiry, sim.Params{}},
		{bugs.RuntimeFenceNotBumped, sim.Params{}},
		{bugs.ContinuityWriteBehind, sim.Params{Processes: 1}},
	} {
		t.Run(tc.bug.Name(), func(t *testing.T) {
			t.Parallel()
			k, _ := stores.Lookup(tc.bug.Store())
			subj := subject(k)
			broken, correct := inProcess(tc.bug, k.Name()), inProcess(bugs.Bug{}, k.Name())
			for _, seed := range sim.DefaultSeeds.Seeds(sim.Shard{}) {
				res, err := sim.Explore(ctx, subj, broken, seed, tc.params, sim.ScratchDir())
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure == nil {
					continue
				}
				small, err := sim.Shrink(ctx, subj, broken, res, sim.ScratchDir(), 2000)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(small.Schedule.Steps); n > 20 || small.Failure.Signature() != res.Failure.Signature() {
					t.Fatalf("seed %d shrunk to %d steps, failing as %q (was %q):\n%s", seed, n,
						small.Failure.Signature(), res.Failure.Signature(), strings.Join(small.Trace, "\n"))
				}
				if ok, err := sim.Run(ctx, subj, correct, small.Schedule, sim.ScratchDir()); err != nil || ok.Failure != nil {
					t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
				}
				t.Logf("seed %d: %d steps shrunk to %d", seed, len(res.Schedule.Steps), len(small.Schedule.Steps))
				return
			}
			t.Fatalf("the default sweep (%s) never found %s", sim.DefaultSeeds, tc.bug.Name())
		})
	}
}

// Over the default sweep the simulator reaches every rare event each store
// names, and never flags the reference.
func TestDefaultSweepReachesEveryRareEvent(t *testing.T) {
	for _, k := range stores.All {
		t.Run(k.Name(), func(t *testing.T) {
			t.Parallel()
			cov := defaultSweep(t, k)
			if len(rareEvents(k)) == 0 {
				t.Fatal("the store names no rare events")
			}
			want := rareEvents(k)
			if why := noPowerCuts(k); why != "" {
				// With power cuts off, or where no FUSE mount can be made,
				// the sweep cuts no power, and says why: the one event it
				// may miss.
				t.Logf("power loss not explored: %s", why)
				want = slices.DeleteFunc(want, func(e string) bool { return e == sim.EventPowerCut })
			}
			if missing := cov.Missing(want); len(missing) > 0 {
				t.Fatalf("the default sweep never reached: %s", strings.Join(missing, "; "))
			}
		})
	}
}

// sweeps are the default sweep of each store against the reference, run
// once for the tests that read what it reached.
var sweeps sync.Map // store name -> func() swept

// swept is what a default sweep found: its coverage, the seeds that
// flagged the reference, and why it cut no power ("" when it did).
type swept struct {
	cov     sim.Coverage
	flagged []string
	noPower string
}

// defaultSweep is what the simulator's default sweep ("storecheck sim":
// seeds 1..100, sim.Params' defaults) of store k reached against the
// reference; the test fails if the reference was flagged. Power cuts are
// on with STORECHECK_FULL_TESTS=1 only: they reach no cell the sweep
// without them does not, and the seeds that cut run on FUSE, at several
// times the cost (sim's own default-sweep test and the command's
// TestPowerCutsCatchTheDurabilityBugs cut the power by default).
func defaultSweep(t *testing.T, k stores.Store) sim.Coverage {
	t.Helper()
	w := sweepOf(k)
	if len(w.flagged) > 0 {
		t.Fatal(strings.Join(w.flagged, "\n"))
	}
	return w.cov
}

// noPowerCuts is why the default sweep of store k cut no power ("" when it
// did).
func noPowerCuts(k stores.Store) string { return sweepOf(k).noPower }

func sweepOf(k stores.Store) swept {
	once, _ := sweeps.LoadOrStore(k.Name(), sync.OnceValue(func() swept {
		w := swept{cov: sim.Coverage{}}
		err := sim.Sweep(context.Background(), subject(k), inProcess(bugs.Bug{}, k.Name()), sim.DefaultSeeds.Seeds(sim.Shard{}), sim.Params{PowerCuts: fullTests()}, 1, sim.ScratchDir(),
			func(r sim.Result) {
				if r.Failure != nil {
					w.flagged = append(w.flagged, fmt.Sprintf("seed %d: the reference was flagged: %v", r.Schedule.Seed, r.Failure))
				}
				if r.NoPowerCuts != "" {
					w.noPower = r.NoPowerCuts
				}
				w.cov.Add(r)
			}, nil)
		if err != nil {
			w.flagged = append(w.flagged, err.Error())
		}
		return w
	}))
	return once.(func() swept)()
}

// The racy bugs of the corpus (a check read outside the write transaction,
// an in-process lock instead of a transaction) are reproduced from one seed
// by the simulator, which pauses one operation between its read and its
// write while another process's commits. In process, each failure shrinks
// to at most 12 steps that replay the same failure every time and that the
// correct reference passes; over the wire (one served process per
// simulated process) the same seed fails the same way, and the shrunk
// schedule replayed over the wire fails the same way too.
func TestSimReproducesEveryRacyBugFromOneSeed(t *testing.T) {
	ctx := context.Background()
	for _, bug := range []bugs.Bug{bugs.ContinuityUpsertCheckOutsideTx, bugs.ContinuityProcessLock,
		bugs.RuntimeLeaseClaimOutsideTx, bugs.ClientSettleCheckOutsideTx} {
		t.Run(bug.Name(), func(t *testing.T) {
			t.Parallel()
			k, _ := stores.Lookup(bug.Store())
			subj := subject(k)
			broken := inProcess(bug, k.Name())
			wire := sim.Exec(servedOptions(bug), k.Name())
			for _, seed := range sim.DefaultSeeds.Seeds(sim.Shard{}) {
				res, err := sim.Explore(ctx, subj, broken, seed, sim.Params{}, sim.ScratchDir())
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure == nil {
					continue
				}
				over, err := sim.Explore(ctx, subj, wire, seed, sim.Params{}, sim.ScratchDir())
				if err != nil || over.Failure == nil || over.Hash() != res.Hash() {
					t.Fatalf("seed %d over the wire: %v, failure %v; the same trace: %v", seed, err, over.Failure, over.Hash() == res.Hash())
				}
				small, err := sim.Shrink(ctx, subj, broken, res, sim.ScratchDir(), 2000)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(small.Schedule.Steps); n > 12 || small.Failure.Signature() != res.Failure.Signature() {
					t.Fatalf("seed %d shrunk to %d steps, failing as %q (was %q):\n%s", seed, n,
						small.Failure.Signature(), res.Failure.Signature(), small.InterleavingText(50))
				}
				for range 100 {
					again, err := sim.Run(ctx, subj, broken, small.Schedule, sim.ScratchDir())
					if err != nil || again.Failure == nil || again.Hash() != small.Hash() {
						t.Fatalf("a replay of the shrunk schedule did not fail the same way: %v %v", err, again.Failure)
					}
				}
				if again, err := sim.Run(ctx, subj, wire, small.Schedule, sim.ScratchDir()); err != nil || again.Failure == nil ||
					again.Failure.Signature() != small.Failure.Signature() {
					t.Fatalf("the shrunk schedule over the wire: %v %v", err, again.Failure)
				}
				if ok, err := sim.Run(ctx, subj, inProcess(bugs.Bug{}, k.Name()), small.Schedule, sim.ScratchDir()); err != nil || ok.Failure != nil {
					t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
				}
				t.Logf("seed %d: %d steps shrunk to %d:\n%s", seed, len(res.Schedule.Steps), len(small.Schedule.Steps), small.InterleavingText(50))
				return
			}
			t.Fatalf("the default sweep (%s) never found %s", sim.DefaultSeeds, bug.Name())
		})
	}
}

// A rare event a backend's declared choice puts out of reach is reported
// with that reason, not as rare: a continuity backend of opaque revisions
// cannot be seen deleting at the current revision.
func TestAnEventOutOfReachOfADeclaredChoiceSaysWhy(t *testing.T) {
	st, _ := stores.Lookup("continuity")
	note := func(caps spec.Capabilities) string {
		notes, _ := unexplored(st, caps, sim.Coverage{}, sim.Result{Yielded: true, CrashPoints: true}, nil, 8, "--seeds")
		for _, n := range notes {
			if strings.Contains(n, model.EventSnapshotDeletedAtRevision) {
				return n
			}
		}
		t.Fatalf("no note for %q", model.EventSnapshotDeletedAtRevision)
		return ""
	}
	if n := note(spec.Capabilities{SnapshotRevision: "opaque"}); !strings.Contains(n, "opaque snapshot revisions") || strings.Contains(n, "rare:") {
		t.Errorf("opaque revisions: %s", n)
	}
	if n := note(spec.Capabilities{}); !strings.Contains(n, "rare: none of the 8 seeds") {
		t.Errorf("sha256 revisions: %s", n)
	}
}

// cellBugs are the bugs only the cells the workloads were aimed at show (a
// snapshot presented back that matches, a release with the right token
// and another fence, a load of a tombstoned node, due times at the edges
// of a second): the randomized layers must catch them as the specs do.
var cellBugs = []bugs.Bug{bugs.ContinuityMatchIgnoresBytes, bugs.RuntimeReleaseIgnoresFence,
	bugs.RuntimeLoadNodeShowsTombstoned, bugs.ClientDueTimesAsText}

// The simulator's default sweep finds each of cellBugs (selftest's sim
// column); with STORECHECK_FULL_TESTS, so does the default linearize run
// of seed 1 (its linearizability column), which takes minutes for some.
func TestRandomLayersCatchTheBugsOfTheNewlyReachedCells(t *testing.T) {
	for _, b := range cellBugs {
		t.Run(b.Name(), func(t *testing.T) {
			t.Parallel()
			k, _ := stores.Lookup(b.Store())
			found := int64(0)
			err := sim.Sweep(context.Background(), subject(k), inProcess(b, k.Name()), sim.DefaultSeeds.Seeds(sim.Shard{}),
				sim.Params{}, 1, sim.ScratchDir(), func(r sim.Result) {
					if r.Failure != nil && found == 0 {
						found = r.Schedule.Seed
					}
				}, func() bool { return found != 0 })
			if err != nil {
				t.Fatal(err)
			}
			if found == 0 {
				t.Errorf("the default sweep (%s) never found %s", sim.DefaultSeeds, b.Name())
			} else {
				t.Logf("sim: first found at seed %d", found)
			}
			if !fullTests() {
				return
			}
			if c := linearizeOne(t, broken(b), k, 1, linearizeHooks{}); c.Outcome != reports.Failed {
				t.Errorf("storecheck linearize --seed 1: %s %s, want failed", c.Outcome, c.Message)
			}
		})
	}
}

// A rare event no seed reached says how to run more seeds the way the run
// was started: a flag of the command, one of go test or a Config field,
// the simulator's seeds alone (go test's -storecheck.seeds would run a
// history per seed too).
func TestARareEventNamesHowToWidenTheSweep(t *testing.T) {
	st, _ := stores.Lookup("runtime")
	for _, c := range []struct {
		l    lines
		want string
	}{{Config{}.commandLines(nil), "(a longer sweep may: --seeds)"}, {goTestLines{test: "T", pkg: "./x"}, "(a longer sweep may: -storecheck.sim-seeds)"},
		{configLines{}, "(a longer sweep may: Config.SimSeeds)"}} {
		notes, _ := unexplored(st, spec.Capabilities{}, sim.Coverage{}, sim.Result{Yielded: true, CrashPoints: true}, nil, 8, c.l.widen())
		if len(notes) == 0 || !strings.Contains(notes[0], c.want) {
			t.Errorf("%T: %q; want %q", c.l, notes, c.want)
		}
	}
}

// Every failure names its rule, the one broken or the smallest set the
// evidence allows: the simulator's first failure of each of these bugs
// over the default sweep blames only rules the bug breaks (bugs.Breaks),
// the answer the backend gave being one the broken rule decides. Before,
// runtime_max_zero_claims_all was blamed on lease_live (the lease it went
// on to check) and a claim it made on every rule naming a field of it.
func TestSimBlamesOnlyTheRulesTheBugBreaks(t *testing.T) {
	ctx := context.Background()
	for _, bug := range []bugs.Bug{bugs.RuntimeMaxZeroClaimsAll, bugs.ContinuityUpsertCheckOutsideTx} {
		t.Run(bug.Name(), func(t *testing.T) {
			t.Parallel()
			k, _ := stores.Lookup(bug.Store())
			subj, broken := subject(k), inProcess(bug, k.Name())
			for _, seed := range sim.DefaultSeeds.Seeds(sim.Shard{}) {
				res, err := sim.Explore(ctx, subj, broken, seed, sim.Params{}, sim.ScratchDir())
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure == nil {
					continue
				}
				f := res.Failure
				if len(f.Rules) == 0 || slices.ContainsFunc(f.Rules, func(r string) bool { return !slices.Contains(bugs.Breaks(bug), r) }) {
					t.Fatalf("seed %d: %s blamed on %v (%s); the bug breaks %v", seed, f.What, f.Rules, f.Why, bugs.Breaks(bug))
				}
				t.Logf("seed %d: %s blamed on %v", seed, f.Op, f.Rules)
				return
			}
			t.Fatalf("the default sweep (%s) never found %s", sim.DefaultSeeds, bug.Name())
		})
	}
}

// A runtime store in SQLite's default journal mode, DELETE with
// synchronous FULL, which its seed (no connection setup shown) does not rule
// out, passes the power-loss spec and a sweep of power cuts under the entry
// models: FULL leaves the removal of the journal that commits a
// transaction unsynced, and the crash model, which reads the seed's
// Durable as FULL, does not undo it (lossyfs sqliteJournal). Undone, as
// strict POSIX would, it failed the spec and 4 of these 16 seeds (14 of
// seeds 1..40).
func TestARuntimeStoreInSQLitesDefaultJournalModeSurvivesPowerCuts(t *testing.T) {
	if err := lossyfs.Available(); err != nil {
		t.Skipf("power loss not explored: %v", err)
	}
	cfg := Config{Stores: []string{"runtime"}, Layers: []Layer{LayerSpec, LayerSim}, Seeds: &SeedRange{First: 1, Last: 16},
		Shrink: -1, ReportDir: t.TempDir()}
	r, err := Run(context.Background(), Adapter(stores.Backend(stores.Options{Runtime: bugs.RuntimeDeleteJournal})), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cuts := 0
	for _, c := range r.Checks {
		if c.Outcome == reports.Failed {
			t.Errorf("%s %s: %s", c.Layer, c.Name, c.Message)
		}
	}
	for _, reach := range r.Reach {
		for _, e := range reach.Events {
			if e.Event == sim.EventPowerCut {
				cuts += e.Count
			}
		}
	}
	if cuts == 0 {
		t.Fatal("the sweep cut no power: it proves nothing")
	}
}
