package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// linearize is the linearizability layer: for every seed, one history of
// every store asked, checked.
func (r *runner) linearize() {
	cfg := r.cfg
	sr := cfg.SeedsOf(LayerLinearizability)
	seeds := sr.Seeds(cfg.Shard)
	var names []string
	answers := map[string]map[string]int{}
	for _, name := range cfg.Stores {
		reg, _ := stores.Lookup(name)
		switch {
		case reg.Model == nil:
			r.add(reports.Check{Store: name, Layer: string(LayerLinearizability), Name: "concurrent history",
				Outcome: reports.Skipped, Message: "storecheck has no linearizability model of the " + name + " store yet"})
		case !r.s.implements(name):
			r.add(reports.Check{Store: name, Layer: string(LayerLinearizability), Name: "concurrent history",
				Outcome: reports.Skipped, Message: "backend does not implement the " + name + " store"})
		default:
			names = append(names, name)
			answers[name] = map[string]int{}
		}
	}
	progress := cfg.progress("histories", len(seeds)*len(names))
	defer progress.Stop()
sweep:
	for _, seed := range seeds {
		for _, name := range names {
			if r.s.err() != nil {
				r.add(reports.Check{Store: name, Layer: string(LayerLinearizability), Name: fmt.Sprintf("seed %d", seed),
					Outcome: reports.NotRun, Message: suite.NotRunMessage})
				progress.Done(1)
				continue
			}
			reg, _ := stores.Lookup(name)
			c := r.linearizeStore(reg, seed, linearizeHooks{answers: answers[name]})
			if r.s.err() != nil { // it was in flight
				c.Outcome, c.Message, c.Recheck, c.Reproduce, c.Details, c.Artifacts = reports.NotRun, suite.InFlightMessage, "", "", "", nil
			}
			r.add(c)
			progress.Done(1)
			progress.Ops(cfg.Ops)
			if c.Outcome == reports.Failed {
				progress.Failure()
				if cfg.FailFast {
					break sweep
				}
			}
		}
	}
	r.result.Coverage = append(r.result.Coverage, layerCoverage(names, string(LayerLinearizability), overText(sr, cfg.Shard), answers)...)
}

// linearizeHooks are what a caller may add to one store's check: a count
// of the history's answers by cell of the store's coverage matrix; where
// the time went; the store's model wrapped (a test counts its steps).
type linearizeHooks struct {
	answers map[string]int
	timings *linearizeTimings
	model   func(model.Model) model.Model
}

// linearizeTimings are where one store's linearizability check spent its
// time: recording the history, porcupine's check, and the report (the
// explanation, the saved history and its visualization).
type linearizeTimings struct {
	run, check, report time.Duration
}

