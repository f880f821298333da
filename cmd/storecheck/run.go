package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// run is "storecheck run": the conformance suite, then the linearizability
// check, against one backend: the reference, or the program named after
// "--", run through the exec adapter.
func run(inv invocation) int {
	f, stderr := inv.f, inv.stderr
	selected, ok := parseStores(f.str("store"), "run", stderr)
	if !ok {
		return exitUsage
	}
	layers := map[string]bool{}
	for _, l := range strings.Split(f.str("layers"), ",") {
		if l = strings.TrimSpace(l); l != "spec" && l != "linearizability" {
			fmt.Fprintf(stderr, "storecheck run: unknown layer %q; accepted: spec, linearizability\n", l)
			return exitUsage
		}
		layers[l] = true
	}
	if !f.atLeastOne(stderr, "ops") {
		return exitUsage
	}
	seed, ok := f.num64("seed")
	if !ok {
		seed = time.Now().Unix()
	}
	failFast, verbose, ops := f.on("fail-fast"), f.on("verbose"), f.num("ops")

	b, backend, err := backendFor(inv.ref, inv.backend, f.dur("reply-timeout"), verbose, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "storecheck run: backend failure: %v\n", err)
		return exitBackend
	}
	if backend != nil {
		defer backend.Close()
	}
	// The specs' answers are counted on their way back, for the coverage
	// matrix.
	specAnswers := &adapters.Answers{}
	h := suite.HarnessOf(adapters.Counting(b, specAnswers))
	suffix := backendSuffix(inv.backend)

	// backendErr is the backend's own failure: from then on nothing runs,
	// and the failure is reported once (backendFailure).
	backendErr := func() error { return nil }
	if backend != nil {
		backendErr = backend.Err
	}
	started := time.Now()
	result := reports.Run{Backend: h.Name, Seed: seed}
	if layers["spec"] {
		result.Checks = specChecks(suite.Run(h, suite.Config{Seed: seed, Stores: selected, FailFast: failFast, Verbose: verbose, BackendErr: backendErr}),
			func(store string) string {
				return fmt.Sprintf("storecheck run --store %s --layers spec --seed %d%s%s", store, seed, changing(f, "reply-timeout"), suffix)
			})
		specs := map[string]map[string]int{}
		for _, name := range selected {
			specs[name] = specAnswers.Of(name)
		}
		result.Coverage = layerCoverage(selected, suite.Layer, "", specs)
	}
	if layers["linearizability"] && !(failFast && result.Failed()) {
		cfg := linearizeConfig{
			run:       linearizability.Config{Seed: seed, Ops: ops},
			timeout:   f.dur("check-timeout"),
			reportDir: f.str("report-dir"),
			command:   fmt.Sprintf("storecheck linearize --ops %d", ops) + changing(f, "check-timeout", "reply-timeout"),
			backend:   suffix,
		}
		answers := map[string]map[string]int{}
		for _, name := range selected {
			if backendErr() != nil {
				result.Checks = append(result.Checks, reports.Check{Store: name, Layer: "linearizability", Name: "concurrent history",
					Outcome: reports.NotRun, Message: suite.NotRunMessage})
				continue
			}
			s, _ := stores.Lookup(name)
			answers[name] = map[string]int{}
			cfg.answers = answers[name]
			c := linearizeStore(context.Background(), b, s, cfg, stderr)
			if backendErr() != nil { // it was in flight
				c.Outcome, c.Message, c.Reproduce, c.Details, c.Artifacts = reports.NotRun, suite.InFlightMessage, "", "", nil
			}
			result.Checks = append(result.Checks, c)
			if failFast && c.Outcome == reports.Failed {
				break
			}
		}
		result.Coverage = append(result.Coverage, layerCoverage(selected, "linearizability", fmt.Sprintf("seed %d", seed), answers)...)
	}
	if err := backendErr(); err != nil {
		result.Checks = append(result.Checks, backendFailure(err, result.Checks))
	}
	result.Tool, result.Command, result.Duration = "storecheck", "storecheck run "+strings.Join(f.line, " ")+suffix, time.Since(started)
	fmt.Fprintln(inv.stdout)
	reports.WriteText(inv.stdout, result)
	writeReports(f, result, stderr)
	if backend != nil && backend.Err() != nil {
		fmt.Fprintf(stderr, "storecheck run: backend failure (not a conformance verdict): %v\n", backend.Err())
		return exitBackend
	}
	return exitCode(result)
}

// specChecks are the suite's results as checks of the spec layer; a
// failure carries reproduce's command for its store.
func specChecks(rs []suite.Result, reproduce func(store string) string) []reports.Check {
	out := make([]reports.Check, len(rs))
	for i, r := range rs {
		out[i] = reports.Check{Store: r.Store, Layer: suite.Layer, Name: r.Name, Outcome: reports.Outcome(r.Outcome),
			Message: r.Message, Duration: r.Duration}
		if r.Outcome != suite.Passed && r.Outcome != suite.Skipped {
			out[i].Reproduce = reproduce(r.Store)
		}
	}
	return out
}

// backendFailure is a backend's own failure as the one check that reports
// it: its cause (with the backend's last stderr lines, which the exec
// adapter quotes), the check in flight when it came, and how many checks it
// kept from running (NotRun among checks).
func backendFailure(err error, checks []reports.Check) reports.Check {
	c := reports.Check{Store: "backend", Layer: reports.BackendLayer, Name: "the backend failed (no verdict on its conformance)",
		Outcome: reports.Failed}
	notRun := 0
	var inFlight string
	for _, k := range checks {
		if k.Outcome != reports.NotRun {
			continue
		}
		notRun++
		if k.Message == suite.InFlightMessage {
			inFlight = k.Store + "/" + k.Layer + ": " + k.Name
		}
	}
	c.Message = err.Error()
	if inFlight != "" {
		c.Message = "while " + inFlight + " ran: " + c.Message
	}
	if notRun > 0 {
		c.Message += fmt.Sprintf("\n%d checks not run", notRun)
	}
	return c
}
