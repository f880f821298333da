package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
)

// Every deliberate bug is caught by some layer, and the unmodified reference
// by none: storecheck selftest exits 0 and its table says so. By default a
// representative slice: every bug through its cheapest catching layer
// (--cheapest: the simulator over 10 seeds, else the specs, else a
// history), the reference and the exec sample (one bug of each store)
// through every layer. STORECHECK_FULL_TESTS=1 runs the whole table, every
// bug through every layer, as "storecheck selftest" does.
func TestSelftestCatchesEveryBugAndNeverTheReference(t *testing.T) {
	t.Parallel() // a subprocess a run: the longest tests overlap
	dir := t.TempDir()
	args := []string{"selftest", "--quiet", "--cheapest", "--seeds", "1..5", "--ops", "500", "--report-dir", dir}
	if fullTests() {
		args = []string{"selftest", "--quiet", "--report-dir", dir}
	} else {
		t.Logf("selftest --cheapest; %s=1 runs the whole table", fullTestsEnv)
	}
	out, errs, code := storecheck(t, "file", args...)
	if code != exitPassed {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !regexp.MustCompile(`(?m)^escaped every layer: none of \d+ bugs$`).MatchString(out) ||
		!strings.Contains(out, "the reference: flagged by no layer") {
		t.Fatalf("table:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^reference \(no bug\)\s+all(\s+clean){6}\s*$`).MatchString(out) {
		t.Fatalf("the reference row is not clean in every layer:\n%s", out)
	}
	// The exec sample goes through every layer: one row of each store with
	// no layer left out.
	for _, store := range stores.Names() {
		if !regexp.MustCompile(`(?m)^\S+\s+` + store + `(\s+(caught \S+|missed)){6}\s*$`).MatchString(out) {
			t.Errorf("no bug of %s went through every layer:\n%s", store, out)
		}
	}
	checkFailuresNameRules(t, filepath.Join(dir, reports.JSONFile))
}

// checkFailuresNameRules holds, over the selftest's report, that every
// failure a layer gave of a deliberate bug it caught names a rule of the
// bug's contract (by its ID), and, for the simulator's layers, the rule the
// bug breaks where its entry says which
// (bugs.Breaks: one of them, where it breaks several): the bug corpus as a test that failures explain.
func checkFailuresNameRules(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run reports.Run
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	caught := 0
	for _, c := range run.Checks {
		layer := strings.TrimPrefix(c.Layer, "selftest ")
		b, ok := bugs.ByName(c.Name)
		if !ok || c.Details == "" {
			continue
		}
		caught++
		st, _ := stores.Lookup(b.Store())
		var named []string
		for _, r := range st.Contract.Rules {
			if strings.Contains(c.Details, r.ID) {
				named = append(named, r.ID)
			}
		}
		if len(named) == 0 {
			t.Errorf("%s, caught by %s: its failure names no rule of the %s contract:\n%s", b.Name(), layer, b.Store(), clipLines(c.Details, 30))
			continue
		}
		// The simulator's failure is one seed's, the same every run, so it
		// is held to the rule the bug breaks. A linearizability history is
		// real concurrency: which operation the check cannot place (a
		// write, or the read after it that saw its effect) changes from
		// run to run, so there it is held to naming a rule, as above.
		if !strings.HasSuffix(layer, "sim") {
			continue
		}
		breaks := bugs.Breaks(b)
		for _, want := range breaks {
			if _, ok := st.Contract.Rule(want); !ok {
				t.Errorf("%s: bugs.Breaks names %s, no rule of the %s contract", b.Name(), want, b.Store())
			}
		}
		if len(breaks) > 0 && !slices.ContainsFunc(breaks, func(want string) bool { return strings.Contains(c.Details, want) }) {
			t.Errorf("%s, caught by %s: its failure names %s, none of %s, the rules the bug breaks:\n%s", b.Name(), layer, strings.Join(named, ", "), strings.Join(breaks, ", "), clipLines(c.Details, 30))
		}
	}
	if caught == 0 {
		t.Fatalf("the report %s holds no failure of a caught bug", path)
	}
}

// clipLines is s cut to its first n lines.
func clipLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines[n] = "…"
	}
	return strings.Join(lines, "\n")
}
