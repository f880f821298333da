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

	started := time.Now()
	result := reports.Run{Backend: h.Name, Seed: seed}
	if layers["spec"] {
		result.Checks = specChecks(suite.Run(h, suite.Config{Seed: seed, Stores: selected, FailFast: failFast, Verbose: verbose}))
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
			command:   fmt.Sprintf("storecheck linearize --ops %d", ops),
		}
		answers := map[string]map[string]int{}
		for _, name := range selected {
			s, _ := stores.Lookup(name)
			answers[name] = map[string]int{}
			cfg.answers = answers[name]
			c := linearizeStore(context.Background(), b, s, cfg, stderr)
			result.Checks = append(result.Checks, c)
			if failFast && c.Outcome == reports.Failed {
				break
			}
		}
		result.Coverage = append(result.Coverage, layerCoverage(selected, "linearizability", fmt.Sprintf("seed %d", seed), answers)...)
	}
	result.Tool, result.Command, result.Duration = "storecheck", "storecheck run "+strings.Join(f.line, " "), time.Since(started)
	fmt.Fprintln(inv.stdout)
	reports.WriteText(inv.stdout, result)
	writeReports(f, result, stderr)
	if backend != nil && backend.Err() != nil {
		fmt.Fprintf(stderr, "storecheck run: backend failure (not a conformance verdict): %v\n", backend.Err())
		return exitBackend
	}
	return exitCode(result)
}

// specChecks are the suite's results as checks of the spec layer.
func specChecks(rs []suite.Result) []reports.Check {
	out := make([]reports.Check, len(rs))
	for i, r := range rs {
		out[i] = reports.Check{Store: r.Store, Layer: suite.Layer, Name: r.Name, Outcome: reports.Outcome(r.Outcome),
			Message: r.Message, Duration: r.Duration}
	}
	return out
}
