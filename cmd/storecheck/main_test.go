package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/testmain"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
)

// Tests that run the command as a shell would start this test binary again
// as the storecheck command (see TestMain), with the harness named in
// harnessEnv: its exit, its stdout and stderr are its own, and the runs
// overlap (t.Parallel).
const harnessEnv = "STORECHECK_TEST_HARNESS"

func TestMain(m *testing.M) {
	if name, ok := os.LookupEnv(harnessEnv); ok {
		if len(os.Args) == 3 && os.Args[1] == "fake-backend" {
			fakeBackend(os.Args[2])
			os.Exit(0)
		}
		o := stores.Options{}
		switch {
		case name == "memory":
			o.InMemory = true
		case strings.HasPrefix(name, "bug:"):
			b, ok := bugs.ByName(strings.TrimPrefix(name, "bug:"))
			if !ok {
				fmt.Fprintf(os.Stderr, "no bug %q\n", name)
				os.Exit(99)
			}
			o.Bug = b
		}
		os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr, conformance.Adapter(stores.Backend(o))))
	}
	os.Exit(testmain.OnTmpfs(func() int { return testmain.LeavesNoFolder(conformance.DefaultReportDir, m.Run) }))
}

// storecheck runs the command in a new process against the named harness.
func storecheck(t *testing.T, harness string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return storecheckEnv(t, nil, harness, args...)
}

// storecheckEnv is storecheck with more environment. It runs in a folder
// of its own: a check that fails (or is inconclusive, on a loaded machine)
// keeps its files in the default report folder, storecheck-report in the
// working folder, which must not be this package's source folder.
func storecheckEnv(t *testing.T, env []string, harness string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(os.Environ(), harnessEnv+"="+harness), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run storecheck: %v", err)
	}
	return out.String(), errb.String(), code
}

