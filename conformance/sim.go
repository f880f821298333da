package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// simulate is the simulator's layer: a sweep of seeds of every store asked,
// each failure shrunk and saved.
func (r *runner) simulate() error {
	cfg := r.cfg
	sr := cfg.SeedsOf(LayerSim)
	seeds := sr.Seeds(cfg.Shard)
	over := overText(sr, cfg.Shard)
	params := sim.Params{Steps: cfg.Steps, Clients: cfg.Clients, Processes: cfg.Processes, PowerCuts: !cfg.NoPowerCuts}
	progress := cfg.progress("seeds", len(seeds)*len(cfg.Stores))
	defer progress.Stop()
	var failed atomic.Bool
	var backendErr error
	var corpora map[string]*reports.Corpus
	if cfg.Corpus != "" && cfg.Corpus != NoCorpus {
		var err error
		if corpora, err = reports.ReadCorpus(cfg.Corpus); err != nil {
			return configError("Corpus", "corpus: %v", err)
		}
	}
	for _, name := range cfg.Stores {
		reg, _ := stores.Lookup(name)
		if reg.Model == nil {
			r.add(reports.Check{Store: name, Layer: string(LayerSim), Name: over,
				Outcome: reports.Skipped, Message: "storecheck has no model of the " + name + " store yet"})
			continue
		}
		if !r.s.implements(name) {
			r.add(reports.Check{Store: name, Layer: string(LayerSim), Name: over,
				Outcome: reports.Skipped, Message: "backend does not implement the " + name + " store"})
			continue
		}
		if cfg.FailFast && failed.Load() {
			break
		}
		st := storeOf(reg)
		caps := r.s.caps(name)
		subj, backend := st.Subject(caps), r.s.simBackend(name)
		storeParams, oneProcess := processesFor(params, caps, name)
		coverage := sim.Coverage{}
		var sweep sim.Result // what the sweep's runs explored, summed
		rechecked, diverged := 0, 0
		var recheckNotes []string
		each := func(res sim.Result) {
			progress.Done(1)
			progress.Ops(res.Ops)
			coverage.Add(res)
			if res.Rechecked {
				rechecked++
			}
			if res.Nondeterminism != nil {
				diverged++
			}
			sweep.Yielded, sweep.CrashPoints = sweep.Yielded || res.Yielded, sweep.CrashPoints || res.CrashPoints
			// Every run of the sweep has its size: what it says it left
			// out of one process (Result.Unexplored) is the sweep's.
			sweep.Schedule.Processes, sweep.Schedule.Clients, sweep.Schedule.Overlap = res.Schedule.Processes, res.Schedule.Clients, res.Schedule.Overlap
			if res.NoPowerCuts != "" {
				sweep.NoPowerCuts = res.NoPowerCuts
			}
			c := reports.Check{Store: name, Layer: string(LayerSim), Name: res.Schedule.Name(), Outcome: reports.Passed}
			if len(res.Schedule.Branches) == 0 {
				// A guided sweep's child replays from its saved schedule
				// (shrinkAndSave), not from its seed.
				c.Reproduce = r.lines.sim(name, res.Schedule.Seed)
			}
			if res.Failure != nil {
				progress.Failure()
				failed.Store(true)
				if res.Failure.Backend != nil && backendErr == nil {
					backendErr = res.Failure.Backend
				}
				c.Outcome = reports.Failed
				r.shrinkAndSave(&c, subj, backend, res)
			} else if res.Inconclusive {
				// The oracle kept only a part of the orders the run allowed:
				// a pass judged on a part is no pass.
				c.Outcome = reports.Inconclusive
				c.Message = "the overlapping operations allowed more orders than the simulator's oracle keeps, so the run decides nothing"
				if res.Stalled != "" {
					c.Message = "the kit stalled, not the backend, so the run decides nothing: " + res.Stalled
				}
			}
			if note := recheckVerdict(&c, res); note != "" {
				recheckNotes = append(recheckNotes, name+": "+note)
			}
			r.add(c)
		}
		stop := func() bool { return cfg.FailFast && failed.Load() }
		var err error
		var guided *reports.Guided
		if cfg.Explore == sim.ExploreGuided {
			from, fromName := corpora[name], cfg.Corpus
			if cfg.Corpus == "" {
				from, fromName = sim.BuiltinCorpus(name, storeParams), "the kit's corpus"
			}
			var g reports.Guided
			g, err = sim.GuidedSweep(r.ctx, subj, backend, seeds, storeParams, cfg.Workers, sim.ScratchDir(), from, each, stop)
			if from != nil {
				g.From = fromName
			}
			guided = &g
		} else {
			err = sim.Sweep(r.ctx, subj, backend, seeds, storeParams, cfg.Workers, sim.ScratchDir(), each, stop)
		}
		if err != nil {
			return &BackendError{err}
		}
		notes, gaps := unexplored(reg, caps, coverage, sweep, backend.CrashPoints(), len(seeds), r.lines.widen())
		r.result.Notes = append(append(r.result.Notes, recheckNotes...), notes...)
		r.result.Gaps = append(r.result.Gaps, gaps...)
		if oneProcess != "" {
			r.result.Notes = append(r.result.Notes, oneProcess)
		}
		r.result.Coverage = append(r.result.Coverage, reg.Coverage(string(LayerSim), over, coverage))
		reach := reports.Reach{Store: name, Layer: string(LayerSim), Over: over, Rechecked: rechecked, Diverged: diverged, Guided: guided}
		for _, e := range st.Events {
			reach.Events = append(reach.Events, reports.EventCount{Event: e, Count: coverage[e]})
		}
		r.result.Reach = append(r.result.Reach, reach)
	}
	if backendErr != nil {
		return &BackendError{backendErr}
	}
	return nil
}

