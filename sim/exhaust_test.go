package sim

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// The crash states of a cut are every fate of every write (lost, kept, or
// torn keeping a proper prefix of its sectors) with every prefix of the
// entry ops kept, each once, the fewest writes surviving first; a bound
// gives the first of them.
func TestCrashStatesAreEnumeratedEachOnce(t *testing.T) {
	writes := []fateWrite{{file: "db", n: 1, sectors: 1}, {file: "db-wal", n: 1, sectors: 3}}
	// db#1: lost or kept (2); db-wal#1: lost, kept, torn 1 or 2 (4); 3
	// prefixes of 2 entry ops.
	if got := crashStateCount(writes, 2); got != 2*4*3 {
		t.Fatalf("the count says %d states, want 24", got)
	}
	seen := map[string]bool{}
	var order []string
	n := crashStates(writes, 2, 1000, func(f lossyfs.Fates, keep int) bool {
		key := fmt.Sprintf("%v keep %d", f, keep)
		if seen[key] {
			t.Errorf("state %s given twice", key)
		}
		seen[key] = true
		order = append(order, key)
		return true
	})
	if n != 24 || len(seen) != 24 {
		t.Fatalf("enumerated %d states (%d distinct), want 24", n, len(seen))
	}
	if order[0] != "[] keep 0" || !strings.HasPrefix(order[3], "[db#1]") {
		t.Errorf("the order starts %q, want every write lost first, then one surviving", order[:4])
	}
	for _, want := range []string{"[db#1 db-wal#1 (torn: sectors 0,1)] keep 2", "[db-wal#1 (torn: sectors 0)] keep 1"} {
		if !seen[want] {
			t.Errorf("no state %s", want)
		}
	}
	if got := crashStates(writes, 2, 5, func(lossyfs.Fates, int) bool { return true }); got != 5 {
		t.Errorf("with a bound of 5, %d states", got)
	}
}

// exhaustSubjects are each store's subject and backend (with bug b, or
// the reference).
func exhaustSubjects(b bugs.Bug) []struct {
	subj    Subject
	backend Launcher
} {
	return []struct {
		subj    Subject
		backend Launcher
	}{
		{continuitySubject, InProcess(stores.Backend(stores.Options{Bug: b}), "continuity")},
		{runtimeSubject, InProcess(stores.Backend(stores.Options{Bug: b}), "runtime")},
		{clientSubject, InProcess(stores.Backend(stores.Options{Bug: b}), "client")},
	}
}

// exhaustChoices: each operation of the exhaustive tests one of 2 draws
// (3, the command's default, under STORECHECK_FULL_TESTS), which keeps go
// test ./... within its time.
var exhaustChoices = func() int {
	if os.Getenv("STORECHECK_FULL_TESTS") != "" {
		return 3
	}
	return 2
}()

