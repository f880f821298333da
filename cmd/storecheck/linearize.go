package main

import (
	"context"
	"fmt"
	"io"
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

// linearizeConfig is what a linearizability run of one store needs.
type linearizeConfig struct {
	run       linearizability.Config
	timeout   time.Duration
	reportDir string
	// command reproduces the run (without --store and --seed, which are
	// added, and without the backend, which is backend: " -- BACKEND...",
	// "" for the embedded reference).
	command, backend string
	// answers, when set, counts the history's answers by cell of the
	// store's coverage matrix.
	answers map[string]int
	// timings, when set, receives where the time went; model, when set,
	// wraps the store's model (a test counts its steps).
	timings *linearizeTimings
	model   func(model.Model) model.Model
}

// linearizeTimings are where one store's linearizability check spent its
// time: recording the history, porcupine's check, and the report (the
// explanation, the saved history and its visualization).
type linearizeTimings struct {
	run, check, report time.Duration
}

// linearizeStore runs concurrent clients against store s of backend b,
// checks the history, and writes a failure folder when it is not
// linearizable.
func linearizeStore(ctx context.Context, b adapters.Backend, s stores.Store, cfg linearizeConfig, stderr io.Writer) reports.Check {
	check := reports.Check{Store: s.Name(), Layer: "linearizability"}
	dir, err := os.MkdirTemp("", "storecheck-linearize-")
	if err != nil {
		check.Outcome, check.Message = reports.Failed, err.Error()
		return check
	}
	defer os.RemoveAll(dir)
	if s.Model == nil {
		check.Name = "concurrent history"
		check.Outcome, check.Message = reports.Skipped, "storecheck has no linearizability model of the "+s.Name()+" store yet"
		return check
	}
	open, handles := opener(b, s, dir)
	if open == nil {
		check.Name = "concurrent history"
		check.Outcome, check.Message = reports.Skipped, "backend does not implement the "+s.Name()+" store"
		return check
	}
	rc := cfg.run
	if rc.Handles == 0 || rc.Handles > handles {
		rc.Handles = handles
	}
	rc = rc.WithDefaults()
	check.Name = fmt.Sprintf("%d clients, %d operations, %d handles, seed %d", rc.Clients, rc.Ops, rc.Handles, rc.Seed)
	start := time.Now()
	hist, err := linearizability.Run(ctx, s.Contract, open, s.Workload(), rc)
	if err != nil {
		check.Outcome, check.Message = reports.Failed, "run: "+err.Error()
		return check
	}
	hist.Command = fmt.Sprintf("%s --store %s --seed %d%s", cfg.command, s.Name(), rc.Seed, cfg.backend)
	hist.Capabilities = b.Info().CapabilitiesOf(s.Name()).Capabilities
	if cfg.answers != nil {
		for k, n := range hist.Answers(s.Contract) {
			cfg.answers[k] += n
		}
	}
	m := model.For(s.Model, hist.Capabilities)
	if cfg.model != nil {
		m = cfg.model(m)
	}
	ran := time.Now()
	res, err := linearizability.Check(m, hist, cfg.timeout)
	checked := time.Now()
	check.Duration = checked.Sub(start)
	if cfg.timings != nil {
		cfg.timings.run, cfg.timings.check = ran.Sub(start), checked.Sub(ran)
		defer func() { cfg.timings.report = time.Since(checked) }()
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
		check.Message = res.Headline() + "\n" + strings.TrimRight(res.Explain(s.Contract), "\n")
		check.Details = res.Excerpt(40)
	default:
		check.Outcome = reports.Inconclusive
		check.Message = "the check ran out of time (" + cfg.timeout.String() + "): " + res.Summary()
	}
	check.Reproduce = hist.Command
	folder, err := linearizability.WriteFailure(cfg.reportDir, hist, res, s.Contract)
	if err != nil {
		fmt.Fprintf(stderr, "storecheck: could not write the failure report: %v\n", err)
		return check
	}
	check.Message += "\nhistory and visualization in " + folder
	if rel, err := filepath.Rel(cfg.reportDir, folder); err == nil {
		check.Artifacts = []reports.Artifact{
			{Name: "visualization", Path: filepath.Join(rel, "visualization.html")},
			{Name: "history", Path: filepath.Join(rel, "history.json")},
		}
	}
	return check
}

// linearize is "storecheck linearize": the linearizability check alone, for
// one seed or a sweep of seeds (sharded for CI matrix jobs), against the
// reference or the program after "--".
func linearize(inv invocation) int {
	f, stdout, stderr := inv.f, inv.stdout, inv.stderr
	selected, ok := parseStores(f.str("store"), "linearize", stderr)
	if !ok {
		return exitUsage
	}
	if !f.atLeastOne(stderr, "clients", "ops", "handles") {
		return exitUsage
	}
	clients, ops, handles := f.num("clients"), f.num("ops"), f.num("handles")
	sr, sh, err := sweep(f, fmt.Sprint(time.Now().Unix()))
	if err != nil {
		fmt.Fprintf(stderr, "storecheck linearize: %v\n", err)
		return exitUsage
	}
	b, backend, err := backendFor(inv.ref, inv.backend, f.dur("reply-timeout"), false, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "storecheck linearize: backend failure: %v\n", err)
		return exitBackend
	}
	suffix := backendSuffix(inv.backend)
	if backend != nil {
		defer backend.Close()
	}
	seedList := sr.Seeds(sh)
	started := time.Now()
	result := reports.Run{Tool: "storecheck", Command: "storecheck linearize " + strings.Join(f.line, " ") + suffix, Backend: b.Info().Name, Seed: sr.First}
	progress := reports.StartProgress(stderr, progressMode(f.on("quiet")), "histories", len(seedList)*len(selected))
	defer progress.Stop()
	answers := map[string]map[string]int{}
	for _, name := range selected {
		answers[name] = map[string]int{}
	}
sweep:
	for _, seed := range seedList {
		for _, name := range selected {
			if backend != nil && backend.Err() != nil {
				result.Checks = append(result.Checks, reports.Check{Store: name, Layer: "linearizability", Name: fmt.Sprintf("seed %d", seed),
					Outcome: reports.NotRun, Message: suite.NotRunMessage})
				progress.Done(1)
				continue
			}
			s, _ := stores.Lookup(name)
			cfg := linearizeConfig{
				run:       linearizability.Config{Clients: clients, Ops: ops, Handles: handles, Seed: seed, Duration: f.dur("duration")},
				timeout:   f.dur("check-timeout"),
				reportDir: f.str("report-dir"),
				command:   "storecheck linearize" + always(f, "clients", "ops", "handles") + changing(f, "duration", "check-timeout", "reply-timeout"),
				backend:   suffix,
				answers:   answers[name],
			}
			c := linearizeStore(context.Background(), b, s, cfg, stderr)
			if backend != nil && backend.Err() != nil { // it was in flight
				c.Outcome, c.Message, c.Reproduce, c.Details, c.Artifacts = reports.NotRun, suite.InFlightMessage, "", "", nil
			}
			result.Checks = append(result.Checks, c)
			progress.Done(1)
			progress.Ops(ops)
			if c.Outcome == reports.Failed {
				progress.Failure()
				if f.on("fail-fast") {
					break sweep
				}
			}
		}
	}
	progress.Stop()
	result.Coverage = layerCoverage(selected, "linearizability", "seeds "+sr.String()+shardText(sh), answers)
	if backend != nil && backend.Err() != nil {
		result.Checks = append(result.Checks, backendFailure(backend.Err(), result.Checks))
	}
	result.Duration = time.Since(started)
	reports.WriteText(stdout, result)
	writeReports(f, result, stderr)
	if backend != nil && backend.Err() != nil {
		fmt.Fprintf(stderr, "storecheck linearize: backend failure (not a conformance verdict): %v\n", backend.Err())
		return exitBackend
	}
	return exitCode(result)
}

// check is "storecheck check HISTORY.json": a saved history checked again,
// offline.
func check(inv invocation) int {
	f, stdout, stderr := inv.f, inv.stdout, inv.stderr
	file := f.args()[0]
	hist, err := linearizability.ReadFile(file, stores.Contracts())
	if err != nil {
		fmt.Fprintf(stderr, "storecheck check: %v\n", err)
		return exitUsage
	}
	s, _ := stores.Lookup(hist.Store)
	if s.Model == nil {
		fmt.Fprintf(stderr, "storecheck check: storecheck has no linearizability model of the %s store yet\n", hist.Store)
		return exitUsage
	}
	res, err := linearizability.Check(model.For(s.Model, hist.Capabilities), hist, f.dur("check-timeout"))
	if err != nil {
		fmt.Fprintf(stderr, "storecheck check: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "%s: %d operations of the %s store: %s\n", file, len(hist.Entries), hist.Store, res.Summary())
	switch res.Verdict {
	case linearizability.Linearizable:
		return exitPassed
	case linearizability.Illegal:
		fmt.Fprintf(stdout, "%s\n%s", res.Headline(), res.Explain(s.Contract))
		return exitFailed
	}
	return exitInconclusive
}
