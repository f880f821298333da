package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/storecheck/storecheck/linearizability"
	"io"
	"strings"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

const runFlags = "accepted flags: --store, --layers, --seed, --fail-fast, --verbose, --ops, --report-dir, --timeout"

// run is "storecheck run": the conformance suite, then the linearizability
// check, against one backend: h, or the program named after "--", run
// through the exec adapter.
func run(args []string, stdout, stderr io.Writer, h suite.Harness) int {
	args, command, ok := splitCommand(args, "run", runFlags, stderr)
	if !ok {
		return exitUsage
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	storeList := fs.String("store", strings.Join(stores, ","), "")
	seed := fs.Int64("seed", time.Now().Unix(), "")
	failFast := fs.Bool("fail-fast", false, "")
	verbose := fs.Bool("verbose", false, "")
	layerList := fs.String("layers", "spec,linearizability", "")
	ops := fs.Int("ops", 2000, "")
	reportDir := fs.String("report-dir", "storecheck-report", "")
	timeout := fs.Duration("timeout", adapters.DefaultTimeout, "")
	if err := config.apply(fs); err != nil {
		fmt.Fprintf(stderr, "storecheck run: %v\n", err)
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, usage, strings.Join(stores, ","))
			return exitPassed
		}
		fmt.Fprintf(stderr, "storecheck run: %v; %s\n", err, runFlags)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "storecheck run: unexpected argument %q; %s\n", fs.Arg(0), runFlags)
		return exitUsage
	}
	selected, ok := parseStores(*storeList, "run", stderr)
	if !ok {
		return exitUsage
	}
	layers := map[string]bool{}
	for _, l := range strings.Split(*layerList, ",") {
		if l = strings.TrimSpace(l); l != "spec" && l != "linearizability" {
			fmt.Fprintf(stderr, "storecheck run: unknown layer %q; accepted: spec, linearizability\n", l)
			return exitUsage
		}
		layers[l] = true
	}
	if *ops <= 0 {
		fmt.Fprintf(stderr, "storecheck run: --ops must be at least 1, got %d\n", *ops)
		return exitUsage
	}

	h, backend, err := harnessFor(h, config.backend(command), *timeout, *verbose, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "storecheck run: backend failure: %v\n", err)
		return exitBackend
	}
	if backend != nil {
		defer backend.Close()
	}

	started := time.Now()
	result := reports.Run{Backend: h.Name, Seed: *seed}
	if layers["spec"] {
		result.Checks = suite.Run(h, suite.Config{Seed: *seed, Stores: selected, FailFast: *failFast, Verbose: *verbose})
	}
	if layers["linearizability"] && !(*failFast && result.Failed()) {
		cfg := linearizeConfig{
			run:       linearizability.Config{Seed: *seed, Ops: *ops},
			timeout:   60 * time.Second,
			reportDir: *reportDir,
			command:   fmt.Sprintf("storecheck linearize --ops %d", *ops),
		}
		for _, name := range selected {
			k, _ := kitOf(name)
			c := linearizeStore(context.Background(), h, k, cfg, stderr)
			result.Checks = append(result.Checks, c)
			if *failFast && c.Outcome == reports.Failed {
				break
			}
		}
	}
	result.Tool, result.Command, result.Duration = "storecheck", "storecheck run "+strings.Join(args, " "), time.Since(started)
	fmt.Fprintln(stdout)
	reports.WriteText(stdout, result)
	writeReports(fs, *reportDir, result, stderr)
	if backend != nil && backend.Err() != nil {
		fmt.Fprintf(stderr, "storecheck run: backend failure (not a conformance verdict): %v\n", backend.Err())
		return exitBackend
	}
	return exitCode(result)
}
