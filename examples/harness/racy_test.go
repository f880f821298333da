package harness_test

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/examples/harness/mystore"
)

// racyEnv runs TestRacyVariant: the store with its deliberate bug fails by
// design, so it runs only as TestTheSimulatorFindsTheRacyVariant's child.
const racyEnv = "MYSTORE_RACY"

// TestRacyVariant is the store with its deliberate race
// (mystore.Options.Racy: an upsert's check in one transaction, its write in
// another) through the simulator. It reads racyEnv, so its reproduce
// lines set it (Config.Env).
func TestRacyVariant(t *testing.T) {
	if os.Getenv(racyEnv) == "" {
		t.Skip("the racy variant fails by design; TestTheSimulatorFindsTheRacyVariant runs it (" + racyEnv + "=1)")
	}
	conformance.TestWith(t, mystore.Harness(mystore.Options{Racy: true}), conformance.Config{Env: []string{racyEnv}})
}

// goTestLine is the go test line a failure prints: the environment the
// test reads, the subtest, the package's import path, the seed.
var goTestLine = regexp.MustCompile(`(?m)^\s*reproduce: (` + racyEnv + `=\S+) go test -run '([^']+)' github\.com/storecheck/storecheck/examples/harness -storecheck\.seed (\d+)$`)

// child runs this test binary as go test would with args, racyEnv set.
func child(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return childIn(t, racyEnv+"=1", args...)
}

// childIn runs this test binary with args in this process's environment,
// racyEnv as env sets it (else unset).
func childIn(t *testing.T, env string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, racyEnv+"=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run()
	return out.String(), cmd.ProcessState.ExitCode()
}

// The proof of the harness: the specs cannot see the race (one call at a
// time), and the simulator finds it from a seed: the go test of the racy
// variant fails, showing the failure, the shrunk interleaving one column
// per process and the go test line that runs it again; and that line, run,
// fails the same way.
func TestTheSimulatorFindsTheRacyVariant(t *testing.T) {
	dir := t.TempDir()
	out, code := child(t, "-test.run=^TestRacyVariant$", "-storecheck.layers=sim", "-storecheck.seeds=1..3", "-storecheck.report-dir="+dir)
	if code != 1 || !strings.Contains(out, "--- FAIL: TestRacyVariant/sim/continuity") {
		t.Fatalf("the racy variant did not fail the simulator: exit %d\n%s", code, out)
	}
	for _, want := range []string{"FAIL continuity/sim: seed ", "the model allows", "the interleaving, one column per process:",
		"step │ process 0", "│ process 1", "saved in " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure does not show %q:\n%s", want, out)
		}
	}
	m := goTestLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no go test line:\n%s", out)
	}
	fail := regexp.MustCompile(`(?m)^\s*FAIL continuity/sim: seed ` + m[3] + `\n\s*(.*)$`).FindStringSubmatch(out)
	if fail == nil {
		t.Fatalf("no failure of seed %s:\n%s", m[3], out)
	}
	// The line, as the test binary takes it (-run is -test.run), in the
	// environment it sets and no other racyEnv.
	again, code := childIn(t, m[1], "-test.run="+m[2], "-storecheck.seed="+m[3], "-storecheck.report-dir="+t.TempDir())
	if code != 1 || !strings.Contains(again, fail[0]) {
		t.Fatalf("%s go test -run '%s' -storecheck.seed %s does not fail the same way (exit %d); want\n%s\ngot\n%s", m[1], m[2], m[3], code, fail[0], again)
	}
	// The specs pass it: no single call shows a race.
	if out, code := child(t, "-test.run=^TestRacyVariant$/^spec$", "-storecheck.report-dir="+t.TempDir()); code != 0 {
		t.Errorf("the specs failed the racy variant: exit %d\n%s", code, out)
	}
}
