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

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// run is "storecheck run": the conformance suite, then the linearizability
// check, against one backend.
func run(args []string, stdout, stderr io.Writer, h suite.Harness) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	storeList := fs.String("store", strings.Join(stores, ","), "")
	seed := fs.Int64("seed", time.Now().Unix(), "")
	failFast := fs.Bool("fail-fast", false, "")
	verbose := fs.Bool("verbose", false, "")
	ops := fs.Int("ops", 2000, "")
	reportDir := fs.String("report-dir", "storecheck-report", "")
	const accepted = "accepted flags: --store, --seed, --fail-fast, --verbose, --ops, --report-dir"
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, usage, strings.Join(stores, ","))
			return exitPassed
		}
		fmt.Fprintf(stderr, "storecheck run: %v; %s\n", err, accepted)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "storecheck run: unexpected argument %q; %s\n", fs.Arg(0), accepted)
		return exitUsage
	}
	selected, ok := parseStores(*storeList, "run", stderr)
	if !ok {
		return exitUsage
	}
	if *ops <= 0 {
		fmt.Fprintf(stderr, "storecheck run: --ops must be at least 1, got %d\n", *ops)
		return exitUsage
	}

	checks := suite.Run(h, suite.Config{Seed: *seed, Stores: selected, FailFast: *failFast, Verbose: *verbose})
	result := reports.Run{Backend: h.Name, Seed: *seed, Checks: checks}
	if !(*failFast && result.Failed()) {
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
	fmt.Fprintln(stdout)
	reports.WriteText(stdout, result)
	return exitCode(result)
}
