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
	return check(t, points, n, true, conformance.LayerSim)
}

// check runs layers over the store with crash points points in place of
// its own, seeds 1..n, stopping at the first failure when failFast.
func check(t *testing.T, points []string, n int64, failFast bool, layers ...conformance.Layer) conformance.Report {
	t.Helper()
	h := mystore.Harness(mystore.Options{})
	h.CrashPoints = map[string][]string{"continuity": points}
	cfg := conformance.Config{Layers: layers, Stores: []string{"continuity"},
		Seeds: conformance.Seeds(1, n), FailFast: failFast, Workers: 1, ReportDir: t.TempDir()}
	run, err := conformance.Run(context.Background(), conformance.InProcess(h), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// A crash point the store reaches but the harness does not declare is one
// the simulator can never crash at: the run fails, naming it, where it
// would otherwise pass with the transaction's middle never tested. Every
// layer's failure names it and blames no rule of the contract (the store's
// answers are not wrong, its declaration is): not every rule of the save,
// nor the rule of the spec that happened to call it.
func TestACrashPointReachedButNotDeclaredFailsNamingIt(t *testing.T) {
	const hidden = "save_session_snapshot/snapshot_written"
	points := slices.DeleteFunc(slices.Clone(mystore.CrashPoints), func(p string) bool { return p == hidden })
	run := check(t, points, 3, false, conformance.LayerSpec, conformance.LayerLinearizability, conformance.LayerSim)
	failed := map[string]conformance.Check{}
	for _, c := range run.Checks {
		if _, seen := failed[c.Layer]; c.Outcome == conformance.Failed && !seen {
			failed[c.Layer] = c
		}
	}
	for layer, noRule := range map[conformance.Layer]string{conformance.LayerSpec: "rules: none of the contract",
		conformance.LayerLinearizability: "broken: no rule of the contract", conformance.LayerSim: "broken: no rule of the contract"} {
		c, ok := failed[string(layer)]
		if !ok {
			t.Errorf("%s passed with %s reached and undeclared", layer, hidden)
			continue
		}
		m := c.Message + "\n" + c.Details
		if !strings.Contains(m, `crash point "`+hidden+`" reached but not declared`) {
			t.Errorf("%s: the failure does not name the undeclared point:\n%s", layer, m)
		}
		if !strings.Contains(m, noRule) || strings.Contains(m, "continuity.save_session_snapshot.") || strings.Contains(m, "rules: continuity.") {
			t.Errorf("%s: the failure blames the contract's rules, not the declaration:\n%s", layer, m)
		}
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
