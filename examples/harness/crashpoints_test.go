package harness_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/examples/harness/mystore"
)

// simulate runs the simulator alone over the store with crash points
// points in place of its own, seeds 1..n.
func simulate(t *testing.T, points []string, n int64) conformance.Report {
	t.Helper()
	h := mystore.Harness(mystore.Options{})
	h.CrashPoints = map[string][]string{"continuity": points}
	cfg := conformance.Config{Layers: []conformance.Layer{conformance.LayerSim}, Stores: []string{"continuity"},
		Seeds: conformance.Seeds(1, n), FailFast: true, Workers: 1, ReportDir: t.TempDir()}
	run, err := conformance.Run(context.Background(), conformance.InProcess(h), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// A crash point the store reaches but the harness does not declare is one
// the simulator can never crash at: the run fails, naming it, where it
// would otherwise pass with the transaction's middle never tested.
func TestACrashPointReachedButNotDeclaredFailsNamingIt(t *testing.T) {
	const hidden = "save_session_snapshot/snapshot_written"
	points := slices.DeleteFunc(slices.Clone(mystore.CrashPoints), func(p string) bool { return p == hidden })
	run := simulate(t, points, 20)
	var failed []conformance.Check
	for _, c := range run.Checks {
		if c.Outcome == conformance.Failed {
			failed = append(failed, c)
		}
	}
	if len(failed) == 0 {
		t.Fatalf("the sweep passed with %s reached and undeclared", hidden)
	}
	if m := failed[0].Message; !strings.Contains(m, `crash point "`+hidden+`" reached but not declared`) {
		t.Errorf("the failure does not name the undeclared point:\n%s", m)
	}
}

// A declared crash point no run reaches (here a misspelt name) is listed
// under what the sweep did not explore, with how often it was armed, and
// the sweep still passes: the store is not wrong, its declaration is.
func TestADeclaredCrashPointNeverReachedIsNotExplored(t *testing.T) {
	const typo = "save_session_snapshot/snapshot_writen"
	points := append(slices.Clone(mystore.CrashPoints), typo)
	run := simulate(t, points, 20)
	for _, c := range run.Checks {
		if c.Outcome != conformance.Passed {
			t.Fatalf("%s: %s %s", c.Name, c.Outcome, c.Message)
		}
	}
	var note string
	for _, n := range run.Notes {
		if strings.Contains(n, typo) {
			note = n
		}
	}
	if !strings.Contains(note, "was not explored: armed ") || !strings.Contains(note, "no armed operation reached it") {
		t.Errorf("no note of the unreached point %s among: %q", typo, run.Notes)
	}
	// Every save reaches its point between the two writes: armed, it fires.
	for _, n := range run.Notes {
		if strings.Contains(n, `"save_session_snapshot/snapshot_written"`) {
			t.Errorf("a point every armed save reaches is listed as unexplored: %s", n)
		}
	}
}
