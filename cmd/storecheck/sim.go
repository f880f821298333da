package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// simulation is "storecheck sim": seeded schedules of concurrent clients,
// clock jumps and crashes against one backend, checked step by step against
// the contract's model; each failure is shrunk and saved.
func simulation(inv invocation) int {
	f := inv.f
	cfg := inv.config()
	cfg.Layers = []conformance.Layer{conformance.LayerSim}
	var err error
	if cfg.Seeds, cfg.Shard, err = sweep(f, sim.DefaultSeeds.String()); err != nil {
		fmt.Fprintf(inv.stderr, "storecheck sim: %v\n", err)
		return exitUsage
	}
	if !f.atLeastOne(inv.stderr, "steps", "clients", "processes") {
		return exitUsage
	}
	whole := *cfg.Seeds == sim.DefaultSeeds && cfg.Shard.N == 1
	return inv.check("sim", cfg, func(r reports.Run) {
		for _, reach := range r.Reach {
			if missing := reach.Missing(); len(missing) > 0 && whole {
				fmt.Fprintf(inv.stderr, "storecheck sim: the %s sweep did not reach: %s\n", reach.Store, strings.Join(missing, "; "))
			}
			fmt.Fprintf(inv.stdout, "%s coverage: %s\n", reach.Store, reach.Summary())
		}
		reports.WriteText(inv.stdout, r)
	})
}

// replay is "storecheck replay FILE": a saved schedule run again, once.
func replay(inv invocation) int {
	f, stdout, stderr := inv.f, inv.stdout, inv.stderr
	s, err := conformance.ReadSchedule(f.args()[0])
	if err != nil {
		fmt.Fprintf(stderr, "storecheck replay: %v\n", err)
		return exitUsage
	}
	res, err := conformance.Replay(context.Background(), inv.target(), s, inv.config())
	if errors.Is(err, conformance.ErrNoPowerLoss) {
		fmt.Fprintf(stderr, "storecheck replay: %v; the replay is not run\n", err)
		return exitInconclusive
	}
	if err != nil {
		fmt.Fprintf(stderr, "storecheck replay: %v\n", err)
		if conformance.IsBackendFailure(err) {
			return exitBackend
		}
		return exitUsage
	}
	fmt.Fprintln(stdout, strings.Join(res.Trace, "\n"))
	if res.Failure != nil {
		fmt.Fprintf(stdout, "FAIL %s\n", res.Failure)
		if res.Failure.Backend != nil {
			return exitBackend
		}
		return exitFailed
	}
	fmt.Fprintf(stdout, "ok: %d steps, trace %s\n", len(res.Trace), res.Hash())
	return exitPassed
}

// sweep is the seeds a command runs, and its shard: --seed N or --seeds
// A..B from the command line (not both), else the config's seeds (or its
// seed), else fallback.
func sweep(f *flags, fallback string) (*conformance.SeedRange, conformance.Shard, error) {
	var text string
	switch {
	case f.from("seed") == fromCommandLine && f.from("seeds") == fromCommandLine:
		return nil, conformance.Shard{}, fmt.Errorf("--seed and --seeds name the same thing; give one")
	case f.from("seed") == fromCommandLine:
		text = f.str("seed")
	case f.given("seeds"):
		text = f.str("seeds")
	case f.given("seed"):
		text = f.str("seed")
	default:
		text = fallback
	}
	sr, err := sim.ParseSeeds(text)
	if err != nil {
		return nil, conformance.Shard{}, err
	}
	sh, err := sim.ParseShard(f.str("shard"))
	return &sr, sh, err
}

func progressMode(quiet bool) reports.ProgressMode {
	if quiet {
		return reports.ProgressQuiet
	}
	return reports.ProgressAuto
}
