package sim

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// mountForTest mounts a forgetful file system for the test, which is
// skipped, with the reason, where none can be mounted here (the tests of
// that path run everywhere).
func mountForTest(t *testing.T) *lossyfs.Disk {
	t.Helper()
	if err := lossyfs.Available(); err != nil {
		t.Skipf("power loss not explored: %v", err)
	}
	d, why, done := mountDisk(t.TempDir())
	if d == nil {
		t.Fatalf("power loss not explored: %s", why)
	}
	t.Cleanup(done)
	return d
}

// powerCuts counts a schedule's power cuts, and its torn ones.
func powerCuts(s Schedule) (cuts, torn int) {
	for _, st := range s.Steps {
		if f, ok := st.Fault.(fault.PowerCut); ok {
			cuts++
			if len(f.Kept) > 0 {
				torn++
			}
		}
	}
	return cuts, torn
}

// Power cuts come from a random stream of their own: a seed whose stream
// draws none runs exactly the run it runs with power cuts off, step for
// step; a seed that draws some cuts the power, the same way every time,
// and its schedule replays to the same trace.
func TestPowerCutsComeFromAStreamOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	d := mountForTest(t)
	var calm, cutting int
	for seed := int64(1); seed <= 12 && (calm < 2 || cutting < 2); seed++ {
		off, err := explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{Steps: 80}, t.TempDir(), nil, "power cuts are off")
		if err != nil || off.Failure != nil {
			t.Fatal(err, off.Failure)
		}
		on, err := explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{Steps: 80, PowerCuts: true}, "", d, "")
		if err != nil || on.Failure != nil {
			t.Fatalf("seed %d with power cuts: %v %v", seed, err, on.Failure)
		}
		// A seed whose rates are 0, or that happens to draw no fault on
		// the disk in its steps.
		if drawPower(seed).rate == 0 || cutsPower(on.Schedule) < 0 {
			calm++
			if on.Hash() != off.Hash() {
				t.Errorf("seed %d draws no fault on the disk, yet its trace changed with power cuts on", seed)
			}
			// Such a seed runs on a plain folder; on the forgetful file
			// system its schedule runs the same, step for step.
			if onDisk, err := run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), off.Schedule, "", d); err != nil || onDisk.Hash() != off.Hash() {
				t.Errorf("seed %d: its schedule on the forgetful file system runs another trace (%v)", seed, err)
			}
			continue
		}
		if cuts, _ := powerCuts(on.Schedule); on.Coverage[EventPowerCut] != cuts {
			t.Errorf("seed %d: %d power cuts in the schedule, %d struck", seed, cuts, on.Coverage[EventPowerCut])
			continue
		}
		cutting++
		again, err := explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{Steps: 80, PowerCuts: true}, "", d, "")
		if err != nil || again.Hash() != on.Hash() {
			t.Errorf("seed %d: a second run with power cuts differs (%v)", seed, err)
		}
		replayed, err := run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), on.Schedule, "", d)
		if err != nil || replayed.Hash() != on.Hash() {
			t.Errorf("seed %d: the schedule with power cuts replays to another trace (%v)", seed, err)
		}
	}
	if calm < 2 || cutting < 2 {
		t.Fatalf("seeds 1..12: %d without power cuts, %d with", calm, cutting)
	}
}

// A backend that acknowledges commits it never synced (the reference in
// WAL with synchronous=NORMAL) is caught by a power cut in the default
// sweep; the failure shrinks to a short schedule that still cuts the
// power, replays the same failure from its saved file, and the correct
// reference passes it.
func TestAPowerCutCatchesUnsyncedCommitsAndShrinks(t *testing.T) {
	ctx := context.Background()
	broken := referenceBackend(bugs.ContinuityWALSynchronousNormal)
	d := mountForTest(t)
	for _, seed := range DefaultSeeds.Seeds(Shard{}) {
		res, err := explore(ctx, continuitySubject, broken, seed, Params{PowerCuts: true}, "", d, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure == nil {
			continue
		}
		if cuts, _ := powerCuts(res.Schedule); cuts == 0 {
			t.Fatalf("seed %d failed without a power cut: %v", seed, res.Failure)
		}
		small, err := Shrink(ctx, continuitySubject, broken, res, t.TempDir(), 500)
		if err != nil {
			t.Fatal(err)
		}
		if small.Failure.Signature() != res.Failure.Signature() || len(small.Schedule.Steps) > 20 {
			t.Fatalf("seed %d shrunk to %d steps, %v (from %v)", seed, len(small.Schedule.Steps), small.Failure, res.Failure)
		}
		if cuts, _ := powerCuts(small.Schedule); cuts == 0 {
			t.Fatalf("the shrunk schedule cuts no power:\n%s", strings.Join(small.Trace, "\n"))
		}
		saved := savedAndRead(t, small.Schedule)
		again, err := Run(ctx, continuitySubject, broken, saved, t.TempDir())
		if err != nil || again.Failure == nil || again.Failure.Signature() != small.Failure.Signature() {
			t.Fatalf("the saved schedule replays as %v %v, want %v", err, again.Failure, small.Failure)
		}
		if ok, err := Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), saved, t.TempDir()); err != nil || ok.Failure != nil {
			t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
		}
		t.Logf("seed %d: %d steps shrunk to %d:\n%s\n%v", seed, len(res.Schedule.Steps), len(small.Schedule.Steps), strings.Join(small.Trace, "\n"), small.Failure)
		return
	}
	t.Fatal("the default sweep never caught the reference in WAL with synchronous=NORMAL")
}

