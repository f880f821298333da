package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/storecheck/storecheck/spec/suite"
)

// Exit codes.
const (
	exitPassed = 0
	exitFailed = 1
	exitUsage  = 2
	// exitBackend: the backend failed (would not start, broke the wire
	// protocol, crashed outside an injected fault): no verdict on its
	// conformance.
	exitBackend = 3
)

// stores are the contracts storecheck can check, in report order.
var stores = []string{"continuity"}

const usage = `usage: storecheck [run] [flags] [-- COMMAND [ARG...]]
       storecheck serve

Commands:
  run    run the conformance suite against the embedded reference (the
         default), or against COMMAND, a program speaking the wire protocol
         (docs/protocol.md)
  serve  serve the reference stores over the wire protocol on stdin/stdout

Flags of run:
  --store LIST   stores to check, comma-separated (default: all: %s)
  --seed N       seed that orders the specs (default: from the clock, printed)
  --fail-fast    stop at the first failure
  --verbose      print every spec as it runs (and COMMAND's stderr)
  --timeout D    how long to wait for each reply of COMMAND (default 5s)

Exit codes: 0 passed, 1 a check failed, 2 usage error, 3 backend failure.
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
	case "serve":
		return serve(args, os.Stdin, stdout, stderr)
	case "help":
		fmt.Fprintf(stdout, usage, strings.Join(stores, ","))
		return exitPassed
	}
	fmt.Fprintf(stderr, "storecheck: unknown command %q; accepted: run, serve, help\n", cmd)
	return exitUsage
}
