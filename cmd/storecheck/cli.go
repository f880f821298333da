package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/storecheck/storecheck/spec/suite"
)

// Exit codes.
const (
	exitPassed = 0
	exitFailed = 1
	exitUsage  = 2
)

// stores are the contracts storecheck can check, in report order.
var stores = []string{"continuity"}

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
