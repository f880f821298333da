package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	if f.on("exhaustive") {
		return exhaustive(inv)
	}
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

// exhaustive is "storecheck sim --exhaustive": each store's crash states
// of its small workloads, all of them; each failure's trace, and its
// schedule saved for storecheck replay.
func exhaustive(inv invocation) int {
	if inv.f.num("exhaustive-bound") < 1 {
		fmt.Fprintf(inv.stderr, "storecheck sim: --exhaustive-bound %s: want a count of classes from 1\n", inv.f.str("exhaustive-bound"))
		return exitUsage
	}
	reps, err := conformance.Exhaust(context.Background(), inv.target(), inv.config(), sim.ExhaustParams{MaxStates: inv.f.num("exhaustive-bound")})
	var ce *conformance.ConfigError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintf(inv.stderr, "storecheck sim: %s\n", ce.Problem)
		return exitUsage
	case err != nil:
		fmt.Fprintf(inv.stderr, "storecheck sim: backend failure (not a conformance verdict): %v\n", err)
		return exitBackend
	}
	code := exitPassed
	for _, rep := range reps {
		if rep.Skipped != "" {
			fmt.Fprintf(inv.stdout, "%s: not explored: %s\n", rep.Store, rep.Skipped)
			if code == exitPassed {
				code = exitInconclusive
			}
			continue
		}
		fmt.Fprintf(inv.stdout, "%s: %s\n", rep.Store, rep.Result.Summary())
		for i, f := range rep.Result.Failures {
			code = exitFailed
			if i > 0 {
				// The first in full; the others by what failed.
				fmt.Fprintf(inv.stdout, "FAIL %s\n", f.Failure)
				continue
			}
			fmt.Fprintf(inv.stdout, "%s\nFAIL %s\n", strings.Join(f.Trace, "\n"), f.Failure)
			if path, err := saveSchedule(inv.f, f.Schedule); err == nil {
				fmt.Fprintf(inv.stdout, "saved: %s (storecheck replay %s)\n", path, path)
			} else {
				fmt.Fprintf(inv.stderr, "storecheck sim: could not save the schedule: %v\n", err)
			}
		}
	}
	return code
}

// saveSchedule writes a store's first failing schedule: into the report
// folder when --report-dir was given, else a file of its own in the
// scratch folder.
func saveSchedule(f *flags, s sim.Schedule) (string, error) {
	if f.given("report-dir") {
		dir := filepath.Join(f.str("report-dir"), "sim-exhaustive-"+s.Store)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		path := filepath.Join(dir, "schedule.json")
		return path, s.WriteFile(path)
	}
	tmp, err := os.CreateTemp(sim.ScratchDir(), "exhaustive-"+s.Store+"-*.json")
	if err != nil {
		return "", err
	}
	tmp.Close()
	return tmp.Name(), s.WriteFile(tmp.Name())
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
