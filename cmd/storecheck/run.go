package main

import (
	"time"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/reports"
)

// run is "storecheck run": the conformance suite, then the linearizability
// check (the layers --layers names), against one backend: the reference,
// or the program named after "--".
func run(inv invocation) int {
	f := inv.f
	if !f.atLeastOne(inv.stderr, "ops") {
		return exitUsage
	}
	seed, ok := f.num64("seed")
	if !ok {
		seed = time.Now().Unix()
	}
	cfg := inv.config()
	cfg.Seeds = conformance.Seed(seed)
	// The suite ends Ginkgo's line itself: the report follows it.
	return inv.check("run", cfg, func(r reports.Run) { reports.WriteText(inv.stdout, r) })
}
