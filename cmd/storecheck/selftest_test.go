package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// Every deliberate bug is caught by some layer, and the unmodified reference
// by none: storecheck selftest exits 0 and its table says so. By default a
// representative slice: every bug through its cheapest catching layer
// (--cheapest: the simulator over 10 seeds, else the specs, else a
// history), the reference and the exec sample (one bug of each store)
// through every layer. STORECHECK_FULL_TESTS=1 runs the whole table, every
// bug through every layer, as "storecheck selftest" does.
func TestSelftestCatchesEveryBugAndNeverTheReference(t *testing.T) {
	args := []string{"selftest", "--quiet", "--cheapest", "--seeds", "1..10"}
	if fullTests() {
		args = []string{"selftest", "--quiet"}
	} else {
		t.Logf("selftest --cheapest; %s=1 runs the whole table", fullTestsEnv)
	}
	out, errs, code := storecheck(t, "file", args...)
	if code != exitPassed {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !regexp.MustCompile(`(?m)^escaped every layer: none of \d+ bugs$`).MatchString(out) ||
		!strings.Contains(out, "the reference: flagged by no layer") {
		t.Fatalf("table:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^reference \(no bug\)\s+all(\s+clean){6}\s*$`).MatchString(out) {
		t.Fatalf("the reference row is not clean in every layer:\n%s", out)
	}
	// The exec sample goes through every layer: one row of each store with
	// no layer left out.
	for _, store := range storeNames {
		if !regexp.MustCompile(`(?m)^\S+\s+` + store + `(\s+(caught \S+|missed)){6}\s*$`).MatchString(out) {
			t.Errorf("no bug of %s went through every layer:\n%s", store, out)
		}
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
			broken := stores.Backend(stores.Options{Bug: b})
			found := int64(0)
			err := sim.Sweep(context.Background(), subject(k), sim.InProcess(broken, k.Name()), sim.DefaultSeeds.Seeds(sim.Shard{}),
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
			c := linearizeStore(context.Background(), broken, k, linearizeConfig{run: linearizability.Config{Seed: 1},
				timeout: defaultCheckTimeout, reportDir: t.TempDir(), command: "storecheck linearize"}, io.Discard)
			if c.Outcome != reports.Failed {
				t.Errorf("storecheck linearize --seed 1: %s %s, want failed", c.Outcome, c.Message)
			}
		})
	}
}
