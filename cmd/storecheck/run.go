package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

const runFlags = "accepted flags: --store, --seed, --fail-fast, --verbose, --timeout"

// run is "storecheck run": the conformance suite against one backend: h, or
// the program named after "--", run through the exec adapter.
func run(args []string, stdout, stderr io.Writer, h suite.Harness) int {
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
		if len(command) == 0 {
			fmt.Fprintf(stderr, "storecheck run: no command after --; %s\n", runFlags)
			return exitUsage
		}
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	storeList := fs.String("store", strings.Join(stores, ","), "")
	seed := fs.Int64("seed", time.Now().Unix(), "")
	failFast := fs.Bool("fail-fast", false, "")
	verbose := fs.Bool("verbose", false, "")
	timeout := fs.Duration("timeout", adapters.DefaultTimeout, "")
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
	var selected []string
	for _, s := range strings.Split(*storeList, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(stores, s) {
			fmt.Fprintf(stderr, "storecheck run: unknown store %q; accepted: %s\n", s, strings.Join(stores, ", "))
			return exitUsage
		}
		selected = append(selected, s)
	}

	var backend *adapters.Exec
	if command != nil {
		o := adapters.ExecOptions{Command: command, Timeout: *timeout}
		if *verbose {
			o.Stderr = stderr
		}
		var err error
		if backend, err = adapters.StartExec(context.Background(), o); err != nil {
			fmt.Fprintf(stderr, "storecheck run: backend failure: %v\n", err)
			return exitBackend
		}
		defer backend.Close()
		h = adapters.Harness(backend)
	}

	checks := suite.Run(h, suite.Config{Seed: *seed, Stores: selected, FailFast: *failFast, Verbose: *verbose})
	result := reports.Run{Backend: h.Name, Seed: *seed, Checks: checks}
	fmt.Fprintln(stdout)
	reports.WriteText(stdout, result)
	if backend != nil && backend.Err() != nil {
		fmt.Fprintf(stderr, "storecheck run: backend failure (not a conformance verdict): %v\n", backend.Err())
		return exitBackend
	}
	if result.Failed() {
		return exitFailed
	}
	return exitPassed
}
