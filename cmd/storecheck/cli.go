package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// Exit codes.
const (
	exitPassed = 0
	exitFailed = 1
	exitUsage  = 2
)

// stores are the contracts storecheck can check, in report order.
var stores = []string{"continuity", "runtime"}

const usage = `usage: storecheck [run] [flags]

Commands:
  run    run the conformance suite against the embedded reference (the default)

Flags of run:
  --store LIST   stores to check, comma-separated (default: all: %s)
  --seed N       seed that orders the specs (default: from the clock, printed)
  --fail-fast    stop at the first failure
  --verbose      print every spec as it runs
`

// cli runs storecheck with args against h and returns the exit code.
func cli(args []string, stdout, stderr io.Writer, h suite.Harness) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return run(args, stdout, stderr, h)
	case "help":
		fmt.Fprintf(stdout, usage, strings.Join(stores, ","))
		return exitPassed
	}
	fmt.Fprintf(stderr, "storecheck: unknown command %q; accepted: run, help\n", cmd)
	return exitUsage
}

func run(args []string, stdout, stderr io.Writer, h suite.Harness) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	storeList := fs.String("store", strings.Join(stores, ","), "")
	seed := fs.Int64("seed", time.Now().Unix(), "")
	failFast := fs.Bool("fail-fast", false, "")
	verbose := fs.Bool("verbose", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, usage, strings.Join(stores, ","))
			return exitPassed
		}
		fmt.Fprintf(stderr, "storecheck run: %v; accepted flags: --store, --seed, --fail-fast, --verbose\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "storecheck run: unexpected argument %q; accepted flags: --store, --seed, --fail-fast, --verbose\n", fs.Arg(0))
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

	checks := suite.Run(h, suite.Config{Seed: *seed, Stores: selected, FailFast: *failFast, Verbose: *verbose})
	result := reports.Run{Backend: h.Name, Seed: *seed, Checks: checks}
	fmt.Fprintln(stdout)
	reports.WriteText(stdout, result)
	if result.Failed() {
		return exitFailed
	}
	return exitPassed
}