// recheckVerdict judges a seed whose two runs parted (sim.Rechecked),
// on its check c: what parted is kept, and the verdict is the seed's, as
// the seed allows it. A kit that drew another step after the same answers
// is the kit's own bug: no verdict (inconclusive). A backend that answered
// the same requests another way may be within the seed: the values it
// mints (ids, tokens, sequence numbers) are its to choose, so a pass stays
// a pass and the note it answers says its runs do not repeat; a failure
// stays a failure, saying its replay may not fail the same way.
func recheckVerdict(c *reports.Check, res sim.Result) (note string) {
	d := res.Nondeterminism
	switch {
	case d == nil:
		return ""
	case res.Failure != nil:
		c.Message += "\n(nondeterministic: " + d.String() + "; the replay may not fail the same way)"
		return ""
	case d.Side == sim.SideKit:
		c.Outcome = reports.Inconclusive
		c.Message = "nondeterministic, no verdict: " + d.String()
		return ""
	case c.Outcome == reports.Passed:
		return fmt.Sprintf("seed %d does not repeat: %s (the seed leaves the values a backend mints to it, so this is no verdict; a failure of this backend may not replay from its seed, its saved schedule is the faithful record)", res.Schedule.Seed, d)
	}
	return ""
}

// processesFor is the run's size for a store that declares caps: two
// processes on one file are what shared_files promises, so a store without
// it runs as one process, and the note says what that leaves out. On one
// process its clients' operations overlap (several in flight, moving one at
// a time from yield point to yield point) where the backend serves several
// requests at once (concurrent_requests); else one is in flight at a time,
// and the sweep says races inside the process were not explored.
func processesFor(p sim.Params, caps spec.Capabilities, store string) (sim.Params, string) {
	note := ""
	if !caps.SharedFiles && p.Processes != 1 {
		p.Processes = 1
		note = store + ": " + spec.MissingCapability(spec.CapSharedFiles, spec.NoteOneProcess) + " (the simulator ran one process)"
	}
	p.Overlap = p.Processes == 1 && caps.ConcurrentRequests
	return p, note
}

// shrinkAndSave shrinks a failing run, saves the small schedule, its trace
// and its interleaving, and fills c in: the failure, where it was saved
// and how to replay it, the interleaving one column per process.
func (r *runner) shrinkAndSave(c *reports.Check, subj sim.Subject, b sim.Launcher, res sim.Result) {
	small := res
	if budget := r.cfg.Shrink; budget > 0 && res.Failure.Backend == nil {
		var err error
		started := time.Now()
		small, err = sim.ShrinkWith(r.ctx, subj, b, res, sim.ScratchDir(), sim.ShrinkOptions{Budget: budget, Workers: r.cfg.Workers})
		// The check's time is its shrink's: what a sweep spends on each
		// failure (the seed's own run is in the sweep's time).
		c.Duration = time.Since(started)
		if err != nil {
			r.cfg.logf("storecheck sim: shrinking seed %d: %v", res.Schedule.Seed, err)
			small = res
		}
	}
	var msg strings.Builder
	msg.WriteString(small.Failure.Error())
	if len(small.Schedule.Steps) < len(res.Schedule.Steps) {
		fmt.Fprintf(&msg, "\n(shrunk to %d steps from the seed's %d, which failed at %s; %d runs)", len(small.Schedule.Steps), len(res.Schedule.Steps),
			strings.SplitN(res.Failure.Error(), ":", 2)[0], small.ShrinkRuns)
	}
	columns, rows := small.Interleaving()
	grid := &reports.Interleaving{Columns: columns, Notes: small.Unexplored()}
	for _, row := range rows {
		grid.Rows = append(grid.Rows, reports.InterleavingRow{Step: row.Step, Cells: row.Cells})
	}
	c.Interleaving = grid
	c.Details = fmt.Sprintf("shrunk from %d to %d steps:\n%s\n%v", len(res.Schedule.Steps), len(small.Schedule.Steps),
		small.InterleavingText(48), small.Failure)
	defer func() { c.Message = msg.String() }()

	reportDir := r.cfg.ReportDir
	folder := fmt.Sprintf("sim-%s-%s", c.Store, res.Schedule.Slug())
	if err := os.MkdirAll(filepath.Join(reportDir, folder), 0o755); err != nil {
		r.cfg.logf("storecheck sim: %v", err)
		return
	}
	schedule := filepath.Join(folder, "schedule.json")
	trace := filepath.Join(folder, "trace.txt")
	interleaving := filepath.Join(folder, "interleaving.txt")
	if err := small.Schedule.WriteFile(filepath.Join(reportDir, schedule)); err != nil {
		r.cfg.logf("storecheck sim: %v", err)
	}
	os.WriteFile(filepath.Join(reportDir, trace), []byte(strings.Join(small.Trace, "\n")+"\n"+small.Failure.Error()+"\n"), 0o644)
	os.WriteFile(filepath.Join(reportDir, interleaving), []byte(small.InterleavingText(60)+small.Failure.Error()+"\n"), 0o644)
	fmt.Fprintf(&msg, "\nschedule, trace and interleaving saved in %s", filepath.Join(reportDir, folder))
	if replay := r.lines.replay(filepath.Join(reportDir, schedule)); replay != "" {
		fmt.Fprintf(&msg, "\nreplay: %s", replay)
		if len(res.Schedule.Branches) > 0 {
			c.Reproduce = replay
		}
	}
	c.Artifacts = []reports.Artifact{{Name: "shrunk schedule", Path: schedule}, {Name: "trace", Path: trace},
		{Name: "interleaving", Path: interleaving}}
}

