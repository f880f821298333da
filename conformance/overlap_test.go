package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/suite"
)

// raceInsideTheProcess is what a sweep says when it ran one operation at a
// time on the one process (sim.Result.Unexplored).
const raceInsideTheProcess = "continuity: " + spec.NoteRacesInsideProcess

// A store declared as the seed's continuity store is (one process: no
// shared_files; its callers served at once: concurrent_requests) is
// simulated with its callers' operations overlapping inside the process,
// however the backend is given: an adapter in process, a Go harness in
// process (conformance.Run on InProcess, as conformance.Test runs it), and
// a program over the wire. The check-then-write race of
// continuity_one_process_check_outside_tx fails the first seed of the
// sweep, naming a rule the bug breaks, and shrinks to two callers of
// process 0 in flight together; the same backend with concurrent_requests
// withdrawn passes the seeds up to it and says races inside the process
// were not explored.
func TestAOneProcessStoreServingAtOnceIsRacedInsideItsProcess(t *testing.T) {
	bug := bugs.ContinuityOneProcessCheckOutsideTx
	driver := stores.Backend(stores.Options{Bug: bug})
	if caps := driver.Info().CapabilitiesOf(bug.Store()); caps.SharedFiles || !caps.ConcurrentRequests {
		t.Fatalf("the bug's store is declared %+v; want concurrent_requests without shared_files", caps.Capabilities)
	}
	for _, tc := range []struct {
		name    string
		backend Backend
		// seeds are the sweep that must fail; wire: over the wire an armed
		// crash point is the process's (the first operation to reach it
		// crashes it), in process the armed operation's, so the seeds run
		// otherwise and seed 1 is not the race's; and seed 1's power
		// stream fails a sync, after which the served reference answers
		// otherwise than in process (a finding of its own, not this
		// test's), so the wire sweep cuts no power.
		seeds *SeedRange
		wire  bool
	}{
		{"adapter", Adapter(driver), Seed(1), false},
		{"harness", InProcess(suite.HarnessOf(driver)), Seed(1), false},
		{"wire", served(bug), &SeedRange{First: 1, Last: 5}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, err := Run(context.Background(), tc.backend, Config{Stores: []string{bug.Store()}, Layers: []Layer{LayerSim},
				Seeds: tc.seeds, Workers: 1, FailFast: true, Shrink: 300, NoPowerCuts: tc.wire, ReportDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var failed *reports.Check
			for i, c := range rep.Checks {
				if c.Outcome == reports.Failed && failed == nil {
					failed = &rep.Checks[i]
				}
			}
			if failed == nil {
				t.Fatalf("no seed of %s failed: %+v", tc.seeds, rep.Checks)
			}
			if !tc.wire && !slices.ContainsFunc(bugs.Breaks(bug), func(rule string) bool { return strings.Contains(failed.Message, rule) }) {
				t.Errorf("the failure names none of %v, the rules the bug breaks:\n%s", bugs.Breaks(bug), failed.Message)
			}
			callers := 0
			for _, col := range failed.Interleaving.Columns {
				if strings.HasPrefix(col, "p0.c") {
					callers++
				}
			}
			if callers < 2 || len(failed.Interleaving.Columns) != callers {
				t.Errorf("the shrunk interleaving's columns are %q; want two callers of process 0 or more, and no other process:\n%s",
					failed.Interleaving.Columns, failed.Details)
			}
			if strings.Contains(strings.Join(rep.Notes, "\n"), raceInsideTheProcess) {
				t.Errorf("the sweep overlapped operations and says it did not:\n%s", strings.Join(rep.Notes, "\n"))
			}

			without, err := Run(context.Background(), tc.backend, Config{Stores: []string{bug.Store()}, Layers: []Layer{LayerSim},
				Seeds: &SeedRange{First: 1, Last: 3}, Withdraw: []string{spec.CapConcurrent}, NoPowerCuts: tc.wire, ReportDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if without.Failed() || without.Inconclusive() {
				t.Errorf("one operation at a time, the sweep did not pass: %+v", without.Checks)
			}
			if !strings.Contains(strings.Join(without.Notes, "\n"), raceInsideTheProcess) {
				t.Errorf("one operation at a time, the sweep does not say %q:\n%s", raceInsideTheProcess, strings.Join(without.Notes, "\n"))
			}
		})
	}
}

// The correct reference, simulated as one process (--processes 1) with its
// operations overlapping, passes, and its sweep does not say races inside
// the process went unexplored.
func TestTheReferenceOnOneProcessPassesWithOperationsOverlapping(t *testing.T) {
	t.Parallel()
	rep, err := Run(context.Background(), Reference(), Config{Stores: []string{"continuity"}, Layers: []Layer{LayerSim},
		Seeds: &SeedRange{First: 1, Last: 3}, Processes: 1, ReportDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || rep.Inconclusive() || strings.Contains(strings.Join(rep.Notes, "\n"), raceInsideTheProcess) {
		t.Errorf("the reference on one process: %+v\n%s", rep.Checks, strings.Join(rep.Notes, "\n"))
	}
}

// processesFor gives each declaration the run the capability table
// (spec.CapabilityTable, docs/protocol.md) says it gets: with shared_files,
// two processes, one operation in flight on each, whatever
// concurrent_requests says; as one process (no shared_files, or
// --processes 1), operations overlap exactly when the backend declares
// concurrent_requests; without shared_files the note quotes the table.
func TestEachDeclarationIsSimulatedAsTheCapabilityTableSays(t *testing.T) {
	for _, tc := range []struct {
		shared, concurrent bool
		processes          int // asked (0: the default)
		wantProcesses      int // 0: the simulator's default, two
		overlap, note      bool
	}{
		{true, true, 0, 0, false, false},
		{true, false, 0, 0, false, false},
		{false, true, 0, 1, true, true},
		{false, false, 0, 1, false, true},
		{true, true, 1, 1, true, false},
		{true, false, 1, 1, false, false},
		{false, true, 2, 1, true, true},
	} {
		caps := spec.Capabilities{SharedFiles: tc.shared, ConcurrentRequests: tc.concurrent}
		p, note := processesFor(sim.Params{Processes: tc.processes}, caps, "continuity")
		if p.Processes != tc.wantProcesses || p.Overlap != tc.overlap || (note != "") != tc.note {
			t.Errorf("shared_files %v, concurrent_requests %v, --processes %d: %d processes, overlap %v, note %q; want %d, %v, a note %v",
				tc.shared, tc.concurrent, tc.processes, p.Processes, p.Overlap, note, tc.wantProcesses, tc.overlap, tc.note)
		}
		if note != "" && !strings.Contains(note, spec.NoteOneProcess+" is not checked") {
			t.Errorf("the note %q does not say what the table quotes (%q)", note, spec.NoteOneProcess)
		}
	}
	for _, name := range []string{spec.CapSharedFiles, spec.CapConcurrent} {
		row, _ := spec.CapabilityNamed(name)
		if !strings.Contains(row.Without, spec.NoteRacesInsideProcess) {
			t.Errorf("the table's %s row does not quote the note %q: %s", name, spec.NoteRacesInsideProcess, row.Without)
		}
	}
}
