package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// durabilityBugs are the reference with SQLite's synchronous lowered, each
// store's, and the runtime store with its attachments' files beside the
// database made durable wrong (bugs.RuntimeAttachmentRenameNoDirSync,
// RuntimeAttachmentUnsynced), and the continuity store with its journal in
// memory (bugs.ContinuityJournalMemory): only a power cut shows them.
var durabilityBugs = []bugs.Bug{
	bugs.RuntimeSynchronousOff, bugs.RuntimeWALSynchronousNormal,
	bugs.ClientSynchronousOff, bugs.ClientWALSynchronousNormal,
	bugs.ContinuitySynchronousOff, bugs.ContinuityWALSynchronousNormal,
	bugs.RuntimeAttachmentRenameNoDirSync, bugs.RuntimeAttachmentUnsynced,
	bugs.ContinuityJournalMemory,
}

// needFUSE skips a test of power cuts where none can be cut here, with the
// reason (the kit then says power loss was not explored, and tests of that
// run everywhere).
func needFUSE(t *testing.T) {
	t.Helper()
	if err := lossyfs.Available(); err != nil {
		t.Skipf("power loss not explored: %v", err)
	}
}

// powerLossSkips is how many specs of one store a run skips for want of
// FUSE: its power-loss spec where none can be mounted here, else none.
func powerLossSkips() string {
	if lossyfs.Available() != nil {
		return "1"
	}
	return "0"
}

// subjectOf is store k as the simulator checks the reference (which
// declares no choice that configures its model).
func subjectOf(k stores.Store) sim.Subject {
	st, _ := conformance.StoreNamed(k.Name())
	return st.Subject(spec.Capabilities{})
}

func init() {
	power := map[string]string{
		"runtime":    "runtime power loss keeps every commit, lease, batch, meta and attachment it acknowledged through a power cut that loses everything it never synced",
		"client":     "client power loss finds everything it acknowledged after a power cut that loses everything it never synced",
		"continuity": "continuity power loss keeps every record, snapshot and fence it acknowledged through a power cut that loses everything it never synced",
	}
	for _, b := range durabilityBugs {
		expectedFailures[b] = []string{power[b.Store()]}
	}
	// The side-file bugs a seed of the sweep rarely reaches (sim's
	// TestTheSideFileBugsEachCaughtByTheirCrashState shows the simulator
	// catching them on the schedules that reach them).
	expectedFailures[bugs.RuntimeAttachmentCacheOrdered] = []string{"runtime power loss keeps every attachment it acknowledged through a power cut that keeps one file's unsynced writes and loses the others'"}
	expectedFailures[bugs.RuntimeAttachmentSyncRetried] = []string{"runtime power loss keeps an attachment it staged ok when a sync failed under it through a power cut"}
}

