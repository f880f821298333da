package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reference/sqlitedb"
)

// exitCrashPoint is the status "storecheck serve" exits with when an armed
// crash point fires.
const exitCrashPoint = 70

// serveCommand is "storecheck serve": the in-process backend (the
// reference) over the wire.
func serveCommand(inv invocation) int {
	return serve(inv.stdin, inv.stdout, inv.stderr, inv.ref)
}

// serve is "storecheck serve": backend's stores over the wire protocol on
// stdin and stdout (docs/protocol.md), until stdin ends. An armed crash
// point ends the process on the spot, without closing anything.
func serve(stdin io.Reader, stdout, stderr io.Writer, backend adapters.Backend) int {
	var mu sync.Mutex
	armed := map[string]int{}
	sqlitedb.SetCrashHook(func(point string) {
		mu.Lock()
		defer mu.Unlock()
		n, ok := armed[point]
		if !ok {
			return
		}
		if n > 1 {
			armed[point] = n - 1
			return
		}
		fmt.Fprintf(stderr, "storecheck serve: crash point %s reached: exiting with status %d\n", point, exitCrashPoint)
		os.Exit(exitCrashPoint)
	})
	defer sqlitedb.SetCrashHook(nil)
	arm := func(point string, nth int) error {
		mu.Lock()
		defer mu.Unlock()
		armed[point] = nth
		return nil
	}
	err := adapters.Serve(context.Background(), stdin, stdout, backend,
		adapters.ServeOptions{ArmCrash: arm, Log: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "storecheck serve: %v\n", err)
		return exitFailed
	}
	return exitPassed
}
