// Command storecheck checks a store backend against the contracts: with no
// backend named, the embedded reference.
//
//	storecheck                 same as storecheck run
//	storecheck run [flags]     run the conformance suite
//	storecheck run [flags] -- COMMAND [ARG...]
//	                           run it against a program speaking the wire
//	                           protocol (docs/protocol.md)
//	storecheck serve           serve the reference stores over the protocol
//
// Exit codes: 0 everything passed, 1 a check failed, 2 a usage error, 3 a
// backend failure (it would not start, broke the protocol, or crashed).
package main

import (
	"fmt"
	"os"
)

func main() {
	ref, err := referenceFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "storecheck: %v\n", err)
		os.Exit(exitUsage)
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr, ref))
}