// linearizeStore runs concurrent clients against store st, checks the
// history, and writes a failure folder when it is not linearizable.
func (r *runner) linearizeStore(st stores.Store, seed int64, hooks linearizeHooks) reports.Check {
	cfg := r.cfg
	check := reports.Check{Store: st.Name(), Layer: string(LayerLinearizability), Name: "concurrent history"}
	dir, err := os.MkdirTemp("", "storecheck-linearize-")
	if err != nil {
		check.Outcome, check.Message = reports.Failed, err.Error()
		return check
	}
	defer os.RemoveAll(dir)
	open, handles := r.s.opener(st.Name(), dir)
	if open == nil {
		check.Outcome, check.Message = reports.Skipped, "backend does not implement the "+st.Name()+" store"
		return check
	}
	rc := linearizability.Config{Clients: cfg.Clients, Ops: cfg.Ops, Handles: min(cfg.Handles, handles), Seed: seed, Duration: cfg.Duration}.WithDefaults()
	check.Name = fmt.Sprintf("%d clients, %d operations, %d handles, seed %d", rc.Clients, rc.Ops, rc.Handles, rc.Seed)
	start := time.Now()
	hist, err := linearizability.Run(r.ctx, st.Contract, open, st.Workload(), rc)
	if berr := r.s.err(); berr != nil {
		// A history a failed backend or a stalled kit left is no verdict:
		// the run reports the backend's failure once, or the stall.
		check.Outcome, check.Message = reports.NotRun, "not run: the backend failed while this history ran (the backend failure is reported once, apart)"
		if adapters.IsStall(berr) {
			check.Outcome, check.Message = reports.Inconclusive, "the kit stalled while this history ran, so it decides nothing: "+berr.Error()
		}
		return check
	}
	if err != nil {
		check.Outcome, check.Message = reports.Failed, "run: "+err.Error()
		return check
	}
	hist.Command = r.lines.linearize(st.Name(), rc.Seed)
	hist.Capabilities = r.s.caps(st.Name())
	if hooks.answers != nil {
		for k, n := range hist.Answers(st.Contract) {
			hooks.answers[k] += n
		}
	}
	m := model.For(st.Model, hist.Capabilities)
	if hooks.model != nil {
		m = hooks.model(m)
	}
	ran := time.Now()
	res, err := linearizability.Check(m, hist, cfg.CheckTimeout)
	checked := time.Now()
	check.Duration = checked.Sub(start)
	if hooks.timings != nil {
		hooks.timings.run, hooks.timings.check = ran.Sub(start), checked.Sub(ran)
		defer func() { hooks.timings.report = time.Since(checked) }()
	}
	if err != nil {
		check.Outcome, check.Message = reports.Failed, "history: "+err.Error()
		return check
	}
	switch res.Verdict {
	case linearizability.Linearizable:
		check.Outcome = reports.Passed
		return check
	case linearizability.Illegal:
		// The explanation is porcupine's one check read in words: every
		// failing part, smallest first, with the operation no order could
		// place; nothing is checked again.
		check.Outcome = reports.Failed
		check.Message = res.Headline() + "\n" + strings.TrimRight(res.Explain(st.Contract), "\n")
		check.Details = res.Excerpt(40)
	default:
		check.Outcome = reports.Inconclusive
		check.Message = "the check ran out of time (" + cfg.CheckTimeout.String() + "): " + res.Summary()
	}
	check.Reproduce = hist.Command
	folder, err := linearizability.WriteFailure(cfg.ReportDir, hist, res, st.Contract, r.lines.recheck)
	if err != nil {
		cfg.logf("storecheck: could not write the failure report: %v", err)
		return check
	}
	check.Message += "\nhistory and visualization in " + folder
	check.Recheck = r.lines.recheck(filepath.Join(folder, "history.json"))
	if rel, err := filepath.Rel(cfg.ReportDir, folder); err == nil {
		check.Artifacts = []reports.Artifact{
			{Name: "visualization", Path: filepath.Join(rel, "visualization.html")},
			{Name: "history", Path: filepath.Join(rel, "history.json")},
		}
	}
	return check
}

// HistoryCheck is a saved history checked again, offline.
type HistoryCheck struct {
	History linearizability.History
	Result  linearizability.Result
	// Store is the history's store.
	Store Store
}

// CheckHistory checks the history saved at path again (a failing
// linearizability check's history.json), porcupine given timeout.
func CheckHistory(path string, timeout time.Duration) (HistoryCheck, error) {
	hist, err := linearizability.ReadFile(path, stores.Contracts())
	if err != nil {
		return HistoryCheck{}, err
	}
	st, _ := StoreNamed(hist.Store)
	if st.Model == nil {
		return HistoryCheck{}, fmt.Errorf("storecheck has no linearizability model of the %s store yet", hist.Store)
	}
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	res, err := linearizability.Check(model.For(st.Model, hist.Capabilities), hist, timeout)
	if err != nil {
		return HistoryCheck{}, err
	}
	return HistoryCheck{History: hist, Result: res, Store: st}, nil
}

// layerCoverage is the coverage matrix of each store named that layer
// counted (answers by store, by cell), over what it counted; a store the
// layer did not count has none.
func layerCoverage(names []string, layer, over string, answers map[string]map[string]int) []reports.Coverage {
	var out []reports.Coverage
	for _, name := range names {
		s, ok := stores.Lookup(name)
		counts, counted := answers[name]
		if !ok || !counted || len(counts) == 0 {
			continue
		}
		out = append(out, s.Coverage(layer, over, counts))
	}
	return out
}

// overText is what a sweep's counts are over: "seed 7", "seeds 1..100",
// with the shard when it is one of several.
func overText(sr SeedRange, sh Shard) string {
	text := "seeds " + sr.String()
	if sr.First == sr.Last {
		text = "seed " + sr.String()
	}
	if sh.N > 1 {
		text += fmt.Sprintf(" (shard %d/%d)", sh.I, sh.N)
	}
	return text
}
