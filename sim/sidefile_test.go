package sim

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// runtimeBackend is the runtime store as o opens it, in process.
func runtimeBackend(o stores.Options) Launcher {
	return InProcess(stores.Backend(o), "runtime")
}

// firstFailure is the first of seeds 1..last whose run with p fails
// against b (its result), or fails the test.
func firstFailure(t *testing.T, b Launcher, p Params, last int64) Result {
	t.Helper()
	d := mountForTest(t)
	for seed := int64(1); seed <= last; seed++ {
		res, err := explore(context.Background(), runtimeSubject, b, seed, p, "", d, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure != nil {
			return res
		}
	}
	t.Fatalf("seeds 1..%d never failed", last)
	return Result{}
}

// A runtime store that renames each attachment's synced temp file into
// place and never syncs the folder is caught by the simulator under the
// run's entry model (a cut undoes the rename: posix), and the failure says
// it came after a power cut. Its schedule, entry_model and all, is saved,
// read back and replays to the same trace; replayed with entry ops durable
// at once (the crash model before issue 27) it passes, and the same store
// with the folder synced (bugs.SideFilesCorrect) passes it as it is.
func TestARenameIntoPlaceWithoutAFolderSyncIsCaughtByTheEntryModel(t *testing.T) {
	ctx := context.Background()
	broken := runtimeBackend(stores.Options{Bug: bugs.RuntimeAttachmentRenameNoDirSync})
	res := firstFailure(t, broken, Params{PowerCuts: true}, 40)
	if res.Schedule.EntryModel == "" || res.Failure.AfterPowerCut != "runtime.survives_power_loss" {
		t.Fatalf("seed %d failed under entry model %q, not after a cut: %v", res.Schedule.Seed, res.Schedule.EntryModel, res.Failure)
	}
	if res.Coverage[EventPowerCutUndidEntry] == 0 {
		t.Errorf("seed %d failed with no cut undoing an entry op", res.Schedule.Seed)
	}
	// The verdict names the crash state: the names the cut undid.
	if msg := res.Failure.Error(); !strings.Contains(msg, "the crash states the power cuts left: at step") ||
		!strings.Contains(msg, "undone, as not yet durable under the posix model: ") || !strings.Contains(msg, " -> blob-") {
		t.Errorf("the verdict names no crash state with the rename undone: %v", res.Failure)
	}
	back := savedAndRead(t, res.Schedule)
	if back.EntryModel != res.Schedule.EntryModel {
		t.Fatalf("entry_model %q read back as %q", res.Schedule.EntryModel, back.EntryModel)
	}
	again, err := Run(ctx, runtimeSubject, broken, back, t.TempDir())
	if err != nil || again.Hash() != res.Hash() || again.Failure == nil {
		for i := range min(len(res.Trace), len(again.Trace)) {
			if res.Trace[i] != again.Trace[i] {
				t.Logf("first difference at line %d:\n%s\n%s", i, res.Trace[i], again.Trace[i])
				break
			}
		}
		t.Fatalf("the saved schedule replays to another trace (%v, failure %v)", err, again.Failure)
	}
	durable := back
	durable.EntryModel = ""
	if ok, err := Run(ctx, runtimeSubject, broken, durable, t.TempDir()); err != nil || ok.Failure != nil {
		t.Errorf("with entry ops durable at once the schedule fails: %v %v", err, ok.Failure)
	} else if ok.Hash() == res.Hash() {
		t.Errorf("with entry ops durable at once the schedule replays to the same trace: entry_model is not read")
	}
	correct := runtimeBackend(stores.Options{Runtime: bugs.SideFilesCorrect})
	if ok, err := Run(ctx, runtimeSubject, correct, back, t.TempDir()); err != nil || ok.Failure != nil {
		t.Errorf("the store with its folder synced fails the schedule: %v %v", err, ok.Failure)
	}
}

// With entry ops durable at once (Params.EntriesDurable) the same sweep
// never catches the rename without a folder sync: the entry model is what
// finds it.
func TestWithEntriesDurableARenameWithoutAFolderSyncPasses(t *testing.T) {
	broken := runtimeBackend(stores.Options{Bug: bugs.RuntimeAttachmentRenameNoDirSync})
	d := mountForTest(t)
	for seed := int64(1); seed <= 12; seed++ {
		res, err := explore(context.Background(), runtimeSubject, broken, seed, Params{PowerCuts: true, EntriesDurable: true}, "", d, "")
		if err != nil || res.Failure != nil {
			t.Fatalf("seed %d with entry ops durable at once: %v %v", seed, err, res.Failure)
		}
		if res.Schedule.EntryModel != "" {
			t.Fatalf("seed %d drew entry model %q", seed, res.Schedule.EntryModel)
		}
	}
}

// A saved schedule whose entry_model is none the file system has is
// refused, by its name.
func TestAnUnknownEntryModelIsRefusedByName(t *testing.T) {
	res, err := Explore(context.Background(), continuitySubject, referenceBackend(bugs.Bug{}), 3, Params{Steps: 20}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "schedule.json")
	for model, want := range map[string]string{"posix": "", "ext4_ordered": "", "btrfs": `unknown entry_model "btrfs"`} {
		s := res.Schedule
		s.EntryModel = model
		if err := s.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSchedule(path, stores.Contracts())
		if want == "" && err != nil {
			t.Errorf("entry_model %q: %v", model, err)
		}
		if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("entry_model %q read back with %v, want an error saying %s", model, err, want)
		}
	}
	os.Remove(path)
}

