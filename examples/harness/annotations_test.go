package harness_test

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// Under go test in GitHub Actions the harness's failures are annotations
// too: at the start of a line, not indented into the test log (GitHub reads
// a workflow command only there), with the go test line that reproduces it.
func TestAGoTestFailureIsAnnotatedInGitHubActions(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRacyVariant$", "-storecheck.layers=sim", "-storecheck.seed=1", "-storecheck.report-dir="+t.TempDir())
	cmd.Env = append(os.Environ(), racyEnv+"=1", "GITHUB_ACTIONS=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out.String())
	}
	annotated := regexp.MustCompile(`(?m)^::error title=storecheck continuity/sim%3A seed 1[^:]*::.*%0Areproduce: ` + racyEnv + `=1 go test -run .* -storecheck\.seed 1$`)
	if !annotated.MatchString(out.String()) {
		t.Fatalf("no annotation of seed 1 with its go test line:\n%s", out.String())
	}
}