// Every store's reference survives every crash state of every workload of
// up to 3 operations, at its yield points, at its syncs, at its end and
// after each of its last operation's syncs failed: every class of them
// checked (none left over the default bound), each cut's states put in
// classes.
func TestExhaustiveModePassesTheReference(t *testing.T) {
	if err := lossyfs.Available(); err != nil {
		t.Skipf("power loss not explored: %v", err)
	}
	for _, s := range exhaustSubjects(bugs.Bug{}) {
		res, err := Exhaust(context.Background(), s.subj, s.backend, ExhaustParams{Choices: exhaustChoices}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		store := s.subj.Model.Contract().Name
		for _, f := range res.Failures {
			t.Errorf("%s: the reference fails:\n%s\n%v", store, strings.Join(f.Trace, "\n"), f.Failure)
		}
		if res.Nondeterministic > 0 {
			t.Errorf("%s: %d states not reached twice the same way", store, res.Nondeterministic)
		}
		sum, atSync, failedSync := 0, 0, 0
		for _, c := range res.Cuts {
			if c.AtSync != "" && len(c.Writes) > 0 {
				atSync++
			}
			if !c.Reduced || c.Prefix || c.Checked != boundOf(c, DefaultMaxStates) {
				t.Errorf("%s: cut of %s: %d of %v classes checked (reduced %v, prefixes %v)", store, c.Workload, c.Checked, c.Classes, c.Reduced, c.Prefix)
			}
			if c.FailedSync != "" {
				failedSync++
			}
			sum += c.Checked
		}
		if atSync == 0 || failedSync == 0 {
			t.Errorf("%s: %d cuts at a sync with writes unsynced, %d after a failing sync", store, atSync, failedSync)
		}
		if res.Unchecked.Sign() != 0 || res.Classes.Cmp(big.NewInt(int64(res.Checked))) != 0 || !strings.Contains(res.Summary(), "every one of") {
			t.Errorf("%s: %v classes, %d checked, %v not: %s", store, res.Classes, res.Checked, res.Unchecked, res.Summary())
		}
		if sum != res.Checked || res.Workloads < 3 {
			t.Errorf("%s: %d states in the cuts, %d counted, %d workloads", store, sum, res.States, res.Workloads)
		}
		t.Logf("%s: %s", store, res.Summary())
	}
}

// boundOf is how many classes cut c checks under bound n.
func boundOf(c ExhaustCut, n int) int {
	if c.Classes.Cmp(big.NewInt(int64(n))) < 0 {
		return int(c.Classes.Int64())
	}
	return n
}

// The durability bugs each fail some crash state, the cut that fails
// stopping at it, and the failing run's schedule replays the failure,
// which the reference passes: SQLite's synchronous=OFF, or NORMAL in WAL
// (of every store under STORECHECK_FULL_TESTS); journal_mode=MEMORY (a commit's page writes each with
// its own fate); the side-file bugs (a blob never synced, renamed into
// place with no folder sync, a cache trusted as if its two writes
// persisted in order); and a failed fsync retried and trusted, which only
// a failing sync shows.
func TestExhaustiveModeCatchesTheDurabilityBugs(t *testing.T) {
	if err := lossyfs.Available(); err != nil {
		t.Skipf("power loss not explored: %v", err)
	}
	ctx := context.Background()
	durability := []bugs.Bug{bugs.RuntimeSynchronousOff, bugs.ContinuityWALSynchronousNormal,
		bugs.ContinuityJournalMemory, bugs.RuntimeAttachmentUnsynced, bugs.RuntimeAttachmentRenameNoDirSync,
		bugs.RuntimeAttachmentCacheOrdered, bugs.RuntimeAttachmentSyncRetried}
	if os.Getenv("STORECHECK_FULL_TESTS") != "" {
		// The synchronous bugs of the other stores are the same bug in
		// another schema: one of each keeps go test ./... within its time.
		durability = append(durability, bugs.ContinuitySynchronousOff, bugs.ClientSynchronousOff,
			bugs.RuntimeWALSynchronousNormal, bugs.ClientWALSynchronousNormal)
	}
	for _, b := range durability {
		var s struct {
			subj    Subject
			backend Launcher
		}
		for _, c := range exhaustSubjects(b) {
			if c.subj.Model.Contract().Name == b.Store() {
				s = c
			}
		}
		res, err := Exhaust(ctx, s.subj, s.backend, ExhaustParams{FailFast: true, MaxStates: 8}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Failures) == 0 {
			t.Errorf("%s: no crash state fails: %s", b.Name(), res.Summary())
			continue
		}
		last := res.Cuts[len(res.Cuts)-1]
		for _, c := range res.Cuts[:len(res.Cuts)-1] {
			if c.Checked != boundOf(c, 8) {
				t.Errorf("%s: a cut that passed checked %d of %d classes, bound 8", b.Name(), c.Checked, c.Classes)
			}
		}
		if last.Checked < 1 || last.Checked > boundOf(last, 8) {
			t.Errorf("%s: the failing cut checked %d of %d classes", b.Name(), last.Checked, last.Classes)
		}
		if b == bugs.RuntimeAttachmentSyncRetried && last.FailedSync == "" {
			t.Errorf("%s: caught at a cut with no failing sync: %+v", b.Name(), last)
		}
		f := res.Failures[0]
		d := mountForTest(t)
		again, err := run(ctx, s.subj, s.backend, f.Schedule, "", d)
		if err != nil || again.Failure == nil || again.Failure.Signature() != f.Failure.Signature() {
			t.Errorf("%s: the failing schedule replays as %v %v, want %v", b.Name(), err, again.Failure, f.Failure)
		}
		ref := exhaustSubjects(bugs.Bug{})
		for _, c := range ref {
			if c.subj.Model.Contract().Name == b.Store() {
				if ok, err := run(ctx, c.subj, c.backend, f.Schedule, "", d); err != nil || ok.Failure != nil {
					t.Errorf("%s: the reference fails the schedule: %v %v", b.Name(), err, ok.Failure)
				}
			}
		}
		t.Logf("%s: caught after %s:\n%s\n%v", b.Name(), res.Summary(), strings.Join(f.Trace, "\n"), f.Failure)
	}
}

// A cut at a sync with its outcome given (fault.SyncCut) is a step of a
// schedule like any: saved and read back, it replays the same run, the
// power going at the sync and the commit in flight indefinite; the
// reference passes it, keeping the commit's WAL write or not.
func TestACutAtASyncWithItsOutcomeGivenReplays(t *testing.T) {
	d := mountForTest(t)
	ctx := context.Background()
	x := &exhauster{subj: continuitySubject, p: ExhaustParams{Ops: 1, Choices: 1}.withDefaults()}
	w := x.workloadOf([]int{0})
	for _, kept := range []lossyfs.Fates{nil, {{File: "continuity.db-wal", N: 1}}} {
		s := x.schedule(lossyfs.EntriesPOSIX)
		s.Steps = []Step{
			{Kind: StepFault, Fault: fault.SyncCut{File: "continuity.db-wal", Nth: 1, Kept: kept}},
			{Kind: StepOp, ID: "c0.0", Client: 0, Op: w.ops[0]},
			{Kind: StepResume}, {Kind: StepResume}, {Kind: StepResume},
		}
		for j, op := range w.observe {
			s.Steps = append(s.Steps, Step{Kind: StepOp, ID: spec.OpID(0, 1+j), Client: 0, Op: op}, Step{Kind: StepResume}, Step{Kind: StepResume})
		}
		first, err := run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), s, "", d)
		if err != nil || first.Failure != nil {
			t.Fatalf("kept %v: %v %v\n%s", kept, err, first.Failure, strings.Join(first.Trace, "\n"))
		}
		if first.Coverage[EventPowerCutAtSync] != 1 {
			t.Fatalf("kept %v: the power did not go at the sync:\n%s", kept, strings.Join(first.Trace, "\n"))
		}
		again, err := run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), savedAndRead(t, first.Schedule), "", d)
		if err != nil || again.Hash() != first.Hash() {
			t.Fatalf("kept %v: the saved schedule replays as another run (%v):\n%s\n---\n%s", kept, err, strings.Join(first.Trace, "\n"), strings.Join(again.Trace, "\n"))
		}
	}
}

