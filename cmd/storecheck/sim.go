package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec/suite"
)

const simFlags = "accepted flags: --store, --seed, --seeds, --shard, --steps, --clients, --processes, --workers, --shrink, --report-dir, --fail-fast, --quiet, --timeout"

// simulation is "storecheck sim": seeded schedules of concurrent clients,
// clock jumps and crashes against one backend, checked step by step against
// the contract's model; each failure is shrunk and saved.
func simulation(args []string, stdout, stderr io.Writer, h suite.Harness) int {
	args, command, ok := splitCommand(args, "sim", simFlags, stderr)
	if !ok {
		return exitUsage
	}
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	storeList := fs.String("store", strings.Join(stores, ","), "")
	seed := fs.String("seed", "", "")
	seeds := fs.String("seeds", "", "")
	shard := fs.String("shard", "1/1", "")
	steps := fs.Int("steps", 200, "")
	clients := fs.Int("clients", 8, "")
	processes := fs.Int("processes", 2, "")
	workers := fs.Int("workers", 0, "")
	shrinkBudget := fs.Int("shrink", 2000, "")
	reportDir := fs.String("report-dir", "storecheck-report", "")
	failFast := fs.Bool("fail-fast", false, "")
	quiet := fs.Bool("quiet", false, "")
	timeout := fs.Duration("timeout", adapters.DefaultTimeout, "")
	if err := config.apply(fs); err != nil {
		fmt.Fprintf(stderr, "storecheck sim: %v\n", err)
		return exitUsage
	}
	command = config.backend(command)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: storecheck sim [--store LIST] [--seed N | --seeds A..B] [--shard i/n] [--steps N] [--clients N] [--processes N] [--workers N] [--shrink RUNS] [--report-dir DIR] [--fail-fast] [--quiet] [-- BACKEND ARGS...]")
			return exitPassed
		}
		fmt.Fprintf(stderr, "storecheck sim: %v; %s\n", err, simFlags)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "storecheck sim: unexpected argument %q; %s\n", fs.Arg(0), simFlags)
		return exitUsage
	}
	selected, ok := parseStores(*storeList, "sim", stderr)
	if !ok {
		return exitUsage
	}
	sr, sh, err := sweep(args, *seed, *seeds, *shard, sim.DefaultSeeds.String())
	if err != nil {
		fmt.Fprintf(stderr, "storecheck sim: %v\n", err)
		return exitUsage
	}
	for name, v := range map[string]int{"--steps": *steps, "--clients": *clients, "--processes": *processes} {
		if v <= 0 {
			fmt.Fprintf(stderr, "storecheck sim: %s must be at least 1, got %d\n", name, v)
			return exitUsage
		}
	}
	params := sim.Params{Steps: *steps, Clients: *clients, Processes: *processes}

	// The command that reproduces one seed, as the report prints it.
	base := "storecheck sim"
	if *steps != 200 || *clients != 8 || *processes != 2 {
		base += fmt.Sprintf(" --steps %d --clients %d --processes %d", *steps, *clients, *processes)
	}
	suffix := ""
	if command != nil {
		suffix = " -- " + strings.Join(command, " ")
	}

	result := reports.Run{Tool: "storecheck", Backend: h.Name, Seed: sr.First, Command: "storecheck sim " + strings.Join(args, " ") + suffix}
	if command != nil {
		result.Backend = strings.Join(command, " ")
	}
	start := time.Now()
	seedList := sr.Seeds(sh)
	progress := reports.StartProgress(stderr, progressMode(*quiet), "seeds", len(seedList)*len(selected))
	defer progress.Stop()
	var failed atomic.Bool
	backendFailed := false
	for _, name := range selected {
		k, _ := kitOf(name)
		if k.model == nil {
			result.Checks = append(result.Checks, reports.Check{Store: name, Layer: "sim", Name: "seeds " + sr.String(),
				Outcome: reports.Skipped, Message: "storecheck has no model of the " + name + " store yet"})
			continue
		}
		var backend sim.Backend
		var points []string
		if command != nil {
			o := adapters.ExecOptions{Command: command, Timeout: *timeout}
			probe, err := adapters.StartExec(context.Background(), o)
			if err != nil {
				fmt.Fprintf(stderr, "storecheck sim: backend failure: %v\n", err)
				return exitBackend
			}
			info := probe.Info()
			probe.Close()
			if !slices.Contains(info.Stores, name) {
				result.Checks = append(result.Checks, reports.Check{Store: name, Layer: "sim", Name: "seeds " + sr.String(),
					Outcome: reports.Skipped, Message: "backend does not implement the " + name + " store"})
				continue
			}
			points = info.Capabilities.CrashPoints[name]
			backend = sim.Exec(o, name)
		} else {
			backend = sim.InProcess(inProcess(h), name)
			points = k.crashPoints
		}
		subj := k.subject(points)
		coverage := sim.Coverage{}
		err := sim.Sweep(context.Background(), subj, backend, seedList, params, *workers, sim.ScratchDir(), func(res sim.Result) {
			progress.Done(1)
			progress.Ops(res.Ops)
			coverage.Add(res)
			c := reports.Check{Store: name, Layer: "sim", Name: fmt.Sprintf("seed %d", res.Schedule.Seed), Outcome: reports.Passed,
				Reproduce: fmt.Sprintf("%s --store %s --seed %d%s", base, name, res.Schedule.Seed, suffix)}
			if res.Failure != nil {
				progress.Failure()
				failed.Store(true)
				if res.Failure.Backend != nil {
					backendFailed = true
				}
				c.Outcome = reports.Failed
				c.Message = res.Failure.Error()
				c.Details, c.Artifacts, c.Interleaving = shrinkAndSave(subj, backend, res, *shrinkBudget, *reportDir, name, suffix, stderr)
			}
			result.Checks = append(result.Checks, c)
		}, func() bool { return *failFast && failed.Load() })
		if err != nil {
			fmt.Fprintf(stderr, "storecheck sim: %v\n", err)
			return exitBackend
		}
		if missing := coverage.Missing(k.rareEvents); len(missing) > 0 && sr == sim.DefaultSeeds && sh.N == 1 {
			fmt.Fprintf(stderr, "storecheck sim: the %s sweep did not reach: %s\n", name, strings.Join(missing, "; "))
		}
		writeCoverage(stdout, name, coverage, k.rareEvents)
	}
	progress.Stop()
	result.Duration = time.Since(start)
	reports.WriteText(stdout, result)
	writeReports(fs, *reportDir, result, stderr)
	if backendFailed {
		return exitBackend
	}
	return exitCode(result)
}

