package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/reference"
	"github.com/storecheck/storecheck/reports"
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
	// exitInconclusive: nothing failed, but a check could not decide.
	exitInconclusive = 4
)

const usage = `usage: storecheck [COMMAND] [flags] [-- BACKEND [ARG...]]

Commands:
  run        the conformance suite, then the linearizability check, against
             the embedded reference (the default command), or against
             BACKEND, a program speaking the wire protocol (docs/protocol.md)
  linearize  the linearizability check alone: concurrent clients, a recorded
             history, porcupine
  check      check a saved history again, offline: storecheck check HISTORY.json
  sim        the deterministic simulator: seeded schedules of clients, clock
             jumps and crashes, checked step by step; failures shrunk
  replay     run a saved (shrunk) schedule again: storecheck replay FILE
  selftest   every deliberate bug of the reference through every layer: the
             detection table; fails if a bug escapes or the reference is flagged
  serve      serve the reference stores over the wire protocol on stdin/stdout

Flags of run:
  --store LIST   stores to check, comma-separated (default: all: %s)
  --seed N       seed that orders the specs (default: from the clock, printed)
  --fail-fast    stop at the first failure
  --verbose      print every spec as it runs (and BACKEND's stderr)
  --ops N        operations of each store's linearizability check (default 2000)
  --report-dir D where failing checks leave their history and visualization
                 (default storecheck-report)
  --timeout D    how long to wait for each reply of BACKEND (default 5s)

Flags of linearize: --store, --seed, --report-dir, --timeout as above, and
  --clients N --ops N --handles N --check-timeout D --duration D

Flags of sim: --store, --report-dir, --timeout as above, and
  --seed N | --seeds A..B (default 1..100), --shard i/n, --steps N (200),
  --clients N (8), --processes N (2), --workers N, --shrink RUNS (2000),
  --fail-fast, --quiet

Exit codes: 0 passed, 1 a check failed, 2 usage error, 3 backend failure,
4 inconclusive (a check could not decide; nothing failed).
`

// cli runs storecheck with args against h and returns the exit code.
func cli(args []string, stdout, stderr io.Writer, ref reference.Options) int {
	h := reference.Harness(ref)
	args, cfg, err := loadConfig(args)
	if err != nil {
		fmt.Fprintf(stderr, "storecheck: config: %v\n", err)
		return exitUsage
	}
	config = cfg
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return run(args, stdout, stderr, h)
	case "linearize":
		return linearize(args, stdout, stderr, h)
	case "check":
		return check(args, stdout, stderr)
	case "sim":
		return simulation(args, stdout, stderr, h)
	case "replay":
		return replay(args, stdout, stderr, h)
	case "selftest":
		return selftest(args, stdout, stderr)
	case "serve":
		return serve(args, os.Stdin, stdout, stderr, reference.Backend(ref))
	case "help":
		fmt.Fprintf(stdout, usage, strings.Join(stores, ","))
		return exitPassed
	}
	fmt.Fprintf(stderr, "storecheck: unknown command %q; accepted: run, linearize, check, sim, replay, selftest, serve, help\n", cmd)
	return exitUsage
}

// exitCode is a run's exit code: a failure wins over an inconclusive check.
func exitCode(r reports.Run) int {
	switch {
	case r.Failed():
		return exitFailed
	case r.Inconclusive():
		return exitInconclusive
	}
	return exitPassed
}

// parseStores reads a comma-separated --store list, naming what is accepted
// when a name is unknown.
func parseStores(list, cmd string, stderr io.Writer) ([]string, bool) {
	var selected []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if _, ok := kitOf(s); !ok {
			fmt.Fprintf(stderr, "storecheck %s: unknown store %q; accepted: %s\n", cmd, s, strings.Join(stores, ", "))
			return nil, false
		}
		selected = append(selected, s)
	}
	return selected, true
}

// config is the configuration file of this invocation (nil: none).
var config *Config

// bugEnv names a deliberate bug the reference is opened with ("none": the
// reference itself): storecheck selftest sets it for the processes it starts (a "storecheck run" of the
// specs, a "storecheck serve" behind the exec adapter), so that they check
// a broken reference. It is for selftest alone.
const bugEnv = "STORECHECK_SELFTEST_BUG"

// referenceFromEnv is the reference the environment asks for: the correct
// one, or the bug selftest named.
func referenceFromEnv() (reference.Options, error) {
	name := os.Getenv(bugEnv)
	if name == "" || name == "none" {
		return reference.Options{}, nil
	}
	b, ok := bugs.ByName(name)
	if !ok {
		return reference.Options{}, fmt.Errorf("%s=%q names no deliberate bug", bugEnv, name)
	}
	return reference.Options{Bug: b}, nil
}

// writeReports writes every form of the report (JUnit XML, JSON, HTML, text)
// into the report folder when --report-dir was given.
func writeReports(fs *flag.FlagSet, dir string, r reports.Run, stderr io.Writer) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "report-dir" })
	if !given {
		return
	}
	if err := reports.WriteDir(dir, r); err != nil {
		fmt.Fprintf(stderr, "storecheck: could not write the reports: %v\n", err)
	}
}
