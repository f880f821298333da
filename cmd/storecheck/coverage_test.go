package main

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// coverageLinearizeSeeds are the seeds of the default linearize run the
// coverage test takes: a default run's seed is the clock's, so any seed
// must do; the test takes five (STORECHECK_FULL_TESTS: twenty).
func coverageLinearizeSeeds() []int64 {
	if fullTests() {
		return sim.SeedRange{First: 1, Last: 20}.Seeds(sim.Shard{})
	}
	return []int64{1, 2, 3, 4, 5}
}

// Each store's default runs reach every cell of its coverage matrix that
// is not listed unreachable with a reason (stores.Store.Unreachable, and
// IOUnreachable for io): the simulator's default sweep ("storecheck sim"
// without flags: seeds 1..100 at sim.Params' defaults), over its seeds,
// and the default run of "storecheck linearize" (8 clients, 2,000
// operations, 2 handles; help_test holds the flags to these defaults), one
// seed at a time, since one run is what a user gets. Every cell listed
// unreachable is a cell of the contract and says why.
func TestDefaultRunsReachEveryCoverageCell(t *testing.T) {
	for _, k := range stores.All {
		t.Run(k.Name(), func(t *testing.T) {
			t.Parallel()
			cells := map[string]bool{}
			for _, c := range k.Cells() {
				cells[c.Key()] = true
				if c.Unreachable == "" && c.Answer == "io" {
					t.Errorf("%s is not listed unreachable", c.Key())
				}
			}
			for key, why := range k.Unreachable {
				if !cells[key] {
					t.Errorf("%q is listed unreachable and is no cell of the contract", key)
				}
				if why == "" {
					t.Errorf("%q is listed unreachable with no reason", key)
				}
			}

			swept := k.Coverage("sim", "seeds "+sim.DefaultSeeds.String(), defaultSweep(t, k))
			if len(swept.Missed()) > 0 || len(swept.Outside) > 0 {
				t.Errorf("storecheck sim: %s", swept.Summary())
			}
			// A linearize history hangs on real goroutine timing, so a
			// cell answered once or twice a run is reached by chance in any
			// one run: each seed's misses are logged, and the test fails on
			// a cell no run of the default configuration reached.
			union := map[string]int{}
			for _, seed := range coverageLinearizeSeeds() {
				answers := map[string]int{}
				c := linearizeStore(context.Background(), stores.Reference(), k, linearizeConfig{
					run: linearizability.Config{Seed: seed}, timeout: defaultCheckTimeout, reportDir: t.TempDir(),
					command: "storecheck linearize", answers: answers}, io.Discard)
				if c.Outcome != reports.Passed {
					t.Errorf("storecheck linearize --seed %d: the reference was flagged: %s %s", seed, c.Outcome, c.Message)
				}
				run := k.Coverage("linearizability", fmt.Sprintf("seed %d", seed), answers)
				if len(run.Outside) > 0 {
					t.Errorf("storecheck linearize --seed %d: %s", seed, run.Summary())
				} else if len(run.Missed()) > 0 {
					t.Logf("storecheck linearize --seed %d: %s", seed, run.Summary())
				}
				for k, n := range answers {
					union[k] += n
				}
			}
			seeds := coverageLinearizeSeeds()
			if all := k.Coverage("linearizability", fmt.Sprintf("seeds %d..%d", seeds[0], seeds[len(seeds)-1]), union); len(all.Missed()) > 0 {
				t.Errorf("storecheck linearize, the default run: %s", all.Summary())
			}
		})
	}
}