// The runtime reference in SQLite's DELETE journal mode passes too, every
// class checked: the commit's page writes, cut at the database's sync with
// the journal synced and hot, are one class (the rollback writes every one
// of them back), where byte equality alone makes thousands.
func TestExhaustiveModeReducesUnderAHotJournal(t *testing.T) {
	if err := lossyfs.Available(); err != nil {
		t.Skipf("power loss not explored: %v", err)
	}
	b := InProcess(stores.Backend(stores.Options{Runtime: bugs.RuntimeDeleteJournal}), "runtime")
	res, err := Exhaust(context.Background(), runtimeSubject, b, ExhaustParams{Choices: exhaustChoices}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Failures {
		t.Errorf("the reference fails:\n%s\n%v", strings.Join(f.Trace, "\n"), f.Failure)
	}
	dbWrites := 0
	for _, c := range res.Cuts {
		if c.AtSync == "sync 1 of runtime.db" && len(c.Writes) > 0 {
			dbWrites++
			if c.Classes.Cmp(big.NewInt(int64(c.Entries+1))) != 0 {
				t.Errorf("a cut at the database's sync with %d writes unsynced has %v classes, want %d", len(c.Writes), c.Classes, c.Entries+1)
			}
		}
	}
	if dbWrites == 0 || res.Unchecked.Sign() != 0 {
		t.Errorf("%d cuts at the database's sync with writes; %s", dbWrites, res.Summary())
	}
	t.Log(res.Summary())
}