// tally matches a store's summary line.
func tally(store, layer string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^  ` + store + `\s+` + layer + `\s+(\d+) passed\s+(\d+) failed\s+(\d+) skipped`)
}

func TestRunPassesTheReference(t *testing.T) {
	t.Parallel() // a subprocess a run: the longest tests overlap
	for _, harness := range []string{"file", "memory"} {
		t.Run(harness, func(t *testing.T) {
			args := []string{"run", "--seed", "7", "--ops", "500", "--report-dir", t.TempDir()}
			if harness == "memory" {
				// In memory, what matters is what the specs skip, and why.
				args = append(args, "--layers", "spec")
			}
			out, errs, code := storecheck(t, harness, args...)
			if code != exitPassed {
				t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
			}
			for _, store := range stores.Names() {
				layers := []string{"spec"}
				if k, _ := stores.Lookup(store); k.Model != nil && harness != "memory" {
					layers = append(layers, "linearizability")
				}
				for _, layer := range layers {
					m := tally(store, layer).FindStringSubmatch(out)
					if m == nil || m[1] == "0" || m[2] != "0" {
						t.Fatalf("want a %s %s line with passes and no failures:\n%s", store, layer, out)
					}
				}
			}
			if !strings.Contains(out, "seed 7") {
				t.Errorf("the summary does not print the seed:\n%s", out)
			}
			if harness == "memory" && !strings.Contains(out, "skip continuity/spec: backend does not declare capability files") {
				t.Errorf("in memory, the file specs must be skipped with a reason:\n%s", out)
			}
		})
	}
}

func TestNoArgumentsRunsTheSuite(t *testing.T) {
	dir := t.TempDir()
	// What the run covers is another test's: here one store's specs.
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"stores": ["`+stores.Names()[0]+`"], "layers": "spec"}`), 0o644)
	cmd := exec.Command(os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), harnessEnv+"=file")
	b, err := cmd.Output()
	out, code := string(b), cmd.ProcessState.ExitCode()
	if err != nil && code == 0 {
		t.Fatal(err)
	}
	if code != exitPassed || tally(stores.Names()[0], "spec").FindString(out) == "" {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// fullTestsEnv asks for the slow tests whole: every deliberate bug through
// the specs that name it, in process and over the wire, and selftest's
// whole detection table. Without it, go test ./... runs a representative
// slice of them (sampledBugs, selftest --cheapest).
const fullTestsEnv = "STORECHECK_FULL_TESTS"

func fullTests() bool { return os.Getenv(fullTestsEnv) != "" }

// sampledBugs are the bugs a slow per-bug test runs: every one with
// STORECHECK_FULL_TESTS, else the first of each store (the bugs selftest
// runs over the exec adapter) and ContinuityProcessLock (the racy bug no
// test of the linearizability package reproduces on its own).
func sampledBugs(t *testing.T) []bugs.Bug {
	if fullTests() {
		return stores.Bugs()
	}
	t.Logf("a sample of the deliberate bugs; %s=1 runs every one", fullTestsEnv)
	var out []bugs.Bug
	for _, s := range stores.All {
		if len(s.Bugs) > 0 {
			out = append(out, s.Bugs[0])
		}
	}
	return append(out, bugs.ContinuityProcessLock)
}

// raceTries is how many histories a test gives a race to show in: a
// race shows in a history of real concurrency as the machine schedules it,
// and on a loaded machine one history in about eight ran the racing calls
// one after the other. Three catch it, or the check does not.
const raceTries = 3

// raced runs storecheck against backend with the args of seeds first,
// first+1, ... until one exits failed or tries ran, and answers the last
// run and its seed.
func raced(t *testing.T, backend string, first, tries int, args func(seed int) []string) (out, errs string, code, seed int) {
	t.Helper()
	for seed = first; seed < first+tries; seed++ {
		if seed > first {
			t.Logf("seed %d's history did not catch the race; seed %d", seed-1, seed)
		}
		if out, errs, code = storecheck(t, backend, args(seed)...); code != exitPassed {
			break
		}
	}
	return out, errs, code, seed
}

// expectedFailures names, for each deliberate bug, specs that must fail
// against it. Each store's file adds its bugs (bugs_<store>_test.go).
var expectedFailures = map[bugs.Bug][]string{}

// linearizeOnly are the bugs no spec shows, the races (no single-threaded
// spec can show them): the linearizability check of storecheck run must
// catch them instead.
var linearizeOnly = map[bugs.Bug]string{
	bugs.ContinuityProcessLock:          "continuity",
	bugs.ContinuityUpsertCheckOutsideTx: "continuity",
	// Declared without shared_files: one handle's callers race.
	bugs.ContinuityOneProcessCheckOutsideTx: "continuity",
	bugs.RuntimeLeaseClaimOutsideTx:         "runtime",
	bugs.ClientSettleCheckOutsideTx:         "client",
}

// Every deliberate bug names the specs that catch it, or is one only
// concurrency shows; and a bug breaks one store, whose name its own starts
// with.
func TestEveryBugNamesWhatCatchesIt(t *testing.T) {
	for _, b := range stores.Bugs() {
		if _, racy := linearizeOnly[b]; len(expectedFailures[b]) == 0 && !racy {
			t.Errorf("bug %s has no expected failures in expectedFailures", b.Name())
		}
		if !strings.HasPrefix(b.Name(), b.Store()+"_") {
			t.Errorf("bug %s of store %q is not named after it", b.Name(), b.Store())
		}
	}
}

// Each deliberate bug must make the specs that state its rule fail: the suite
// catches what it claims to catch.
func TestBrokenReferenceFailsTheNamedSpecs(t *testing.T) {
	for _, b := range sampledBugs(t) {
		t.Run(b.Name(), func(t *testing.T) {
			t.Parallel()
			if b.NeedsPowerCut() {
				needFUSE(t)
			}
			want := expectedFailures[b]
			store, racy := linearizeOnly[b]
			only := b.Store()
			layers := "spec"
			if racy {
				layers = "spec,linearizability"
			}
			tries := 1
			if racy {
				tries = raceTries
			}
			out, errs, code, _ := raced(t, "bug:"+b.Name(), 1, tries, func(seed int) []string {
				return []string{"run", "--store", only, "--layers", layers, "--seed", fmt.Sprint(seed), "--report-dir", t.TempDir()}
			})
			if code != exitFailed {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailed, out, errs)
			}
			if racy && !strings.Contains(out, "FAIL "+store+"/linearizability: ") {
				t.Errorf("the linearizability check did not fail:\n%s", out)
			}
			for _, name := range want {
				store, _, _ := strings.Cut(name, " ")
				if !strings.Contains(out, "FAIL "+store+"/spec: "+name+"\n") {
					t.Errorf("spec %q did not fail:\n%s", name, out)
				}
			}
		})
	}
}

