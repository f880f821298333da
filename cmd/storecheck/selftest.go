package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/internal/selftest"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// selftestCommand is "storecheck selftest": every deliberate bug of the
// reference through every layer of the kit, through the adapters a user
// would use, and the unmodified reference through the same
// (internal/selftest); it prints the detection table and fails if a bug
// escapes every layer or the reference is flagged.
func selftestCommand(inv invocation) int {
	f, stdout, stderr := inv.f, inv.stdout, inv.stderr
	stores := list(f.str("store"))
	if err := (conformance.Config{Stores: stores}).Validate(); err != nil {
		fmt.Fprintf(stderr, "storecheck selftest: %s\n", err.(*conformance.ConfigError).Problem)
		return exitUsage
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
	o := selftest.Options{Stores: stores, Shard: sh, Seeds: sim.DefaultSeeds, ExecSeeds: sim.SeedRange{First: 1, Last: 20},
		Cheapest: f.on("cheapest"), ExecSample: f.num("exec-sample"), Ops: f.num("ops"), Workers: f.num("workers"), Self: []string{self, selftestSubject}}
	if strings.TrimSpace(f.str("bugs")) != "" {
		o.Bugs = list(f.str("bugs"))
	}
	if f.given("seeds") {
		if o.Seeds, err = sim.ParseSeeds(f.str("seeds")); err != nil {
			fmt.Fprintf(stderr, "storecheck selftest: %v\n", err)
			return exitUsage
		}
		o.ExecSeeds = o.Seeds
	}
	start := time.Now()
	var progress *reports.Progress
	o.Started = func(n int) { progress = reports.StartProgress(stderr, progressMode(f.on("quiet")), "backends", n) }
	o.Done = func() { progress.Done(1) }
	table, err := selftest.Run(o)
	if progress != nil {
		progress.Stop()
	}
	if err != nil {
		fmt.Fprintf(stderr, "storecheck selftest: %v\n", err)
		return exitUsage
	}
	result := reports.Run{Tool: "storecheck", Command: "storecheck selftest " + strings.Join(f.line, " "), Backend: "reference and its deliberate bugs", Duration: time.Since(start),
		Notes: table.Notes}
	for _, n := range table.Notes {
		fmt.Fprintln(stdout, n)
	}
	code := writeTable(stdout, table.Rows, &result)
	reports.WriteAnnotations(stdout, selftestFailures(result, table.Rows))
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
	b, err := selftest.Subject(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "storecheck %s: %q names no deliberate bug\n", selftestSubject, args[0])
		return exitUsage
	}
	return cli(args[1:], stdout, stderr, b)
}

// writeTable prints the detection table and the counts, records each cell
// as a check, and returns the exit code: 1 when a bug escaped every layer or
// the reference was flagged.
func writeTable(w io.Writer, rows []selftest.Row, result *reports.Run) int {
	fmt.Fprintf(w, "%-40s %-11s", "backend", "store")
	for _, l := range selftest.Layers {
		fmt.Fprintf(w, " %-16s", l)
	}
	fmt.Fprintln(w)
	caught := map[string]int{}
	ran := map[string]int{}
	times := map[string][]time.Duration{}
	var escaped, flagged []string
	code := exitPassed
	for _, row := range rows {
		bug, name, store := row.Bug, row.Bug, row.Store
		if name == "" {
			name = "reference (no bug)"
		}
		fmt.Fprintf(w, "%-40s %-11s", name, store)
		any := false
		for _, l := range selftest.Layers {
			v := row.Verdicts[l]
			cell := "-"
			switch {
			case !v.Ran:
			case v.Note != "":
				cell = "? " + v.Note
			case bug == "" && v.Caught:
				cell = "FLAGGED"
				flagged = append(flagged, l)
			case bug == "":
				cell = "clean"
			case v.Caught:
				cell = fmt.Sprintf("caught %v", v.Took.Round(10*time.Millisecond))
				caught[l]++
				times[l] = append(times[l], v.Took)
				any = true
			default:
				cell = "missed"
			}
			if v.Ran && bug != "" {
				ran[l]++
			}
			fmt.Fprintf(w, " %-16s", cell)
			if v.Ran {
				c := reports.Check{Store: store, Layer: "selftest " + l, Name: name, Outcome: reports.Passed, Duration: v.Took}
				if (bug == "") == v.Caught || v.Note != "" {
					c.Outcome, c.Message = reports.Failed, cell
				}
				if bug != "" && !v.Caught {
					c.Outcome, c.Message = reports.Skipped, "this layer does not catch this bug"
				}
				if v.Caught {
					// What the layer said: it names the rule broken.
					c.Details = v.Failure
				}
				result.Checks = append(result.Checks, c)
			}
		}
		fmt.Fprintln(w)
		if bug != "" && !any {
			escaped = append(escaped, name)
		}
	}
	fmt.Fprintf(w, "\ncaught per layer:")
	for _, l := range selftest.Layers {
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
		fmt.Fprintf(w, "escaped every layer: none of %d bugs\n", len(rows)-1)
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
