// Command storecheck checks a store backend against the contracts: the
// embedded reference when no backend is named, else a program speaking the
// wire protocol (docs/protocol.md), named after "--".
//
//	storecheck run      the conformance suite, then the linearizability check
//	                    (the default command: storecheck alone runs it)
//	storecheck linearize
//	                    the linearizability check alone, one seed or a sweep
//	storecheck check    a saved history checked again, offline
//	storecheck sim      the deterministic simulator: seeded schedules, shrunk
//	storecheck replay   a saved schedule run again
//	storecheck merge    the report folders of a sweep's shards made one report
//	storecheck selftest every deliberate bug through every layer: the table
//	storecheck serve    the reference stores over the wire protocol
//	storecheck help     every command's flags with their defaults
//
// The command is the shell of package conformance, which runs every check:
// it parses the flags and storecheck.json into a conformance.Config, prints
// what the run found and chooses the exit code. Every flag is defined once
// (options.go) and shared by the commands that take it and by
// storecheck.json; "storecheck COMMAND --help" lists them.
//
// Exit codes: 0 everything passed, 1 a check failed, 2 a usage error, 3 a
// backend failure (it would not start, broke the protocol, or crashed
// outside an injected fault), 4 inconclusive only (a check could not decide;
// never a pass).
package main

import (
	"os"

	"github.com/storecheck/storecheck/conformance"
)

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr, conformance.Reference()))
}
