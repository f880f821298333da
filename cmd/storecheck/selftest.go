package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// The layers a mutant runs through, in table order.
var selftestLayers = []string{"spec", "linearizability", "sim", "exec spec", "exec lin", "exec sim"}

// verdict is one layer's answer on one backend.
type verdict struct {
	ran    bool
	caught bool
	took   time.Duration
	note   string
}

// selftest is "storecheck selftest": every deliberate bug of the reference
// through every layer of the kit, through the adapters a user would use, and
// the unmodified reference through the same; it prints the detection table
// and fails if a bug escapes every layer or the reference is flagged.
func selftest(inv invocation) int {
	f, stdout, stderr := inv.f, inv.stdout, inv.stderr
	selected, ok := parseStores(f.str("store"), "selftest", stderr)
	if !ok {
		return exitUsage
	}
	only, ok := parseBugs(f.str("bugs"), stderr)
	if !ok {
		return exitUsage
	}
	execSample, workers := f.num("exec-sample"), f.num("workers")
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sh, err := sim.ParseShard(f.str("shard"))
	if err != nil {
		fmt.Fprintf(stderr, "storecheck selftest: %v\n", err)
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "storecheck selftest: cannot find this program to run it again: %v\n", err)
		return exitBackend
	}
	seeds := sim.DefaultSeeds
	if f.given("seeds") {
		if seeds, err = sim.ParseSeeds(f.str("seeds")); err != nil {
			fmt.Fprintf(stderr, "storecheck selftest: %v\n", err)
			return exitUsage
		}
	}
	run := selftestRun{self: self, seeds: seeds.Seeds(sim.Shard{}), execSeeds: "1..20", cheapest: f.on("cheapest")}
	if f.given("seeds") {
		run.execSeeds = seeds.String()
	}

	// The subjects: the reference first, then every bug of the stores
	// asked for (of --bugs, when given), the shard's share of them.
	subjects := []bugs.Bug{{}}
	sampled := map[bugs.Bug]bool{}
	perStore := map[string]int{}
	var candidates, unpowered []bugs.Bug
	noFUSE := lossyfs.Available()
	for _, b := range stores.Bugs() {
		if slices.Contains(selected, b.Store()) && (only == nil || only[b]) {
			if b.NeedsPowerCut() && noFUSE != nil {
				unpowered = append(unpowered, b)
				continue
			}
			candidates = append(candidates, b)
		}
	}
	for i, b := range candidates {
		store := b.Store()
		if i%sh.N != sh.I-1 {
			continue
		}
		subjects = append(subjects, b)
		if perStore[store] < execSample {
			perStore[store]++
			sampled[b] = true
		}
	}

	start := time.Now()
	progress := reports.StartProgress(stderr, progressMode(f.on("quiet")), "backends", len(subjects))
	table := make([]map[string]verdict, len(subjects))
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i, b := range subjects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			names := selected
			if b.Name() != "" {
				names = []string{b.Store()}
			}
			table[i] = run.check(b, names, b.Name() == "" || sampled[b])
			progress.Done(1)
		}()
	}
	wg.Wait()
	progress.Stop()

	result := reports.Run{Tool: "storecheck", Command: "storecheck selftest " + strings.Join(f.line, " "), Backend: "reference and its deliberate bugs", Duration: time.Since(start)}
	if len(unpowered) > 0 {
		var names []string
		for _, b := range unpowered {
			names = append(names, b.Name())
		}
		note := fmt.Sprintf("power loss not explored: %v; the bugs only a power cut shows are not checked: %s", noFUSE, strings.Join(names, ", "))
		result.Notes = append(result.Notes, note)
		fmt.Fprintln(stdout, note)
	}
	code := writeTable(stdout, subjects, table, &result)
	writeReports(f, result, stderr)
	return code
}

// parseBugs reads --bugs: the deliberate bugs named (nil: none named, so
// every one).
func parseBugs(list string, stderr io.Writer) (map[bugs.Bug]bool, bool) {
	if strings.TrimSpace(list) == "" {
		return nil, true
	}
	out := map[bugs.Bug]bool{}
	for _, name := range strings.Split(list, ",") {
		b, ok := bugs.ByName(strings.TrimSpace(name))
		if !ok {
			var names []string
			for _, b := range stores.Bugs() {
				names = append(names, b.Name())
			}
			fmt.Fprintf(stderr, "storecheck selftest: %q names no deliberate bug; accepted: %s\n", strings.TrimSpace(name), strings.Join(names, ", "))
			return nil, false
		}
		out[b] = true
	}
	return out, true
}

