package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/stores"
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
	args := []string{"selftest", "--quiet", "--cheapest", "--seeds", "1..5", "--ops", "500"}
	if fullTests() {
		args = []string{"selftest", "--quiet"}
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
}
