package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// countedModel is a model whose steps are counted: in the check until
// the check's time is known, in the report after.
type countedModel struct {
	model.Model
	tm            *linearizeTimings
	check, report *atomic.Int64
}

func (c countedModel) Step(s model.State, op spec.Op, nowMS int64) []model.Branch {
	if c.tm.check == 0 {
		c.check.Add(1)
	} else {
		c.report.Add(1)
	}
	return c.Model.Step(s, op, nowMS)
}

// countedSplitter is a countedModel of a model.Splitter.
type countedSplitter struct {
	countedModel
	model.Splitter
}

func (c countedSplitter) Step(s model.State, op spec.Op, nowMS int64) []model.Branch {
	return c.countedModel.Step(s, op, nowMS)
}

// A failing linearize reports within 1.5x of its check time: the report
// reads porcupine's one check in words and checks nothing again (it used to
// bisect the history with a check for each step). Time on a shared machine
// is noise, so what is asserted is the work: the report steps the model at
// most half as often as the check did (the visualization walks the
// partial orders the check found, each step once); the times are logged,
// and BenchmarkAFailingLinearizeReport measures them.
func TestAFailingLinearizeReportsWithinItsCheckTime(t *testing.T) {
	// A check that took few steps (a race met early in a short history)
	// leaves the report its walk of the partial orders, a few thousand
	// steps, milliseconds: half of such a check is no bound worth holding.
	const reportFloor = 4096
	for _, name := range []string{"runtime_lease_claim_outside_tx", "client_settle_check_outside_tx"} {
		b, _ := bugs.ByName(name)
		s, _ := stores.Lookup(b.Store())
		// The history is real concurrency: on a loaded machine a seed's
		// race may not be met, so the first of a few seeds that fails is
		// the one measured.
		var outcomes []string
		for seed := int64(2); seed <= 6; seed++ {
			var tm linearizeTimings
			var checkSteps, reportSteps atomic.Int64
			c := linearizeOne(t, broken(b), s, seed, linearizeHooks{timings: &tm,
				model: func(m model.Model) model.Model {
					counted := countedModel{m, &tm, &checkSteps, &reportSteps}
					if sp, ok := m.(model.Splitter); ok {
						return countedSplitter{counted, sp}
					}
					return counted
				}})
			if c.Outcome != reports.Failed {
				outcomes = append(outcomes, fmt.Sprintf("seed %d: %s: %s", seed, c.Outcome, c.Message))
				continue
			}
			t.Logf("%s: seed %d: history recorded in %v, checked in %v (%d model steps), reported in %v (%d model steps): check and report %.2fx the check",
				name, seed, tm.run.Round(time.Millisecond), tm.check.Round(time.Millisecond), checkSteps.Load(), tm.report.Round(time.Millisecond),
				reportSteps.Load(), float64(tm.check+tm.report)/float64(tm.check))
			if checkSteps.Load() == 0 || reportSteps.Load() > max(checkSteps.Load()/2, reportFloor) {
				t.Errorf("%s: the report stepped the model %d times, more than half the check's %d (and more than %d)", name, reportSteps.Load(), checkSteps.Load(), reportFloor)
			}
			outcomes = nil
			break
		}
		if outcomes != nil {
			t.Errorf("%s: no seed failed:\n%s", name, strings.Join(outcomes, "\n"))
		}
	}
}

// Over the wire, every handle of a linearizability run after the first is
// a process of its own on the one database, so that a race between
// processes is real whatever the backend's own concurrency; closing the
// handle ends its process.
func TestLinearizeGivesEveryHandleAProcessOfItsOwn(t *testing.T) {
	r := newRunner(t, served(bugs.Bug{}), Config{})
	open, handles := r.s.opener("continuity", t.TempDir())
	if handles != 2 {
		t.Fatalf("%d handles, want 2", handles)
	}
	clock := clockwork.NewFakeClockAt(linearizability.Epoch)
	ctx := context.Background()
	first, err := open(ctx, clock)
	if err != nil {
		t.Fatal(err)
	}
	second, err := open(ctx, clock)
	if err != nil {
		t.Fatal(err)
	}
	own, ok := second.(ownProcess)
	if !ok || own.e.PID() == r.s.exec.PID() {
		t.Fatalf("the second handle is not a process of its own: %T", second)
	}
	// Both processes work on the one database.
	if _, err := first.Apply(ctx, c.UpsertContinuityRecord{Record: c.Record{Identity: "a", SessionID: "s"}, Fence: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := second.Apply(ctx, c.MaxFencingToken{})
	if err != nil || got != c.FencingToken(3) {
		t.Fatalf("the second process reads %v, %v", got, err)
	}
	first.Close()
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if own.e.Err() != nil {
		t.Fatalf("the second process ended with %v", own.e.Err())
	}
}

// coverageLinearizeSeeds are the seeds of the default linearize run the
// coverage test takes: a default run's seed is the clock's, so any seed
// must do; the test takes two (STORECHECK_FULL_TESTS: twenty).
func coverageLinearizeSeeds() []int64 {
	if fullTests() {
		return sim.SeedRange{First: 1, Last: 20}.Seeds(sim.Shard{})
	}
	// Each seed alone has reached every cell on record: the second keeps
	// a cell reached by chance from failing the test.
	return []int64{1, 2}
}

// Each store's default runs reach every cell of its coverage matrix that
// is not listed unreachable with a reason (stores.Store.Unreachable, and
// IOUnreachable for io): the simulator's default sweep ("storecheck sim"
// without flags: seeds 1..100 at sim.Params' defaults), over its seeds,
// and the default run of "storecheck linearize" (8 clients, 2,000
// operations, 2 handles; Defaults holds the flags to these), one seed at a
// time, since one run is what a user gets. Every cell listed unreachable is
// a cell of the contract and says why.
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
				c := linearizeOne(t, Reference(), k, seed, linearizeHooks{answers: answers})
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