// selftestSubject is the command selftest starts its processes with:
// "storecheck selftest-subject BUG COMMAND [ARG...]" runs COMMAND against
// the reference with BUG ("none": the reference itself). It is selftest's
// alone: no help lists it, and no other command or environment variable
// opens a broken reference.
const selftestSubject = "selftest-subject"

// runSelftestSubject is "storecheck selftest-subject BUG COMMAND ...".
func runSelftestSubject(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintf(stderr, "storecheck %s: want BUG COMMAND [ARG...]\n", selftestSubject)
		return exitUsage
	}
	b, ok := bugs.ByName(args[0])
	if !ok && args[0] != "none" {
		fmt.Fprintf(stderr, "storecheck %s: %q names no deliberate bug\n", selftestSubject, args[0])
		return exitUsage
	}
	return cli(args[1:], stdout, stderr, stores.Backend(stores.Options{Bug: b}))
}

// subjectName is b as selftestSubject takes it.
func subjectName(b bugs.Bug) string {
	if b.Name() == "" {
		return "none"
	}
	return b.Name()
}

// selftestRun is how one selftest checks its subjects.
type selftestRun struct {
	self string
	// seeds are the in-process simulator layer's sweep; execSeeds the exec
	// simulator layer's (--seeds, else 1..20: a process of its own costs).
	seeds     []int64
	execSeeds string
	// cheapest: a bug not in the exec sample goes through its cheapest
	// catching layer only, the in-process layers tried in cost order.
	cheapest bool
}

// cheapestOrder is the in-process layers in the order of what they cost to
// catch a bug they can: a simulated seed takes milliseconds in this
// process, the specs a process of their own (a second), a history and its
// check a few seconds.
var cheapestOrder = []string{"sim", "spec", "linearizability"}