// A cut that keeps some unsynced writes says which in the trace and how
// many survived; against synchronous=OFF some seed keeps part of the WAL.
func TestATornPowerCutSaysWhatSurvived(t *testing.T) {
	ctx := context.Background()
	d := mountForTest(t)
	for seed := int64(1); seed <= 40; seed++ {
		res, err := explore(ctx, continuitySubject, referenceBackend(bugs.ContinuitySynchronousOff), seed, Params{PowerCuts: true}, "", d, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Coverage[EventPowerCutTorn] == 0 {
			continue
		}
		i := slices.IndexFunc(res.Trace, func(l string) bool { return strings.Contains(l, " unsynced writes survive whole, ") })
		if i < 0 || !strings.Contains(res.Trace[i-1], "of the unsynced writes only these survive: continuity.db") {
			t.Fatalf("seed %d: a torn cut, traced as:\n%s", seed, strings.Join(res.Trace[max(i-1, 0):i+1], "\n"))
		}
		return
	}
	t.Fatal("seeds 1..40 never tore a file against synchronous=OFF")
}

// Where no FUSE mount can be made, a sweep that asks for power cuts runs
// without them, the very runs it runs with power cuts off, and each result
// says why; a replay of a schedule that cuts the power says it cannot.
func TestWithoutFUSEPowerLossIsNotExploredAndSaysWhy(t *testing.T) {
	t.Setenv(lossyfs.DeviceEnv, "/nonexistent/fuse")
	ctx := context.Background()
	seeds := []int64{3, 4}
	var got []Result
	err := Sweep(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seeds, Params{PowerCuts: true}, 1, t.TempDir(), func(r Result) { got = append(got, r) }, nil)
	if err != nil || len(got) != len(seeds) {
		t.Fatalf("sweep: %v, %d results", err, len(got))
	}
	for i, r := range got {
		if r.Failure != nil {
			t.Fatalf("seed %d failed: %v", seeds[i], r.Failure)
		}
		if !slices.Contains(r.Unexplored(), "power loss not explored: no FUSE device: /nonexistent/fuse is missing (load the fuse module; in a container, pass the device in)") {
			t.Errorf("seed %d says %q", seeds[i], r.Unexplored())
		}
		off, _ := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seeds[i], Params{}, t.TempDir())
		if off.Hash() != r.Hash() {
			t.Errorf("seed %d without FUSE is not the run it is with power cuts off", seeds[i])
		}
	}
	s := got[0].Schedule
	s.Steps = append(slices.Clone(s.Steps), Step{Kind: StepFault, Fault: fault.PowerCut{Kept: lossyfs.Fates{{File: "continuity.db-wal", N: 2}}}})
	_, err = Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), s, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "cuts the power, and power loss cannot be simulated here: no FUSE device") {
		t.Fatalf("a replay that cuts the power without FUSE: %v", err)
	}
}