// unexplored says what a store's sweep of seeds runs did not explore, and
// why: a capability the backend lacks (no crash points: processes are
// killed, never crashed inside an operation; no yield point reached:
// operations interleave whole), power loss where it could not be cut (what
// sweep, summing the runs, says), and each rare event no run reached, with
// the capability it needs or the rarity that kept it away, and each
// declared crash point no run crashed at (declared: the backend's for the
// store; widen names what runs more seeds).
func unexplored(st stores.Store, caps spec.Capabilities, c sim.Coverage, sweep sim.Result, declared []string, seeds int, widen string) ([]string, []reports.Gap) {
	var notes []string
	var gaps []reports.Gap
	if seeds == 0 {
		return nil, nil
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
		why := "rare: none of the {seeds} seeds reached it (a longer sweep may: " + widen + ")"
		// Both are an armed crash point firing: inside the operation, or
		// after its commit.
		if (e == sim.EventCrashInside || e == sim.EventAnswerLost) && !sweep.CrashPoints {
			why = "it needs crash points, and the backend declares none for " + store + " (hello's crash_points; a Go harness's CrashPoints)"
		}
		if e == sim.EventPowerCut && sweep.NoPowerCuts != "" {
			continue // the note above says why
		}
		if r, ok := chosen[e]; ok {
			why = r
		}
		gaps = append(gaps, reports.Gap{Store: store, Kind: reports.GapEvent, Name: e, Why: why, Seeds: seeds})
	}
	points, armed := c.CrashPointsUnreached(declared)
	for i, p := range points {
		why := "no operation of the {seeds} seeds was armed at it (a longer sweep may: " + widen + ")"
		if armed[i] > 0 {
			why = "armed {armed} times, no armed operation reached it (they took other paths; a longer sweep may: " + widen + "; if it stays unreached, is it misspelt, or does the store no longer call it?)"
		}
		gaps = append(gaps, reports.Gap{Store: store, Kind: reports.GapCrashPoint, Name: p, Why: why, Seeds: seeds, Armed: armed[i]})
	}
	for _, g := range gaps {
		notes = append(notes, g.Text())
	}
	return notes, gaps
}

// Replay runs a saved (shrunk) schedule again, once, against b: the store
// it names, its model configured as the schedule records.
func Replay(ctx context.Context, b Backend, s sim.Schedule, cfg Config) (sim.Result, error) {
	cfg = cfg.WithDefaults()
	reg, ok := stores.Lookup(s.Store)
	if !ok {
		return sim.Result{}, configError("Schedule", "unknown store %q; accepted: %s", s.Store, strings.Join(stores.Names(), ", "))
	}
	if reg.Model == nil {
		return sim.Result{}, configError("Schedule", "storecheck has no model of the %s store yet", s.Store)
	}
	var backend sim.Launcher
	switch {
	case b.local != nil:
		backend = sim.InProcess(b.local, s.Store)
	case len(b.command) > 0:
		backend = sim.Exec(b.execOptions(cfg), s.Store)
	default:
		return sim.Result{}, configError("Backend", "no backend: want Reference, InProcess, Adapter or Program")
	}
	res, err := sim.Run(ctx, storeOf(reg).Subject(s.Capabilities), backend, s, sim.ScratchDir())
	if errors.Is(err, ErrNoPowerLoss) {
		return res, err // no verdict, and no backend failure either
	}
	if err != nil {
		return res, &BackendError{err}
	}
	return res, nil
}

// ErrNoPowerLoss is Replay's error (wrapped, with the step and the reason)
// for a schedule that cuts the power where none can be cut: no FUSE here,
// or a backend held to survive no power cut. It is no verdict.
var ErrNoPowerLoss = sim.ErrNoPowerLoss

// ReadSchedule reads a saved schedule of any store the kit knows.
func ReadSchedule(path string) (sim.Schedule, error) {
	return sim.ReadSchedule(path, stores.Contracts())
}