// The same bugs are caught over the wire: storecheck run -- storecheck
// serve, with serve opening the broken reference.
func TestBrokenServeFailsTheNamedSpecsOverTheWire(t *testing.T) {
	for _, b := range sampledBugs(t) {
		t.Run(b.Name(), func(t *testing.T) {
			t.Parallel()
			if b.NeedsPowerCut() {
				needFUSE(t)
			}
			if len(expectedFailures[b]) == 0 {
				t.Skip("no spec catches this bug: the linearizability check does")
			}
			out, errs, code := storecheck(t, "bug:"+b.Name(), "run", "--store", b.Store(), "--layers", "spec", "--seed", "1", "--", os.Args[0], "serve")
			if code != exitFailed {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailed, out, errs)
			}
			for _, name := range expectedFailures[b] {
				store, _, _ := strings.Cut(name, " ")
				if !strings.Contains(out, "FAIL "+store+"/spec: "+name+"\n") {
					t.Errorf("spec %q did not fail:\n%s", name, out)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	h := conformance.Reference()
	runAccepted := "accepted flags: --store, --layers, --seed, --spec, --ops, --check-timeout, --reply-timeout, --report-dir, --fail-fast, --long-specs, --verbose"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--bogus"}, "storecheck run: flag provided but not defined: -bogus; " + runAccepted + "\n"},
		{[]string{"run", "--store", "nope"}, "storecheck run: unknown store \"nope\"; accepted: " + strings.Join(stores.Names(), ", ") + "\n"},
		{[]string{"run", "--seed", "x"}, "storecheck run: invalid value \"x\" for flag -seed: parse error; " + runAccepted + "\n"},
		{[]string{"run", "extra"}, "storecheck run: unexpected argument \"extra\"; " + runAccepted + "\n"},
		{[]string{"run", "--"}, "storecheck run: no command after --; " + runAccepted + "\n"},
		{[]string{"serve", "extra"}, "storecheck serve: unexpected argument \"extra\"; usage: storecheck serve\n"},
		{[]string{"selftest", "--bugs", "client_due_times_as_text,nope"}, "storecheck selftest: \"nope\" names no deliberate bug; accepted: " + strings.Join(bugNames(), ", ") + "\n"},
		{[]string{"frobnicate"}, "storecheck: unknown command \"frobnicate\"; accepted: run, linearize, check, sim, replay, merge, selftest, serve, help\n"},
		// A narrowing the run would ignore, named as it was given.
		{[]string{"run", "--layers", "linearizability", "--spec", "continuity x"}, "storecheck run: --spec 'continuity x' narrows the spec layer, which the run does not run (its layers: linearizability): run the spec layer too, or narrow nothing\n"},
	} {
		var out, errs bytes.Buffer
		if code := cli(tc.args, &out, &errs, h); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if errs.String() != tc.want {
			t.Errorf("%v: stderr %q, want %q", tc.args, errs.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: a usage error printed to stdout: %q", tc.args, out.String())
		}
	}
}

// run --store S shows S's own specs in its progress: Ginkgo's count and its
// marks are the store's, not every store's with the others skipped.
func TestRunOfOneStoreShowsItsOwnSpecs(t *testing.T) {
	store := stores.Names()[0]
	out, errs, code := storecheck(t, "file", "run", "--store", store, "--layers", "spec", "--seed", "1")
	if code != exitPassed {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	m := tally(store, "spec").FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s spec line:\n%s", store, out)
	}
	var passed, failed, skipped int
	fmt.Sscan(m[1], &passed)
	fmt.Sscan(m[2], &failed)
	fmt.Sscan(m[3], &skipped)
	total := passed + failed + skipped
	progress := regexp.MustCompile(` - (\d+)/(\d+) specs ([•S✗F]*)`).FindStringSubmatch(out)
	if progress == nil {
		t.Fatalf("no Ginkgo progress line:\n%s", out)
	}
	if progress[1] != fmt.Sprint(total) || progress[2] != fmt.Sprint(total) {
		t.Errorf("Ginkgo says %s/%s specs, the %s store has %d:\n%s", progress[1], progress[2], store, total, out)
	}
	if marks := []rune(progress[3]); len(marks) != total || strings.Count(progress[3], "S") != skipped {
		t.Errorf("Ginkgo marks %d specs (%d skipped), the %s store has %d (%d skipped): %s", len(marks), strings.Count(progress[3], "S"), store, total, skipped, progress[3])
	}
}

// bugNames are the deliberate bugs' names, in registry order.
func bugNames() []string {
	var out []string
	for _, b := range stores.Bugs() {
		out = append(out, b.Name())
	}
	return out
}
