package conformance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// runsToFailure is how many runs a sweep of budget runs from first took
// to its first failure (0: none failed), one worker, stopping there.
func runsToFailure(t *testing.T, b Backend, store, explore string, first int64, budget int) int {
	t.Helper()
	cfg := Config{Stores: []string{store}, Layers: []Layer{LayerSim}, Seeds: &SeedRange{First: first, Last: first + int64(budget) - 1},
		Workers: 1, FailFast: true, Shrink: -1, NoPowerCuts: true, Explore: explore, ReportDir: t.TempDir()}
	r, err := Run(context.Background(), b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range r.Checks {
		if c.Outcome == reports.Failed {
			return i + 1
		}
	}
	return 0
}

// A guided sweep is the sweep a Config asks for, through Run: its checks
// are its runs, blind seeds first and children named by their branches,
// every name once; its reach says what it spent its runs on; and a failing
// child is reproduced by its saved schedule, not by its seed.
func TestAGuidedSweepThroughRun(t *testing.T) {
	cfg := Config{Stores: []string{"continuity"}, Layers: []Layer{LayerSim}, Seeds: &SeedRange{First: 1, Last: 24},
		Steps: 60, NoPowerCuts: true, Shrink: -1, Explore: sim.ExploreGuided, ReportDir: t.TempDir()}
	r, err := Run(context.Background(), Reference(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	children := 0
	for _, c := range r.Checks {
		names = append(names, c.Name)
		if strings.Contains(c.Name, ">") {
			children++
			if c.Reproduce != "" {
				t.Errorf("%s: a passing child offers %q, which is its seed's run", c.Name, c.Reproduce)
			}
		} else if !strings.Contains(c.Reproduce, "--seed ") {
			t.Errorf("%s: reproduce %q", c.Name, c.Reproduce)
		}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if len(names) != 24 || len(slices.Compact(sorted)) != 24 || children == 0 {
		t.Fatalf("%d checks, %d children, names not distinct: %v", len(names), children, names)
	}
	if len(r.Reach) != 1 || r.Reach[0].Guided == nil || r.Reach[0].Guided.Children != children ||
		!strings.Contains(r.Reach[0].Summary(), "guided: 24 runs") {
		t.Fatalf("reach %+v", r.Reach)
	}

	// A child that fails replays from its schedule.
	b, _ := bugs.ByName("continuity_one_process_check_outside_tx")
	cfg.Seeds, cfg.FailFast = &SeedRange{First: 1, Last: 60}, false
	cfg.Steps = 0
	r, err = Run(context.Background(), broken(b), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.Outcome == reports.Failed && strings.Contains(c.Name, ">") {
			if !strings.Contains(c.Reproduce, "replay") || !strings.Contains(c.Reproduce, "schedule.json") {
				t.Errorf("%s: reproduce %q, want the replay of its saved schedule", c.Name, c.Reproduce)
			}
			return
		}
	}
	t.Logf("no child of the sweep failed; the replay line of a failing child is not checked")
}

// The guided sweep against the blind one, over the simulator bugs of the
// corpus, by runs to the first failure at the same budget of runs, from
// several base seeds. It takes minutes, so it runs when asked:
// STORECHECK_GUIDED_BENCH=TRIALS (docs/guided.md has the table and the
// command).
func TestGuidedAgainstBlind(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("STORECHECK_GUIDED_BENCH"))
	if trials <= 0 {
		t.Skip("STORECHECK_GUIDED_BENCH=TRIALS runs it")
	}
	const budget = 100
	var rows []string
	for _, store := range stores.Names() {
		for _, b := range bugs.Of(store) {
			if b.NeedsPowerCut() {
				// The sweeps cut no power: neither could find it.
				continue
			}
			var blind, guided []int
			for trial := range trials {
				first := int64(1 + trial*budget)
				blind = append(blind, runsToFailure(t, broken(b), store, sim.ExploreBlind, first, budget))
				guided = append(guided, runsToFailure(t, broken(b), store, sim.ExploreGuided, first, budget))
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s |", b.Name(), median(blind, budget), median(guided, budget)))
			// A row as it is done: the whole table takes many minutes.
			t.Logf("%s: blind %v, guided %v", b.Name(), blind, guided)
		}
	}
	t.Logf("budget %d runs, %d trials; median runs to the first failure (miss: none in the budget)\n| bug | blind | guided |\n|---|---|---|\n%s",
		budget, trials, strings.Join(rows, "\n"))
}

// median of runs to a failure, a miss counted past the budget.
func median(runs []int, budget int) string {
	v := make([]int, len(runs))
	missed := 0
	for i, r := range runs {
		if r == 0 {
			r = budget + 1
			missed++
		}
		v[i] = r
	}
	sort.Ints(v)
	m := v[len(v)/2]
	s := strconv.Itoa(m)
	if m > budget {
		s = "miss"
	}
	if missed > 0 {
		s += fmt.Sprintf(" (%d missed)", missed)
	}
	return s
}
