package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/fault/lossyfs"
)

// "storecheck sim --exhaustive" says, for each store, how many crash states
// of its small workloads there are, in how many classes, how many it
// checked and how long it took: the reference passes every class, none
// left unchecked; synchronous=OFF fails, with the trace and a saved
// schedule that replays the failure (a bound of 4 classes a cut keeps it
// quick).
func TestSimExhaustiveChecksEveryCrashStateAndSaysHowMany(t *testing.T) {
	t.Parallel()
	needFUSE(t)
	// The runtime store's enumeration is the shortest (5 workloads).
	line := regexp.MustCompile(`(?m)^runtime: \d+ workloads, \d+ cuts \(\d+ with writes or entry ops not yet durable, \d+ after a failing sync\): (every one )?of \d+( \([0-9.e]+\))? crash states, in \d+ classes, \d+ classes checked in [0-9.hms]+`)
	out, errs, code := storecheck(t, "file", "sim", "--store", "runtime", "--exhaustive")
	if code != exitPassed || !line.MatchString(out) || !strings.Contains(out, "every one of") || !strings.Contains(out, "(0 unchecked), 0 failing") {
		t.Fatalf("the reference: exit %d\n%s\n%s", code, out, errs)
	}
	const bug = "bug:runtime_synchronous_off"
	dir := t.TempDir()
	out, errs, code = storecheck(t, bug, "sim", "--store", "runtime", "--exhaustive", "--exhaustive-bound", "4", "--report-dir", dir)
	saved := regexp.MustCompile(`saved: (\S+)`).FindAllStringSubmatch(out, -1)
	if code != exitFailed || !line.MatchString(out) || !strings.Contains(out, "FAIL ") || len(saved) != 1 ||
		saved[0][1] != filepath.Join(dir, "sim-exhaustive-runtime", "schedule.json") {
		t.Fatalf("synchronous=OFF: exit %d, want %d, failures and the first's schedule saved in the report folder\n%s\n%s", code, exitFailed, out, errs)
	}
	schedule := saved[0][1]
	if out, errs, code := storecheck(t, bug, "replay", schedule); code != exitFailed {
		t.Fatalf("the saved schedule against the bug: exit %d\n%s\n%s", code, out, errs)
	}
	if out, errs, code := storecheck(t, "file", "replay", schedule); code != exitPassed {
		t.Fatalf("the saved schedule against the reference: exit %d\n%s\n%s", code, out, errs)
	}
}

// Without FUSE the exhaustive mode explores nothing and says why (exit 4,
// never a pass); a bound below 1 is a usage error.
func TestSimExhaustiveWithoutFUSESaysWhyAndABadBoundIsAUsageError(t *testing.T) {
	t.Parallel()
	out, errs, code := storecheckEnv(t, []string{lossyfs.DeviceEnv + "=/nonexistent"}, "file", "sim", "--store", "runtime", "--exhaustive")
	if code != exitInconclusive || !strings.Contains(out, "runtime: not explored: power loss not explored: no FUSE device") {
		t.Errorf("without FUSE: exit %d, want %d, saying why\n%s\n%s", code, exitInconclusive, out, errs)
	}
	if _, errs, code := storecheck(t, "file", "sim", "--exhaustive", "--exhaustive-bound", "0"); code != exitUsage || !strings.Contains(errs, "--exhaustive-bound 0") {
		t.Errorf("a bound of 0: exit %d, want %d\n%s", code, exitUsage, errs)
	}
}
