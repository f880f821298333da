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
)

// linearizeConfig is what a linearizability run of one store needs.
type linearizeConfig struct {
	run       linearizability.Config
	timeout   time.Duration
	reportDir string
	// command reproduces the run (without --seed, which is added).
	command string
	// answers, when set, counts the history's answers by cell of the
	// store's coverage matrix.
	answers map[string]int
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
	hist.Command = fmt.Sprintf("%s --store %s --seed %d", cfg.command, s.Name(), rc.Seed)
	hist.Capabilities = b.Info().Capabilities.Capabilities
	if cfg.answers != nil {
		for k, n := range hist.Answers(s.Contract) {
			cfg.answers[k] += n
		}
	}
	m := model.For(s.Model, hist.Capabilities)
	res, err := linearizability.Check(m, hist, cfg.timeout)
	check.Duration = time.Since(start)
	if err != nil {
		check.Outcome, check.Message = reports.Failed, "history: "+err.Error()
		return check
	}
	switch res.Verdict {
	case linearizability.Linearizable:
		check.Outcome = reports.Passed
		return check
	case linearizability.Illegal:
		check.Outcome = reports.Failed
		check.Message = "no sequential order of the history is one the contract allows: " + res.Summary()
	default:
		check.Outcome = reports.Inconclusive
		check.Message = "the check ran out of time (" + cfg.timeout.String() + "): " + res.Summary()
	}
	check.Reproduce = hist.Command
	if res.Verdict == linearizability.Illegal {
		check.Details = minimalHistory(s, hist, cfg.timeout)
	}
	folder, err := linearizability.WriteFailure(cfg.reportDir, hist, res)
	if err != nil {
		fmt.Fprintf(stderr, "storecheck: could not write the failure report: %v\n", err)
		return check
	}
	check.Message += "; history and visualization in " + folder
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
	suffix := ""
	if backend != nil {
		defer backend.Close()
		suffix = " -- " + strings.Join(inv.backend, " ")
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
			s, _ := stores.Lookup(name)
			cfg := linearizeConfig{
				run:       linearizability.Config{Clients: clients, Ops: ops, Handles: handles, Seed: seed, Duration: f.dur("duration")},
				timeout:   f.dur("check-timeout"),
				reportDir: f.str("report-dir"),
				command:   fmt.Sprintf("storecheck linearize --clients %d --ops %d --handles %d", clients, ops, handles),
				answers:   answers[name],
			}
			c := linearizeStore(context.Background(), b, s, cfg, stderr)
			if c.Reproduce != "" {
				c.Reproduce += suffix
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
		return exitFailed
	}
	return exitInconclusive
}

// minimalHistory is what a person reads of a failing history: the smallest
// independent part that fails, cut to its shortest failing prefix, whose
// last operations are where it went wrong.
func minimalHistory(s stores.Store, hist linearizability.History, timeout time.Duration) string {
	part := &hist
	m := model.For(s.Model, hist.Capabilities)
	if small := linearizability.Smallest(m, hist, timeout); small != nil {
		part = small
	}
	prefix := linearizability.ShortestPrefix(m, *part, timeout)
	if prefix == nil {
		return ""
	}
	const tail = 40
	entries := prefix.Entries
	text := fmt.Sprintf("%d of %d operations are one independent part that fails; its shortest failing prefix has %d operations", len(part.Entries), len(hist.Entries), len(entries))
	if len(entries) > tail {
		text += fmt.Sprintf("; the last %d of them, where it went wrong", tail)
		entries = entries[len(entries)-tail:]
	}
	return text + ":\n" + linearizability.History{Entries: entries}.Text()
}