// A power cut is a value like every fault: its schedule step reads back as
// it was written, and a keep without a file is refused with the reason.
func TestPowerCutsRoundTrip(t *testing.T) {
	for _, f := range []fault.Fault{fault.PowerCut{}, fault.PowerCut{Kept: lossyfs.Fates{{File: "runtime.db-wal", N: 3, Sectors: []int{1}}}}} {
		b, err := fault.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := fault.Unmarshal(b)
		if err != nil || !reflect.DeepEqual(back, f) {
			t.Errorf("%s: %s read back as %v %v", f, b, back, err)
		}
	}
	var j map[string]any
	b, _ := fault.Marshal(fault.PowerCut{Kept: lossyfs.Fates{{File: "x", N: 1}}})
	json.Unmarshal(b, &j)
	if kept, _ := j["kept"].([]any); j["type"] != "power_cut" || len(kept) != 1 {
		t.Errorf("written as %s", b)
	}
	for _, bad := range []string{`{"type":"power_cut","keep":2}`, `{"type":"power_cut","file":"x","keep":-1}`, `{"type":"kill","file":"x"}`} {
		if _, err := fault.Unmarshal([]byte(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// A runtime or client backend that declares it keeps its writes across
// process crashes only (where the seed does not say more) is held to no
// power cut: a sweep cuts none and says why, and a replay of a schedule
// that cuts the power refuses to, with the reason. A continuity backend
// that declares it is held to power loss all the same: its seed shows
// SQLite's synchronous=FULL in place.
func TestADeclaredProcessCrashDurabilityIsHeldToNoPowerCut(t *testing.T) {
	ctx := context.Background()
	caps := spec.Capabilities{Durability: spec.DurabilityProcessCrash}
	subj := runtimeSubject
	subj.Capabilities = caps
	backend := InProcess(stores.Reference(), "runtime")
	res, err := Explore(ctx, subj, backend, 5, Params{Steps: 60, PowerCuts: true}, t.TempDir())
	if err != nil || res.Failure != nil {
		t.Fatal(err, res.Failure)
	}
	if cuts, _ := powerCuts(res.Schedule); cuts > 0 || !strings.Contains(res.NoPowerCuts, `the backend declares durability "process_crash"`) {
		t.Errorf("%d power cuts; says %q", cuts, res.NoPowerCuts)
	}
	s := res.Schedule
	s.Steps = append(slices.Clone(s.Steps), Step{Kind: StepFault, Fault: fault.PowerCut{}})
	if _, err := Run(ctx, subj, backend, s, t.TempDir()); !errors.Is(err, ErrNoPowerLoss) || !strings.Contains(err.Error(), "process_crash") {
		t.Errorf("a replay that cuts the power of a process_crash backend: %v", err)
	}
	cont := continuitySubject
	cont.Capabilities = caps
	if why := cont.Model.Contract().PowerLossExempt(caps); why != "" {
		t.Errorf("continuity is exempt: %s", why)
	}
}

// A power cut at a sync strikes when the backend makes that sync: the
// operation in flight is indefinite, every process starts again on what
// the fates kept, the reference keeps every acknowledged write (it syncs
// its WAL before it answers), and the schedule replays to the same trace.
func TestAPowerCutAtASyncStrikesAndReplays(t *testing.T) {
	ctx := context.Background()
	d := mountForTest(t)
	for seed := int64(1); seed <= 60; seed++ {
		res, err := explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{PowerCuts: true}, "", d, "")
		if err != nil || res.Failure != nil {
			t.Fatalf("seed %d: %v %v", seed, err, res.Failure)
		}
		if res.Coverage[EventPowerCutAtSync] == 0 || !slices.ContainsFunc(res.Trace, func(l string) bool { return strings.Contains(l, "only these survive") }) {
			continue
		}
		i := slices.IndexFunc(res.Trace, func(l string) bool { return strings.Contains(l, "the power went at the sync") })
		if i < 1 || !strings.Contains(res.Trace[i-1], "→ ? (the power went at a sync under it)") {
			t.Fatalf("seed %d: the cut at a sync traced as\n%s", seed, strings.Join(res.Trace[max(i-1, 0):i+3], "\n"))
		}
		replayed, err := run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), res.Schedule, "", d)
		if err != nil || replayed.Hash() != res.Hash() {
			t.Fatalf("seed %d: the schedule replays to another trace (%v)", seed, err)
		}
		return
	}
	t.Fatal("seeds 1..60 never cut the power at a sync with fates drawn")
}

// A failing sync reaches the backend: the next commit, which syncs the
// WAL, answers io (indefinite), and the reference, which rewrites its
// frames at the next commit, keeps every write it acknowledged after, even
// across a later power cut.
func TestAFailingSyncFailsTheCommitThatSyncs(t *testing.T) {
	ctx := context.Background()
	d := mountForTest(t)
	for seed := int64(1); seed <= 60; seed++ {
		res, err := explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{PowerCuts: true}, "", d, "")
		if err != nil || res.Failure != nil {
			t.Fatalf("seed %d: %v %v", seed, err, res.Failure)
		}
		i := slices.IndexFunc(res.Trace, func(l string) bool { return strings.Contains(l, "fail sync 1 of continuity.db-wal") })
		if i < 0 {
			continue
		}
		for _, l := range res.Trace[i+1:] {
			if strings.Contains(l, "fail sync") || strings.Contains(l, "cut the power") {
				break
			}
			if strings.Contains(l, "→ ? (io") {
				return
			}
		}
	}
	t.Fatal("seeds 1..60: no failing sync of the WAL failed a commit")
}
