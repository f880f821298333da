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
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reference"
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
	for i, b := range bugs.All() {
		store := storeOfBug(b)
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
			stores := selected
			if b.Name() != "" {
				stores = []string{storeOfBug(b)}
			}
			table[i] = checkBackend(self, b, stores, b.Name() == "" || sampled[b])
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

// storeOfBug is the store a bug breaks: its name starts with the store's.
func storeOfBug(b bugs.Bug) string {
	for _, s := range stores {
		if strings.HasPrefix(b.Name(), s+"_") {
			return s
		}
	}
	return ""
}

// checkBackend runs the reference with bug b (none: the reference itself)
// through every layer for the stores.
func checkBackend(self string, b bugs.Bug, stores []string, overExec bool) map[string]verdict {
	out := map[string]verdict{}
	ref := reference.Options{Bug: b}
	h := reference.Harness(ref)
	env := append(os.Environ(), bugEnv+"="+b.Name())
	if b.Name() == "" {
		env = append(os.Environ(), bugEnv+"=none")
	}
	storeArg := strings.Join(stores, ",")

	// A layer in a process of its own: the specs always (Ginkgo runs one
	// suite a process), and every layer over the exec adapter, against
	// "storecheck serve" started with the same bug.
	scratch, _ := os.MkdirTemp("", "storecheck-selftest-")
	defer os.RemoveAll(scratch)
	sub := func(args ...string) verdict {
		cmd := exec.Command(self, args...)
		cmd.Env = env
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
	serve := []string{"--", self, "serve"}
	out["spec"] = sub("run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1")
	if overExec {
		out["exec spec"] = sub(append([]string{"run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1"}, serve...)...)
		dir, _ := os.MkdirTemp("", "storecheck-selftest-")
		defer os.RemoveAll(dir)
		var modelled []string
		for _, name := range stores {
			if k, _ := kitOf(name); k.model != nil {
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
	for _, name := range stores {
		k, _ := kitOf(name)
		if k.model == nil {
			continue
		}
		start := time.Now()
		c := linearizeStore(context.Background(), h, k, linearizeConfig{
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
		sim.Sweep(context.Background(), k.subject(nil), sim.InProcess(reference.Backend(ref), name), sim.DefaultSeeds.Seeds(sim.Shard{}),
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
		name, store := b.Name(), storeOfBug(b)
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
