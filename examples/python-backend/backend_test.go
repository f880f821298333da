package pythonbackend_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// Ginkgo runs one suite per process, so the test starts this test binary
// again with suiteEnv set; TestMain then runs the whole suite against the
// Python backend through the exec adapter, as "storecheck run -- python3
// backend.py" would.
const suiteEnv = "STORECHECK_PYTHON_BACKEND_SUITE"

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
	os.Exit(m.Run())
}

func TestPythonBackendPassesTheSuite(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH: the Python example backend is not checked")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), suiteEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("the suite against the Python backend: %v\n%s\n%s", err, out.String(), errb.String())
	}
	m := regexp.MustCompile(`(?m)^  continuity\s+spec\s+(\d+) passed\s+(\d+) failed\s+(\d+) skipped`).FindStringSubmatch(out.String())
	if m == nil || m[1] == "0" || m[2] != "0" || m[3] != "0" {
		t.Fatalf("want every continuity spec to pass, none skipped:\n%s", out.String())
	}
}
