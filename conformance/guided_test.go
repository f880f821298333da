package conformance

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// runsToFailure is how many runs a sweep of budget runs from first took
// to its first failure (0: none failed), one worker, stopping there;
// explore is a mode, or guidedFromNothing: guided with no corpus.
func runsToFailure(t *testing.T, b Backend, store, explore string, first int64, budget int) int {
	t.Helper()
	cfg := Config{Stores: []string{store}, Layers: []Layer{LayerSim}, Seeds: &SeedRange{First: first, Last: first + int64(budget) - 1},
		Workers: 1, FailFast: true, Shrink: -1, NoPowerCuts: true, Explore: explore, ReportDir: t.TempDir()}
	if explore == guidedFromNothing {
		cfg.Explore, cfg.Corpus = sim.ExploreGuided, NoCorpus
	}
	r, err := Run(context.Background(), b, cfg)
	if err != nil {
		// Not Fatal: trials run on goroutines of their own.
		t.Error(err)
		return 0
	}
	for i, c := range r.Checks {
		if c.Outcome == reports.Failed {
			return i + 1
		}
	}
	return 0
}

const guidedFromNothing = "guided from nothing"

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
// bug corpus, by runs to the first failure at the same budget of runs,
// from several base seeds; guided from the kit's corpus (the default) and
// from nothing. It takes minutes, so it runs when asked:
// STORECHECK_GUIDED_BENCH=TRIALS, and STORECHECK_GUIDED_BUGS=REGEXP for
// the bugs whose names match (docs/guided.md has the table and the
// command).
func TestGuidedAgainstBlind(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("STORECHECK_GUIDED_BENCH"))
	if trials <= 0 {
		t.Skip("STORECHECK_GUIDED_BENCH=TRIALS runs it")
	}
	const budget = 100
	modes := []string{sim.ExploreBlind, sim.ExploreGuided, guidedFromNothing}
	var rows []string
	// The median runs of the bugs blind needs more than 5 runs for.
	var blindHard, guidedHard []int
	lost := 0
	for _, store := range stores.Names() {
		for _, b := range bugs.Of(store) {
			if f := os.Getenv("STORECHECK_GUIDED_BUGS"); f != "" && !regexp.MustCompile(f).MatchString(b.Name()) {
				continue
			}
			if b.NeedsPowerCut() {
				// The sweeps cut no power: neither could find it.
				continue
			}
			// Each trial of each mode is one sweep of one worker (runs
			// to the first failure are counted in order); the sweeps go
			// one per CPU at once.
			runs := make([][]int, len(modes))
			for m := range modes {
				runs[m] = make([]int, trials)
			}
			var wg sync.WaitGroup
			sem := make(chan struct{}, runtime.GOMAXPROCS(0))
			for trial := range trials {
				for m, mode := range modes {
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer func() { <-sem; wg.Done() }()
						runs[m][trial] = runsToFailure(t, broken(b), store, mode, int64(1+trial*budget), budget)
					}()
				}
			}
			wg.Wait()
			blind, guided := medianRuns(runs[0], budget), medianRuns(runs[1], budget)
			if blind > 5 {
				blindHard, guidedHard = append(blindHard, blind), append(guidedHard, guided)
			}
			if blind <= budget && guided > budget {
				lost++
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", b.Name(), median(runs[0], budget), median(runs[1], budget), median(runs[2], budget)))
			// A row as it is done: the whole table takes many minutes.
			t.Logf("%s: blind %v, guided %v, guided from nothing %v", b.Name(), runs[0], runs[1], runs[2])
		}
	}
	t.Logf("budget %d runs, %d trials; median runs to the first failure (miss: none in the budget)\n| bug | blind | guided | guided from nothing |\n|---|---|---|---|\n%s",
		budget, trials, strings.Join(rows, "\n"))
	if len(blindHard) > 0 {
		// The target (issue 26): of the bugs blind needs more than 5 runs
		// for, the median falls 5x; no bug blind catches is lost. A miss
		// counts as budget+1 runs, which flatters blind's misses.
		bm, gm := medianRuns(blindHard, budget), medianRuns(guidedHard, budget)
		t.Logf("the %d bugs blind needs more than 5 runs for: median %d runs blind, %d guided (%.1fx); %d bugs blind catches guided lost",
			len(blindHard), bm, gm, float64(bm)/float64(gm), lost)
	}
}

// medianRuns is the median of runs to a failure, a miss (0) counted as
// budget+1.
func medianRuns(runs []int, budget int) int {
	v := make([]int, len(runs))
	for i, r := range runs {
		if r == 0 {
			r = budget + 1
		}
		v[i] = r
	}
	sort.Ints(v)
	return v[len(v)/2]
}

// median of runs to a failure, a miss counted past the budget, as the
// table shows it.
func median(runs []int, budget int) string {
	m := medianRuns(runs, budget)
	s := strconv.Itoa(m)
	if m > budget {
		s = "miss"
	}
	missed := 0
	for _, r := range runs {
		if r == 0 {
			missed++
		}
	}
	if missed > 0 {
		s += fmt.Sprintf(" (%d missed)", missed)
	}
	return s
}