// The side-file bugs a seed of the sweep rarely reaches, each on a
// schedule that reaches it, caught with the crash model's part that shows
// it and passing without it; the store done right passes each:
//
//   - a cache and its marker assumed to persist in order: a cut that keeps
//     the marker's write and loses the cache's (a subset across files) is
//     caught; a cut that loses both passes;
//   - a failed sync retried and trusted: a cut after the failed sync loses
//     the staging answered ok; with no sync failing it passes.
func TestTheSideFileBugsEachCaughtByTheirCrashState(t *testing.T) {
	ctx := context.Background()
	mountForTest(t)
	op := func(o spec.Op) Step { return Step{Kind: StepOp, Op: o} }
	cut := func(kept lossyfs.Fates, entries int) Step {
		return Step{Kind: StepFault, Fault: fault.PowerCut{Kept: kept, KeepEntries: entries}}
	}
	// Each operation runs to its end (resumed past its yield points)
	// before the next step.
	schedule := func(model string, steps ...Step) Schedule {
		var all []Step
		for _, st := range steps {
			all = append(all, st)
			if st.Kind == StepOp {
				for range 8 {
					all = append(all, Step{Kind: StepResume})
				}
			}
		}
		return Schedule{Store: "runtime", Seed: 1, Clients: 1, Processes: 1, EntryModel: model, Steps: all}
	}
	marker := "cache-" + hex.EncodeToString([]byte("att-1")) + ".ok"
	stage := op(r.StageAttachment{SessionID: "session-0", AttachmentID: "att-1", Data: []byte("png")})
	load := op(r.LoadAttachment{AttachmentID: "att-1"})
	failed := Step{Kind: StepFault, Fault: fault.SyncError{File: "attachments.log", Nth: 1}}
	stagings := []Step{stage, failed, op(r.StageAttachment{SessionID: "session-0", AttachmentID: "att-2", Data: []byte("pdf")}), cut(nil, 0),
		op(r.LoadAttachment{AttachmentID: "att-2"})}
	for _, c := range []struct {
		name     string
		bug      bugs.Bug
		caught   Schedule
		passes   Schedule // the same without the part of the model
		caughtAs string
	}{
		{"cache assumed ordered", bugs.RuntimeAttachmentCacheOrdered,
			schedule("posix", stage, cut(lossyfs.Fates{{File: marker, N: 1}}, 4), load),
			schedule("posix", stage, cut(nil, 4), load), "only " + marker + "#1 survive"},
		{"failed sync retried", bugs.RuntimeAttachmentSyncRetried,
			schedule("", stagings...), schedule("", slices.DeleteFunc(slices.Clone(stagings), func(s Step) bool { return s.Fault == failed.Fault })...), "every one of the"},
	} {
		broken := runtimeBackend(stores.Options{Bug: c.bug})
		res, err := Run(ctx, runtimeSubject, broken, c.caught, t.TempDir())
		if err != nil || res.Failure == nil {
			t.Errorf("%s: not caught (%v):\n%s", c.name, err, strings.Join(res.Trace, "\n"))
		} else if !strings.Contains(res.Failure.Error(), "rule runtime.survives_power_loss") || !strings.Contains(res.Failure.CrashState, c.caughtAs) {
			t.Errorf("%s: caught as %v", c.name, res.Failure)
		}
		if ok, err := Run(ctx, runtimeSubject, broken, c.passes, t.TempDir()); err != nil || ok.Failure != nil {
			t.Errorf("%s: fails without the crash state that shows it: %v %v", c.name, err, ok.Failure)
		}
		for _, open := range []func(context.Context, spec.OpenOptions) (adapters.Target, error){bugs.SideFilesCorrect, bugs.SideLogCorrect} {
			correct := runtimeBackend(stores.Options{Runtime: open})
			if ok, err := Run(ctx, runtimeSubject, correct, c.caught, t.TempDir()); err != nil || ok.Failure != nil {
				t.Errorf("%s: the store done right fails: %v %v", c.name, err, ok.Failure)
			}
		}
	}
}

// The continuity store with SQLite's journal kept in memory
// (bugs.ContinuityJournalMemory) overwrites its pages in place at a
// commit: with entry ops durable at once, seed 99 catches it by a power
// cut at the commit's sync that keeps some of the page writes and loses
// others, and the same schedule with that cut losing every unsynced write
// passes, as the reference passes it as it is.
func TestJournalModeMemoryIsCaughtByPerWriteFates(t *testing.T) {
	ctx := context.Background()
	d := mountForTest(t)
	broken := referenceBackend(bugs.ContinuityJournalMemory)
	res, err := explore(ctx, continuitySubject, broken, 99, Params{PowerCuts: true, EntriesDurable: true}, "", d, "")
	if err != nil || res.Failure == nil {
		t.Fatalf("seed 99 not caught: %v", err)
	}
	if !strings.Contains(res.Failure.CrashState, "(the power went at a sync) of the ") || !strings.Contains(res.Failure.CrashState, "continuity.db#1") {
		t.Fatalf("seed 99 caught after no torn commit: %v", res.Failure)
	}
	lost := res.Schedule
	lost.Steps = slices.Clone(lost.Steps)
	for i, st := range lost.Steps {
		if f, ok := st.Fault.(fault.SyncCrash); ok {
			f.Fates = 0
			lost.Steps[i].Fault = f
		}
	}
	if ok, err := run(ctx, continuitySubject, broken, lost, "", d); err != nil || ok.Failure != nil {
		t.Errorf("with every unsynced write lost at the sync the schedule fails: %v %v", err, ok.Failure)
	}
	if ok, err := run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), res.Schedule, "", d); err != nil || ok.Failure != nil {
		t.Errorf("the reference fails the schedule: %v %v", err, ok.Failure)
	}
}
