package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
)

// ExitCrashPoint is the status a served process exits with when it reaches
// a crash point the kit armed.
const ExitCrashPoint = 70

// Serve serves b's stores over the wire protocol (docs/protocol.md) on
// stdin and stdout until stdin ends, logging to stderr: what "storecheck
// serve" does for the reference, and what makes a Go harness's stores a
// backend any tool that speaks the protocol can check. b must be in this
// process (Reference, InProcess, Adapter).
//
// The hello declares b's stores, capabilities, yield points and crash
// points. An armed crash point ends the process with ExitCrashPoint the
// Nth time it is reached (spec.CrashPoint), on the spot, closing nothing,
// so that the kit crashes it there for real. Serve sets the process-wide
// crash hook (spec.SetCrashHook) while it runs: a process serves once.
func Serve(ctx context.Context, b Backend, stdin io.Reader, stdout, stderr io.Writer) error {
	if b.local == nil {
		return configError("Backend", "Serve serves a backend in this process (Reference, InProcess, Adapter), not a program")
	}
	var mu sync.Mutex
	armed := map[string]int{}
	spec.SetCrashHook(func(point string) {
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
		fmt.Fprintf(stderr, "storecheck serve: crash point %s reached: exiting with status %d\n", point, ExitCrashPoint)
		os.Exit(ExitCrashPoint)
	})
	defer spec.SetCrashHook(nil)
	arm := func(point string, nth int) error {
		mu.Lock()
		defer mu.Unlock()
		armed[point] = nth
		return nil
	}
	return adapters.Serve(ctx, stdin, stdout, b.local, adapters.ServeOptions{ArmCrash: arm, Log: stderr})
}