// shrinkAndSave shrinks a failing run and saves the small schedule and its
// trace; it returns the trace for the report, and the files.
func shrinkAndSave(subj sim.Subject, b sim.Backend, res sim.Result, budget int, reportDir, store, suffix string, stderr io.Writer) (string, []reports.Artifact, *reports.Interleaving) {
	small := res
	if budget > 0 && res.Failure.Backend == nil {
		var err error
		if small, err = sim.Shrink(context.Background(), subj, b, res, sim.ScratchDir(), budget); err != nil {
			fmt.Fprintf(stderr, "storecheck sim: shrinking seed %d: %v\n", res.Schedule.Seed, err)
			small = res
		}
	}
	details := fmt.Sprintf("shrunk from %d to %d steps:\n%s\n%v", len(res.Schedule.Steps), len(small.Schedule.Steps),
		small.InterleavingText(48), small.Failure)
	columns, rows := small.Interleaving()
	grid := &reports.Interleaving{Columns: columns, Notes: small.Unexplored()}
	for _, r := range rows {
		grid.Rows = append(grid.Rows, reports.InterleavingRow{Step: r.Step, Cells: r.Cells})
	}
	folder := fmt.Sprintf("sim-%s-seed-%d", store, res.Schedule.Seed)
	if err := os.MkdirAll(filepath.Join(reportDir, folder), 0o755); err != nil {
		fmt.Fprintf(stderr, "storecheck sim: %v\n", err)
		return details, nil, grid
	}
	schedule := filepath.Join(folder, "schedule.json")
	trace := filepath.Join(folder, "trace.txt")
	if err := small.Schedule.WriteFile(filepath.Join(reportDir, schedule)); err != nil {
		fmt.Fprintf(stderr, "storecheck sim: %v\n", err)
	}
	os.WriteFile(filepath.Join(reportDir, trace), []byte(strings.Join(small.Trace, "\n")+"\n"+small.Failure.Error()+"\n"), 0o644)
	os.WriteFile(filepath.Join(reportDir, folder, "interleaving.txt"), []byte(small.InterleavingText(60)+small.Failure.Error()+"\n"), 0o644)
	details += "\nreplay: storecheck replay " + filepath.Join(reportDir, schedule) + suffix
	return details, []reports.Artifact{{Name: "shrunk schedule", Path: schedule}, {Name: "trace", Path: trace},
		{Name: "interleaving", Path: filepath.Join(folder, "interleaving.txt")}}, grid
}