// check runs the reference with bug b (none: the reference itself) through
// the layers for the stores: every layer, over the exec adapter too, when
// every; else the in-process layers, or with cheapest, the first of them
// (in cost order) that catches b.
func (st selftestRun) check(b bugs.Bug, names []string, every bool) map[string]verdict {
	out := map[string]verdict{}
	ref := stores.Backend(stores.Options{Bug: b})
	storeArg := strings.Join(names, ",")
	var modelled []string
	for _, name := range names {
		if s, _ := stores.Lookup(name); s.Model != nil {
			modelled = append(modelled, name)
		}
	}

	// A layer in a process of its own: the specs always (Ginkgo runs one
	// suite a process), and every layer over the exec adapter, against
	// "storecheck serve" started with the same bug.
	scratch, _ := os.MkdirTemp("", "storecheck-selftest-")
	defer os.RemoveAll(scratch)
	sub := func(args ...string) verdict {
		cmd := exec.Command(st.self, append([]string{selftestSubject, subjectName(b)}, args...)...)
		// Away from the folder's storecheck.json: it configures the
		// checks of a backend, never the broken references'.
		cmd.Dir = scratch
		start := time.Now()
		outb, err := cmd.CombinedOutput()
		v := verdict{ran: true, took: time.Since(start)}
		switch code := cmd.ProcessState.ExitCode(); {
		case err == nil:
		case code == exitFailed:
			v.caught = true
		default:
			v.note = fmt.Sprintf("exit %d: %s", code, lastLine(string(outb)))
		}
		return v
	}
	serve := []string{"--", st.self, selftestSubject, subjectName(b), "serve"}

	layers := map[string]func() verdict{
		"spec": func() verdict {
			return sub("run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1")
		},
		"linearizability": func() verdict {
			v := verdict{}
			for _, name := range modelled {
				s, _ := stores.Lookup(name)
				start := time.Now()
				c := linearizeStore(context.Background(), ref, s, linearizeConfig{
					run: linearizability.Config{Seed: 1}, timeout: defaultCheckTimeout, reportDir: scratch,
					command: "storecheck linearize"}, io.Discard)
				v.ran = true
				if c.Outcome == reports.Failed && !v.caught {
					v.caught, v.took = true, time.Since(start)
				}
				if c.Outcome == reports.Inconclusive {
					v.note = "inconclusive"
				}
			}
			return v
		},
		"sim": func() verdict {
			v := verdict{}
			for _, name := range modelled {
				s, _ := stores.Lookup(name)
				start := time.Now()
				var firstFail time.Duration
				failed := false
				sim.Sweep(context.Background(), subject(s), sim.InProcess(ref, name), st.seeds,
					sim.Params{PowerCuts: true}, 1, sim.ScratchDir(), func(r sim.Result) {
						if r.Failure != nil && !failed {
							failed, firstFail = true, time.Since(start)
						}
					}, func() bool { return failed })
				v.ran = true
				if failed && !v.caught {
					v.caught, v.took = true, firstFail
				}
			}
			return v
		},
	}
	// The exec layers run beside the in-process ones: a subject that goes
	// through every layer is the longest row of the table.
	execOut := map[string]verdict{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !every {
			return
		}
		execOut["exec spec"] = sub(append([]string{"run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1"}, serve...)...)
		if len(modelled) > 0 {
			list := strings.Join(modelled, ",")
			execOut["exec lin"] = sub(append([]string{"linearize", "--store", list, "--seed", "1", "--fail-fast", "--quiet", "--report-dir", scratch}, serve...)...)
			execOut["exec sim"] = sub(append([]string{"sim", "--store", list, "--seeds", st.execSeeds, "--fail-fast", "--quiet", "--shrink", "0", "--report-dir", scratch}, serve...)...)
		}
	}()
	for _, l := range cheapestOrder {
		out[l] = layers[l]()
		if st.cheapest && !every && out[l].caught {
			break
		}
	}
	<-done
	for l, v := range execOut {
		out[l] = v
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// writeTable prints the detection table and the counts, records each cell
// as a check, and returns the exit code: 1 when a bug escaped every layer or
// the reference was flagged.
func writeTable(w io.Writer, subjects []bugs.Bug, table []map[string]verdict, result *reports.Run) int {
	fmt.Fprintf(w, "%-40s %-11s", "backend", "store")
	for _, l := range selftestLayers {
		fmt.Fprintf(w, " %-16s", l)
	}
	fmt.Fprintln(w)
	caught := map[string]int{}
	ran := map[string]int{}
	times := map[string][]time.Duration{}
	var escaped, flagged []string
	code := exitPassed
	for i, b := range subjects {
		name, store := b.Name(), b.Store()
		if name == "" {
			name, store = "reference (no bug)", "all"
		}
		fmt.Fprintf(w, "%-40s %-11s", name, store)
		any := false
		for _, l := range selftestLayers {
			v := table[i][l]
			cell := "-"
			switch {
			case !v.ran:
			case v.note != "":
				cell = "? " + v.note
			case b.Name() == "" && v.caught:
				cell = "FLAGGED"
				flagged = append(flagged, l)
			case b.Name() == "":
				cell = "clean"
			case v.caught:
				cell = fmt.Sprintf("caught %v", v.took.Round(10*time.Millisecond))
				caught[l]++
				times[l] = append(times[l], v.took)
				any = true
			default:
				cell = "missed"
			}
			if v.ran && b.Name() != "" {
				ran[l]++
			}
			fmt.Fprintf(w, " %-16s", cell)
			if v.ran {
				c := reports.Check{Store: store, Layer: "selftest " + l, Name: name, Outcome: reports.Passed, Duration: v.took}
				if (b.Name() == "") == v.caught || v.note != "" {
					c.Outcome, c.Message = reports.Failed, cell
				}
				if b.Name() != "" && !v.caught {
					c.Outcome, c.Message = reports.Skipped, "this layer does not catch this bug"
				}
				result.Checks = append(result.Checks, c)
			}
		}
		fmt.Fprintln(w)
		if b.Name() != "" && !any {
			escaped = append(escaped, name)
		}
	}
	fmt.Fprintf(w, "\ncaught per layer:")
	for _, l := range selftestLayers {
		fmt.Fprintf(w, " %s %d/%d", l, caught[l], ran[l])
		if len(times[l]) > 0 {
			fmt.Fprintf(w, " (median %v)", median(times[l]).Round(10*time.Millisecond))
		}
		fmt.Fprint(w, ";")
	}
	fmt.Fprintln(w)
	if len(escaped) > 0 {
		fmt.Fprintf(w, "ESCAPED every layer: %s\n", strings.Join(escaped, ", "))
		code = exitFailed
	} else {
		fmt.Fprintf(w, "escaped every layer: none of %d bugs\n", len(subjects)-1)
	}
	if len(flagged) > 0 {
		fmt.Fprintf(w, "THE REFERENCE WAS FLAGGED by: %s\n", strings.Join(flagged, ", "))
		code = exitFailed
	} else {
		fmt.Fprintln(w, "the reference: flagged by no layer")
	}
	return code
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
