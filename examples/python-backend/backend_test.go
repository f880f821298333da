package pythonbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/internal/testmain"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/suite"
)

// Each test starts this test binary again with suiteEnv set, so that the
// two readings' runs (readingsEnv, which the backend inherits) overlap;
// TestMain then runs the whole suite against the Python backend through
// the exec adapter, as "storecheck run -- python3 backend.py" would.
const suiteEnv = "STORECHECK_PYTHON_BACKEND_SUITE"

// readingsEnv is the backend's attribution switch (readings.py): unset, the
// backend answers with its own readings of what the seeds leave open;
// "silences", with the reference's readings of them.
const readingsEnv = "PY2_KIT_READINGS"

var storeNames = []string{"continuity", "runtime", "client"}

// allowedSkip lists the spec groups the backend skips on purpose, because
// of a capability it declares or leaves out:
//   - the client's schema marker: with its own reading the marker lives in a
//     table of its own (READINGS.md K1), so it declares client_schema_writer
//     and not client_schema_table; with the reference's reading, the other
//     way round;
//   - continuity revisions: it declares snapshot_revision "opaque", so the
//     spec that computes a sha256 revision itself does not apply;
//   - a long spec (suite.Long): the run did not ask for long specs.
var allowedSkip = regexp.MustCompile(`^skip (client/spec: backend does not declare capability client_schema_(table|writer)|continuity/spec: backend does not declare capability snapshot_revision "sha256"|client/spec: a long spec, not run: )`)

// powerLossSkip is the skip of a power-loss spec where no FUSE mount can
// be made.
var powerLossSkip = regexp.MustCompile(`^skip (client|runtime|continuity)/spec: power loss not explored: `)

func TestMain(m *testing.M) {
	if os.Getenv(suiteEnv) != "" {
		e, err := adapters.StartExec(context.Background(), adapters.ExecOptions{Command: []string{"python3", "backend.py"}, Contracts: stores.Contracts()})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		h := suite.HarnessOf(e)
		r := reports.Run{Backend: h.Name, Seed: 1}
		for _, res := range suite.Run(h, suite.Config{Seed: 1}) {
			r.Checks = append(r.Checks, reports.Check{Store: res.Store, Layer: suite.Layer, Name: res.Name, Outcome: reports.Outcome(res.Outcome), Message: res.Message})
		}
		e.Close()
		reports.WriteText(os.Stdout, r)
		switch {
		case e.Err() != nil:
			fmt.Fprintln(os.Stderr, e.Err())
			os.Exit(3)
		case r.Failed():
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testmain.OnTmpfs(m.Run))
}

// runSuite runs the suite in a child process with the given readings and
// checks that every spec of all three stores passed.
func runSuite(t *testing.T, readings string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH: the Python backend is not checked")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), suiteEnv+"=1", readingsEnv+"="+readings)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	text := out.String()
	for _, store := range storeNames {
		m := regexp.MustCompile(`(?m)^  ` + store + `\s+spec\s+(\d+) passed\s+(\d+) failed\s+(\d+) skipped`).FindStringSubmatch(text)
		switch {
		case m == nil:
			t.Errorf("%s: no spec line in the report", store)
		case m[1] == "0" || m[2] != "0":
			t.Errorf("%s: want every spec to pass, got %s passed, %s failed", store, m[1], m[2])
		}
	}
	// Where FUSE cannot be had here, the power-loss specs are skipped with
	// the reason: that is the machine, not the backend.
	noFUSE := lossyfs.Available() != nil
	for _, line := range strings.Split(text, "\n") {
		if noFUSE && powerLossSkip.MatchString(line) {
			continue
		}
		if strings.HasPrefix(line, "skip ") && !allowedSkip.MatchString(line) {
			t.Errorf("a spec group was skipped that the backend means to cover: %s", line)
		}
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("the suite against the Python backend: %v", runErr)
	}
	if t.Failed() {
		t.Logf("report:\n%s\nstderr:\n%s", text, errb.String())
	}
}

// TestPythonBackendPassesTheSuite is the claim the backend exists to test:
// a backend that follows the seeds, and reads their silences its own way
// (READINGS.md), passes every spec. Where it does not, FINDINGS.md says why
// the kit, not the backend, is wrong.
func TestPythonBackendPassesTheSuite(t *testing.T) {
	t.Parallel() // each a process of its own: the two overlap
	runSuite(t, "")
}

// TestPythonBackendWithTheReferencesReadingsPassesTheSuite: the same backend
// reading every silence the way the reference does (readings.py, "silences")
// passes too. Where a seed is silent both readings pass; where it speaks
// the backend follows it either way.
func TestPythonBackendWithTheReferencesReadingsPassesTheSuite(t *testing.T) {
	t.Parallel()
	runSuite(t, "silences")
}

// raceInsideTheProcess is what a sweep says of a store run as one process
// with one operation in flight at a time (sim.Result.Unexplored).
const raceInsideTheProcess = "continuity: " + spec.NoteRacesInsideProcess

// The backend answers one request at a time and its hello says so
// (concurrent_requests false, said, not left out). Its stores declare
// shared_files, so the simulator races two processes and says nothing of
// races inside one; with shared_files withdrawn the store runs as one
// process, one operation at a time, and the sweep says races inside the
// process were not explored.
func TestPythonBackendServesOneRequestAtATimeAndTheSweepSaysSo(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH: the Python backend is not checked")
	}
	t.Parallel()
	hello := exec.Command("python3", "backend.py")
	hello.Stdin = strings.NewReader(`{"id":1,"type":"hello","version":1}` + "\n")
	out, err := hello.Output()
	if err != nil {
		t.Fatalf("hello: %v", err)
	}
	var reply struct {
		Result struct {
			Capabilities map[string]any `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal(bytes.SplitN(out, []byte("\n"), 2)[0], &reply); err != nil {
		t.Fatalf("hello's reply %q: %v", out, err)
	}
	if v, ok := reply.Result.Capabilities[spec.CapConcurrent]; !ok || v != false {
		t.Errorf("the hello's %s is %v (declared: %v); want false, said", spec.CapConcurrent, v, ok)
	}

	for _, tc := range []struct {
		withdraw []string
		note     bool
	}{{nil, false}, {[]string{spec.CapSharedFiles}, true}} {
		rep, err := conformance.Run(context.Background(), conformance.Program("python3", "backend.py"), conformance.Config{
			Stores: []string{"continuity"}, Layers: []conformance.Layer{conformance.LayerSim}, Seeds: conformance.Seed(1), Steps: 40,
			Withdraw: tc.withdraw, Workers: 1, NoPowerCuts: true, ReplyTimeout: 20 * time.Second, ReportDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(rep.Notes, "\n")
		if rep.Failed() || rep.Inconclusive() {
			t.Errorf("withdrawn %v: the sweep did not pass: %+v", tc.withdraw, rep.Checks)
		}
		if got := strings.Contains(notes, raceInsideTheProcess); got != tc.note {
			t.Errorf("withdrawn %v: the sweep says %q: %v, want %v\n%s", tc.withdraw, raceInsideTheProcess, got, tc.note, notes)
		}
	}
}
