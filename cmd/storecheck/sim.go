package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// simulation is "storecheck sim": seeded schedules of concurrent clients,
// clock jumps and crashes against one backend, checked step by step against
// the contract's model; each failure is shrunk and saved.
func simulation(inv invocation) int {
	f, stdout, stderr, command := inv.f, inv.stdout, inv.stderr, inv.backend
	ref := inv.ref
	selected, ok := parseStores(f.str("store"), "sim", stderr)
	if !ok {
		return exitUsage
	}
	sr, sh, err := sweep(f, sim.DefaultSeeds.String())
	if err != nil {
		fmt.Fprintf(stderr, "storecheck sim: %v\n", err)
		return exitUsage
	}
	if !f.atLeastOne(stderr, "steps", "clients", "processes") {
		return exitUsage
	}
	params := sim.Params{Steps: f.num("steps"), Clients: f.num("clients"), Processes: f.num("processes"), PowerCuts: f.on("power-cuts")}
	failFast, shrinkBudget, reportDir, timeout := f.on("fail-fast"), f.num("shrink"), f.str("report-dir"), f.dur("reply-timeout")

	// The command that reproduces one seed, as the report prints it.
	base := "storecheck sim" + changing(f, "steps", "clients", "processes", "power-cuts", "reply-timeout")
	suffix := backendSuffix(command)

	result := reports.Run{Tool: "storecheck", Backend: ref.Info().Name, Seed: sr.First, Command: "storecheck sim " + strings.Join(f.line, " ") + suffix}
	if command != nil {
		result.Backend = strings.Join(command, " ")
	}
	start := time.Now()
	seedList := sr.Seeds(sh)
	progress := reports.StartProgress(stderr, progressMode(f.on("quiet")), "seeds", len(seedList)*len(selected))
	defer progress.Stop()
	var failed atomic.Bool
	backendFailed := false
	for _, name := range selected {
		st, _ := stores.Lookup(name)
		if st.Model == nil {
			result.Checks = append(result.Checks, reports.Check{Store: name, Layer: "sim", Name: "seeds " + sr.String(),
				Outcome: reports.Skipped, Message: "storecheck has no model of the " + name + " store yet"})
			continue
		}
		var backend sim.Backend
		var caps spec.Capabilities
		if command != nil {
			o := execOptions(command, timeout)
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
			caps = info.Capabilities.Capabilities
			backend = sim.Exec(o, name)
		} else {
			backend = sim.InProcess(ref, name)
			caps = ref.Info().Capabilities.Capabilities
		}
		subj := subjectFor(st, caps)
		coverage := sim.Coverage{}
		var yielded, crashed bool
		noPower := ""
		err := sim.Sweep(context.Background(), subj, backend, seedList, params, f.num("workers"), sim.ScratchDir(), func(res sim.Result) {
			progress.Done(1)
			progress.Ops(res.Ops)
			coverage.Add(res)
			yielded, crashed = yielded || res.Yielded, crashed || res.CrashPoints
			if res.NoPowerCuts != "" {
				noPower = res.NoPowerCuts
			}
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
				c.Details, c.Artifacts, c.Interleaving = shrinkAndSave(subj, backend, res, shrinkBudget, reportDir, name, changing(f, "reply-timeout"), suffix, stderr)
			}
			result.Checks = append(result.Checks, c)
		}, func() bool { return failFast && failed.Load() })
		if err != nil {
			fmt.Fprintf(stderr, "storecheck sim: %v\n", err)
			return exitBackend
		}
		if missing := coverage.Missing(rareEvents(st)); len(missing) > 0 && sr == sim.DefaultSeeds && sh.N == 1 {
			fmt.Fprintf(stderr, "storecheck sim: the %s sweep did not reach: %s\n", name, strings.Join(missing, "; "))
		}
		writeCoverage(stdout, name, coverage, rareEvents(st))
		result.Notes = append(result.Notes, unexplored(st, caps, coverage, sim.Result{Yielded: yielded, CrashPoints: crashed, NoPowerCuts: noPower}, len(seedList))...)
		result.Coverage = append(result.Coverage, st.Coverage("sim", "seeds "+sr.String()+shardText(sh), coverage))
	}
	progress.Stop()
	result.Duration = time.Since(start)
	reports.WriteText(stdout, result)
	writeReports(f, result, stderr)
	if backendFailed {
		return exitBackend
	}
	return exitCode(result)
}

