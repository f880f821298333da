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

	// The subjects: the reference first, then every bug of the stores
	// asked for, the shard's share of them.
	subjects := []bugs.Bug{{}}
	sampled := map[bugs.Bug]bool{}
	perStore := map[string]int{}
	for i, b := range stores.Bugs() {
		store := b.Store()
		if !slices.Contains(selected, store) || i%sh.N != sh.I-1 {
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
			table[i] = checkBackend(self, b, names, b.Name() == "" || sampled[b])
			progress.Done(1)
		}()
	}
	wg.Wait()
	progress.Stop()

	result := reports.Run{Tool: "storecheck", Command: "storecheck selftest " + strings.Join(f.line, " "), Backend: "reference and its deliberate bugs", Duration: time.Since(start)}
	code := writeTable(stdout, subjects, table, &result)
	writeReports(f, result, stderr)
	return code
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

// checkBackend runs the reference with bug b (none: the reference itself)
// through every layer for the stores.
func checkBackend(self string, b bugs.Bug, names []string, overExec bool) map[string]verdict {
	out := map[string]verdict{}
	ref := stores.Backend(stores.Options{Bug: b})
	storeArg := strings.Join(names, ",")

	// A layer in a process of its own: the specs always (Ginkgo runs one
	// suite a process), and every layer over the exec adapter, against
	// "storecheck serve" started with the same bug.
	scratch, _ := os.MkdirTemp("", "storecheck-selftest-")
	defer os.RemoveAll(scratch)
	sub := func(args ...string) verdict {
		cmd := exec.Command(self, append([]string{selftestSubject, subjectName(b)}, args...)...)
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
	serve := []string{"--", self, selftestSubject, subjectName(b), "serve"}
	out["spec"] = sub("run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1")
	if overExec {
		out["exec spec"] = sub(append([]string{"run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1"}, serve...)...)
		dir, _ := os.MkdirTemp("", "storecheck-selftest-")
		defer os.RemoveAll(dir)
		var modelled []string
		for _, name := range names {
			if s, _ := stores.Lookup(name); s.Model != nil {
				modelled = append(modelled, name)
			}
		}
		if len(modelled) > 0 {
			list := strings.Join(modelled, ",")
			out["exec lin"] = sub(append([]string{"linearize", "--store", list, "--seed", "1", "--fail-fast", "--quiet", "--report-dir", dir}, serve...)...)
			out["exec sim"] = sub(append([]string{"sim", "--store", list, "--seeds", "1..20", "--fail-fast", "--quiet", "--shrink", "0", "--report-dir", dir}, serve...)...)
		}
	}

	lin := verdict{}
	simv := verdict{}
	for _, name := range names {
		s, _ := stores.Lookup(name)
		if s.Model == nil {
			continue
		}
		start := time.Now()
		c := linearizeStore(context.Background(), ref, s, linearizeConfig{
			run: linearizability.Config{Seed: 1}, timeout: defaultCheckTimeout, reportDir: os.TempDir(),
			command: "storecheck linearize"}, io.Discard)
		lin.ran = true
		if c.Outcome == reports.Failed && !lin.caught {
			lin.caught, lin.took = true, time.Since(start)
		}
		if c.Outcome == reports.Inconclusive {
			lin.note = "inconclusive"
		}

		start = time.Now()
		var firstFail time.Duration
		failed := false
		sim.Sweep(context.Background(), subject(s, nil), sim.InProcess(ref, name), sim.DefaultSeeds.Seeds(sim.Shard{}),
			sim.Params{}, 1, sim.ScratchDir(), func(r sim.Result) {
				if r.Failure != nil && !failed {
					failed, firstFail = true, time.Since(start)
				}
			}, func() bool { return failed })
		simv.ran = true
		if failed && !simv.caught {
			simv.caught, simv.took = true, firstFail
		}
	}
	out["linearizability"], out["sim"] = lin, simv
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