// The runtime store with its side files made durable right (a temp file
// synced, renamed into place, its folder synced; a failed sync answered
// as an error: bugs.SideFilesCorrect), which every side-file bug is but
// for one step, passes the power-loss specs that catch them, and the
// default sweep's seeds that catch the rename without a folder sync.
func TestTheSideFileStoreDoneRightPassesThePowerLossSpecs(t *testing.T) {
	needFUSE(t)
	t.Parallel()
	for _, open := range []func(context.Context, spec.OpenOptions) (adapters.Target, error){bugs.SideFilesCorrect, bugs.SideLogCorrect} {
		correct := conformance.Adapter(stores.Backend(stores.Options{Runtime: open}))
		rep, err := conformance.Run(context.Background(), correct, conformance.Config{Stores: []string{"runtime"}, Layers: []conformance.Layer{conformance.LayerSpec},
			Spec: "runtime.survives_power_loss", ReportDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		passed := 0
		for _, c := range rep.Checks {
			if c.Outcome == reports.Passed {
				passed++
			}
		}
		if rep.Failed() || passed < 3 {
			t.Fatalf("the store done right: %d specs passed, failed %v: %+v", passed, rep.Failed(), rep.Checks)
		}
	}
}

// The default sweep catches each durability bug through a power cut (the
// failure names the rule that holds acknowledged writes across one) where
// the correct reference passes the same seed, and with power cuts off the
// same seed passes: it is the power cut that finds them.
// STORECHECK_FULL_TESTS=1 runs the whole default sweep with power cuts off
// and sees it pass.
func TestPowerCutsCatchTheDurabilityBugs(t *testing.T) {
	needFUSE(t)
	for _, b := range durabilityBugs {
		t.Run(b.Name(), func(t *testing.T) {
			t.Parallel()
			k, _ := stores.Lookup(b.Store())
			backend := sim.InProcess(stores.Backend(stores.Options{Bug: b}), k.Name())
			var caught *sim.Failure
			var seed int64
			noPower := ""
			err := sim.Sweep(context.Background(), subjectOf(k), backend, sim.DefaultSeeds.Seeds(sim.Shard{}), sim.Params{PowerCuts: true}, 1, sim.ScratchDir(),
				func(r sim.Result) {
					if r.NoPowerCuts != "" {
						noPower = r.NoPowerCuts
					}
					if r.Failure != nil && caught == nil {
						caught, seed = r.Failure, r.Schedule.Seed
					}
				}, func() bool { return caught != nil })
			if err != nil {
				t.Fatal(err)
			}
			if noPower != "" {
				t.Fatalf("power loss not explored: %s", noPower)
			}
			if caught == nil {
				t.Fatalf("the default sweep (%s) with power cuts never caught %s", sim.DefaultSeeds, b.Name())
			}
			if caught.AfterPowerCut != spec.PowerLossRule(k.Name()) {
				t.Errorf("seed %d failed with no power cut before it: %v", seed, caught)
			}
			// It says which acknowledged writes the cut may have lost, and
			// at which steps.
			if !strings.Contains(caught.AfterCrash, fmt.Sprintf("the power cut at step %d lost an acknowledged write", caught.PowerCutStep)) ||
				!strings.Contains(caught.AfterCrash, "acknowledged at step") {
				t.Errorf("seed %d: the failure names no acknowledged write the cut lost: %v", seed, caught)
			}
			t.Logf("caught at seed %d: %v", seed, caught)
			correct := sim.InProcess(stores.Reference(), k.Name())
			if ok, err := sim.Explore(context.Background(), subjectOf(k), correct, seed, sim.Params{PowerCuts: true}, sim.ScratchDir()); err != nil || ok.Failure != nil {
				t.Errorf("the reference fails seed %d with power cuts too: %v %v", seed, err, ok.Failure)
			}
			seeds := []int64{seed}
			if fullTests() {
				seeds = sim.DefaultSeeds.Seeds(sim.Shard{})
			}
			err = sim.Sweep(context.Background(), subjectOf(k), backend, seeds, sim.Params{}, 1, sim.ScratchDir(), func(r sim.Result) {
				if r.Failure != nil {
					t.Errorf("with power cuts off, seed %d failed: %v", r.Schedule.Seed, r.Failure)
				}
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Over the wire (one "storecheck serve" per simulated process, all killed
// at the cut) the simulator catches the reference in WAL with
// synchronous=NORMAL through a power cut too, and the shrunk schedule it
// saves replays the failure over the wire and passes against the correct
// reference.
func TestPowerCutsCatchUnsyncedCommitsOverTheWire(t *testing.T) {
	t.Parallel()
	needFUSE(t)
	dir := t.TempDir()
	const bug = "bug:continuity_wal_synchronous_normal"
	out, errs, code := storecheck(t, bug, "sim", "--store", "continuity", "--seed", "5", "--shrink", "25", "--report-dir", dir, "--quiet", "--", os.Args[0], "serve")
	if code != exitFailed || !strings.Contains(out, "after the power cut at step") {
		t.Fatalf("exit %d, want %d, failing after a power cut\n%s\n%s", code, exitFailed, out, errs)
	}
	schedule := filepath.Join(dir, "sim-continuity-seed-5", "schedule.json")
	if out, errs, code := storecheck(t, bug, "replay", schedule, "--", os.Args[0], "serve"); code != exitFailed || !strings.Contains(out, "cut the power") {
		t.Fatalf("replay over the wire against the bug: exit %d\n%s\n%s", code, out, errs)
	}
	if out, errs, code := storecheck(t, "file", "replay", schedule, "--", os.Args[0], "serve"); code != exitPassed {
		t.Fatalf("replay over the wire against the reference: exit %d\n%s\n%s", code, out, errs)
	}
}

// A commit whose WAL sync failed answers io and stays unseen by its own
// process, yet the store opened again after a kill recovers it from the
// WAL (the page cache kept its frames); and after a power cut the synced
// commits that followed it may be gone with it (recovery stops at the hole
// its frames leave). Both are SQLite's, so the reference over the wire
// passes the two shrunk schedules that showed them (the Rust example's
// continuity seeds 165 and 179; the kit failed both, on the reference too,
// before an operation after a failed sync was deferred: sim/oracle.go).
func TestTheReferenceOverTheWirePassesAFailedSyncItRecovers(t *testing.T) {
	t.Parallel()
	needFUSE(t)
	for _, name := range []string{"failed-sync-recovered.json", "failed-sync-then-cut.json"} {
		schedule, err := filepath.Abs(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		out, errs, code := storecheck(t, "file", "replay", schedule, "--", os.Args[0], "serve")
		if code != exitPassed {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", name, code, exitPassed, out, errs)
		}
	}
}

// The Rust example's continuity seed 194, shrunk: an upsert's commit meets
// the failed sync and answers io (deferred); a snapshot save armed to crash
// after its commit answers not_found before reaching it (the upsert is not
// seen); the process armed for it is killed and started again, and the
// open recovers the upsert from the WAL, which resolve_many then reads. The
// save answered before the restart, so the kit must judge its answer
// before it lets the restart bring the upsert back: it restarted first and
// failed a correct backend (the reference over the wire, as the Rust one).
func TestAnAnswerBeforeTheArmedRestartIsJudgedBeforeTheRecovery(t *testing.T) {
	t.Parallel()
	needFUSE(t)
	schedule, err := filepath.Abs(filepath.Join("testdata", "armed-answer-before-recovery.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := storecheck(t, "file", "replay", schedule, "--", os.Args[0], "serve")
	if code != exitPassed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitPassed, out, errs)
	}
	// The replay reached the case: the armed save answered, and the read
	// after the restart saw the recovered upsert.
	trace := out + errs
	for _, want := range []string{"save_session_snapshot [crash at save_session_snapshot/after_commit]", "  → not_found",
		`"agent_runtime_id":"rt-attempt","session_id":"session-0","generation":1`} {
		if !strings.Contains(trace, want) {
			t.Errorf("the replay's trace has no %q: the schedule no longer reaches the case\n%s", want, trace)
		}
	}
}