// shrinkAndSave shrinks a failing run and saves the small schedule and its
// trace; it returns the trace for the report, and the files.
func shrinkAndSave(subj sim.Subject, b sim.Backend, res sim.Result, budget int, reportDir, store, replayFlags, suffix string, stderr io.Writer) (string, []reports.Artifact, *reports.Interleaving) {
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
	details += "\nreplay: storecheck replay" + replayFlags + " " + shellQuote(filepath.Join(reportDir, schedule)) + suffix
	return details, []reports.Artifact{{Name: "shrunk schedule", Path: schedule}, {Name: "trace", Path: trace},
		{Name: "interleaving", Path: filepath.Join(folder, "interleaving.txt")}}, grid
}

// unexplored says what a store's sweep of seeds runs did not explore, and
// why: a capability the backend lacks (no crash points: processes are
// killed, never crashed inside an operation; no yield point reached:
// operations interleave whole), power loss where it could not be cut (what
// sweep, summing the runs, says), and each rare event no run reached, with
// the capability it needs or the rarity that kept it away.
func unexplored(st stores.Store, caps spec.Capabilities, c sim.Coverage, sweep sim.Result, seeds int) []string {
	var notes []string
	if seeds == 0 {
		return nil
	}
	store, rare := st.Name(), rareEvents(st)
	var chosen map[string]string
	if st.Unexplorable != nil {
		chosen = st.Unexplorable(caps)
	}
	for _, u := range sweep.Unexplored() {
		notes = append(notes, store+": "+u)
	}
	for _, e := range c.Missing(rare) {
		why := fmt.Sprintf("rare: none of the %d seeds reached it (a longer sweep may: --seeds)", seeds)
		// Both are an armed crash point firing: inside the operation, or
		// after its commit.
		if (e == sim.EventCrashInside || e == sim.EventAnswerLost) && !sweep.CrashPoints {
			why = "it needs crash points, and the backend declares none for " + store + " (hello's crash_points)"
		}
		if e == sim.EventPowerCut && sweep.NoPowerCuts != "" {
			continue // the note above says why
		}
		if r, ok := chosen[e]; ok {
			why = r
		}
		notes = append(notes, fmt.Sprintf("%s: %q was not reached: %s", store, e, why))
	}
	return notes
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
func replay(inv invocation) int {
	f, stdout, stderr, command := inv.f, inv.stdout, inv.stderr, inv.backend
	s, err := sim.ReadSchedule(f.args()[0], stores.Contracts())
	if err != nil {
		fmt.Fprintf(stderr, "storecheck replay: %v\n", err)
		return exitUsage
	}
	st, _ := stores.Lookup(s.Store)
	if st.Model == nil {
		fmt.Fprintf(stderr, "storecheck replay: storecheck has no model of the %s store yet\n", s.Store)
		return exitUsage
	}
	backend := sim.InProcess(inv.ref, s.Store)
	if command != nil {
		backend = sim.Exec(execOptions(command, f.dur("reply-timeout")), s.Store)
	}
	res, err := sim.Run(context.Background(), subjectFor(st, s.Capabilities), backend, s, sim.ScratchDir())
	if errors.Is(err, sim.ErrNoPowerLoss) {
		fmt.Fprintf(stderr, "storecheck replay: %v; the replay is not run\n", err)
		return exitInconclusive
	}
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

func progressMode(quiet bool) reports.ProgressMode {
	if quiet {
		return reports.ProgressQuiet
	}
	return reports.ProgressAuto
}

// sweep is the seeds a command runs, and its shard: --seed N or --seeds
// A..B from the command line (not both), else the config's seeds (or its
// seed), else fallback.
func sweep(f *flags, fallback string) (sim.SeedRange, sim.Shard, error) {
	var text string
	switch {
	case f.from("seed") == fromCommandLine && f.from("seeds") == fromCommandLine:
		return sim.SeedRange{}, sim.Shard{}, fmt.Errorf("--seed and --seeds name the same thing; give one")
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
		return sim.SeedRange{}, sim.Shard{}, err
	}
	sh, err := sim.ParseShard(f.str("shard"))
	return sr, sh, err
}
