package conformance

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/reports"
)

// A long spec (suite.Long) is skipped unless the run asks for long specs,
// and its skip says how to ask on every surface; asked for, or named, it
// passes the reference and fails a store keeping an intent's attempts in
// 16 bits.
func TestLongSpecsRunWhenAsked(t *testing.T) {
	const name = "client bump_intent counts refusals past what 16 bits keep: the 65,536th reads attempt 65,536"
	// The count is under test, not the disk: 65,536 synced commits take a
	// second on tmpfs, a minute on this machine's disk.
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		t.Setenv("TMPDIR", "/dev/shm")
	} else if !fullTests() {
		t.Skipf("no /dev/shm: a long spec on the disk takes a minute (%s=1 runs it)", fullTestsEnv)
	}
	check := func(cfg Config, b Backend) reports.Check {
		t.Helper()
		cfg.Layers, cfg.Stores, cfg.ReportDir = []Layer{LayerSpec}, []string{"client"}, t.TempDir()
		rep, err := Run(context.Background(), b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Checks {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no check %q in %d checks", name, len(rep.Checks))
		return reports.Check{}
	}
	if c := check(Config{}, Reference()); c.Outcome != reports.Skipped ||
		!strings.Contains(c.Message, "--long-specs") || !strings.Contains(c.Message, "-storecheck.long-specs") ||
		!strings.Contains(c.Message, "long_specs") {
		t.Errorf("not asked for: %s %q, want skipped, saying how to ask", c.Outcome, c.Message)
	}
	if c := check(Config{Spec: name}, Reference()); c.Outcome != reports.Passed {
		t.Errorf("named, on the reference: %s %q", c.Outcome, c.Message)
	}
	if c := check(Config{LongSpecs: true}, broken(bugs.ClientAttemptsSixteenBits)); c.Outcome != reports.Failed ||
		!strings.Contains(c.Message, "intent") {
		t.Errorf("asked for, on %s: %s %q, want a failure of the intent's attempt", bugs.ClientAttemptsSixteenBits.Name(), c.Outcome, c.Message)
	}
}
