package main

import (
	"fmt"
	"time"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reports"
)

// linearize is "storecheck linearize": the linearizability check alone, for
// one seed or a sweep of seeds (sharded for CI matrix jobs), against the
// reference or the program after "--".
func linearize(inv invocation) int {
	f := inv.f
	if !f.atLeastOne(inv.stderr, "clients", "ops", "handles") {
		return exitUsage
	}
	cfg := inv.config()
	cfg.Layers = []conformance.Layer{conformance.LayerLinearizability}
	var err error
	if cfg.Seeds, cfg.Shard, err = sweep(f, fmt.Sprint(time.Now().Unix())); err != nil {
		fmt.Fprintf(inv.stderr, "storecheck linearize: %v\n", err)
		return exitUsage
	}
	return inv.check("linearize", cfg, func(r reports.Run) { reports.WriteText(inv.stdout, r) })
}

// check is "storecheck check HISTORY.json": a saved history checked again,
// offline.
func check(inv invocation) int {
	f, stdout, stderr := inv.f, inv.stdout, inv.stderr
	file := f.args()[0]
	hc, err := conformance.CheckHistory(file, f.dur("check-timeout"))
	if err != nil {
		fmt.Fprintf(stderr, "storecheck check: %v\n", err)
		return exitUsage
	}
	res := hc.Result
	fmt.Fprintf(stdout, "%s: %d operations of the %s store: %s\n", file, len(hc.History.Entries), hc.History.Store, res.Summary())
	switch res.Verdict {
	case linearizability.Linearizable:
		return exitPassed
	case linearizability.Illegal:
		fmt.Fprintf(stdout, "%s\n%s", res.Headline(), res.Explain(hc.Store.Contract))
		return exitFailed
	}
	return exitInconclusive
}
