package main

import (
	"context"
	"fmt"
	"io"

	"github.com/storecheck/storecheck/conformance"
)

// serveCommand is "storecheck serve": the in-process backend (the
// reference) over the wire.
func serveCommand(inv invocation) int {
	return serve(inv.stdin, inv.stdout, inv.stderr, inv.ref)
}

// serve is "storecheck serve": backend's stores over the wire protocol on
// stdin and stdout (docs/protocol.md), until stdin ends
// (conformance.Serve). An armed crash point ends the process on the spot,
// without closing anything.
func serve(stdin io.Reader, stdout, stderr io.Writer, backend conformance.Backend) int {
	if err := conformance.Serve(context.Background(), backend, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "storecheck serve: %v\n", err)
		return exitFailed
	}
	return exitPassed
}