// writeCoverage prints what the sweep reached of the store's rare events.
func writeCoverage(w io.Writer, store string, c sim.Coverage, rare []string) {
	reached := 0
	for _, e := range rare {
		if c[e] > 0 {
			reached++
		}
	}
	fmt.Fprintf(w, "%s coverage: %d of %d rare events reached", store, reached, len(rare))
	if missing := c.Missing(rare); len(missing) > 0 {
		fmt.Fprintf(w, " (not: %s)", strings.Join(missing, "; "))
	}
	fmt.Fprintln(w)
}

// replay is "storecheck replay FILE": a saved schedule run again, once.
func replay(args []string, stdout, stderr io.Writer, h suite.Harness) int {
	const accepted = "usage: storecheck replay [--timeout D] SCHEDULE.json [-- BACKEND ARGS...]"
	args, command, ok := splitCommand(args, "replay", accepted, stderr)
	if !ok {
		return exitUsage
	}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	timeout := fs.Duration("timeout", adapters.DefaultTimeout, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err == nil {
			err = fmt.Errorf("want exactly one schedule file, got %d arguments", fs.NArg())
		}
		fmt.Fprintf(stderr, "storecheck replay: %v; %s\n", err, accepted)
		return exitUsage
	}
	s, err := sim.ReadSchedule(fs.Arg(0), contracts())
	if err != nil {
		fmt.Fprintf(stderr, "storecheck replay: %v\n", err)
		return exitUsage
	}
	k, _ := kitOf(s.Store)
	if k.model == nil {
		fmt.Fprintf(stderr, "storecheck replay: storecheck has no model of the %s store yet\n", s.Store)
		return exitUsage
	}
	backend := sim.InProcess(inProcess(h), s.Store)
	if command != nil {
		backend = sim.Exec(adapters.ExecOptions{Command: command, Timeout: *timeout}, s.Store)
	}
	res, err := sim.Run(context.Background(), k.subject(nil), backend, s, sim.ScratchDir())
	if err != nil {
		fmt.Fprintf(stderr, "storecheck replay: %v\n", err)
		return exitBackend
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

// splitCommand takes the backend command after "--" off args.
func splitCommand(args []string, cmd, accepted string, stderr io.Writer) ([]string, []string, bool) {
	i := slices.Index(args, "--")
	if i < 0 {
		return args, nil, true
	}
	if i == len(args)-1 {
		fmt.Fprintf(stderr, "storecheck %s: no command after --; %s\n", cmd, accepted)
		return nil, nil, false
	}
	return args[:i], args[i+1:], true
}

func progressMode(quiet bool) reports.ProgressMode {
	if quiet {
		return reports.ProgressQuiet
	}
	return reports.ProgressAuto
}

// sweep is the seeds a command runs, and its shard: --seed N or --seeds
// A..B from the command line (not both), else the config's seeds, else
// fallback.
func sweep(args []string, seed, seeds, shard, fallback string) (sim.SeedRange, sim.Shard, error) {
	given := func(name string) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			return a == "--"+name || a == "-"+name || strings.HasPrefix(a, "--"+name+"=") || strings.HasPrefix(a, "-"+name+"=")
		})
	}
	text := seeds
	switch {
	case given("seed") && given("seeds"):
		return sim.SeedRange{}, sim.Shard{}, fmt.Errorf("--seed and --seeds name the same thing; give one")
	case given("seed"):
		text = seed
	case text == "":
		text = fallback
	}
	sr, err := sim.ParseSeeds(text)
	if err != nil {
		return sim.SeedRange{}, sim.Shard{}, err
	}
	sh, err := sim.ParseShard(shard)
	return sr, sh, err
}
