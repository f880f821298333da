package conformance

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec/suite"
)

// The storecheck flags of a test binary take the place of the config's
// fields; those that change a run are what a go test line carries; a bad
// value is an error naming the flag.
func TestTheTestFlagsTakeTheConfigsPlace(t *testing.T) {
	cfg, changing, err := withFlags(Config{Steps: 50, Ops: 100}, map[string]string{
		flagSeeds: "3..9", flagShard: "2/3", flagLayers: "sim, linearizability", flagStores: "continuity",
		flagSteps: "500", flagClients: "4", flagShrink: "0", flagReportDir: "out"})
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.Seeds != (SeedRange{First: 3, Last: 9}) || cfg.Shard != (Shard{I: 2, N: 3}) || cfg.Steps != 500 || cfg.Ops != 100 ||
		cfg.Clients != 4 || cfg.Shrink >= 0 || cfg.ReportDir != "out" || strings.Join(cfg.Stores, ",") != "continuity" ||
		len(cfg.Layers) != 2 || cfg.Layers[0] != LayerSim {
		t.Errorf("the flags made %+v", cfg)
	}
	if changing != " -storecheck.steps 500 -storecheck.clients 4" {
		t.Errorf("the flags a go test line carries: %q", changing)
	}
	for given, want := range map[[2]string]string{
		{flagSeed, "x"}:       "-storecheck.seed \"x\": want N",
		{flagSeed, "1..3"}:    "-storecheck.seed \"1..3\": want N",
		{flagSeeds, "9..1"}:   "-storecheck.seeds \"9..1\": want A..B",
		{flagShard, "0/2"}:    "-storecheck.shard \"0/2\"",
		{flagSteps, "-5"}:     "-storecheck.steps \"-5\": want a number",
		{flagProcesses, "xx"}: "-storecheck.processes \"xx\": want a number",
	} {
		if _, _, err := withFlags(Config{}, map[string]string{given[0]: given[1]}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("-%s %s: %v, want %q", given[0], given[1], err, want)
		}
	}
	if _, _, err := withFlags(Config{}, map[string]string{flagSeed: "1", flagSeeds: "1..2"}); err == nil {
		t.Error("-storecheck.seed and -storecheck.seeds together were taken")
	}
}

// A go test line is run from the module's root.
func TestTheGoTestLineNamesThePackageFromTheModulesRoot(t *testing.T) {
	if got := packageDir(); got != "./conformance" {
		t.Errorf("packageDir in conformance is %q", got)
	}
}

// Ginkgo runs one suite a process: the specs of a second Test in one test
// binary run in a process of their own, this binary again for that subtest
// alone, and pass as the first did.
func TestTheSpecsOfASecondTestRunInAProcessOfTheirOwn(t *testing.T) {
	h := suite.HarnessOf(stores.Reference())
	cfg := Config{Layers: []Layer{LayerSpec}, Stores: []string{"continuity"}}
	TestWith(t, h, cfg)
	// In the child, the first Test's subtest is not run: the second runs
	// the specs there, in its process.
	inChild := !specsRan.Load()
	TestWith(t, h, cfg)
	if !inChild && !specsRan.Load() {
		t.Error("no Test ran the specs in this process")
	}
}

// brokenEnv runs TestBrokenHarness: a harness of the reference with the
// deliberate bug it names, which fails by design.
const brokenEnv = "STORECHECK_CONFORMANCE_BROKEN"

// TestBrokenHarness is Test on a harness of a broken reference: run only as
// TestAGoTestFailureShowsWhatFailedAndTheLine's child.
func TestBrokenHarness(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("fails by design; TestAGoTestFailureShowsWhatFailedAndTheLine runs it")
	}
	b, _ := bugs.ByName(name)
	h := suite.HarnessOf(stores.Backend(stores.Options{Bug: b}))
	h.Runtime, h.Client = nil, nil
	h.CrashPoints = map[string][]string{"continuity": h.CrashPoints["continuity"]}
	Test(t, h)
}

// A failure under go test is a test failure that shows what failed: a
// spec's rule, a history's failure in words, and the go test line that
// runs the failing subtest again with its seed.
func TestAGoTestFailureShowsWhatFailedAndTheLine(t *testing.T) {
	for _, tc := range []struct {
		bug, layer string
		want       []string
	}{
		{"continuity_fence_rejects_equal", "spec", []string{"FAIL continuity/spec: continuity upsert_continuity_record accepts the stored fence again",
			"rules: continuity.upsert_continuity_record.fence_not_lower"}},
		{"continuity_fence_accepts_older", "linearizability", []string{"FAIL continuity/linearizability: 8 clients, 500 operations, 2 handles, seed 1",
			"no sequential order of the history is one the contract allows"}},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenHarness$", "-storecheck.layers="+tc.layer, "-storecheck.report-dir="+t.TempDir())
			cmd.Env = append(os.Environ(), brokenEnv+"="+tc.bug)
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "--- FAIL: TestBrokenHarness/"+tc.layer+"/continuity") {
				t.Fatalf("exit %d, want the %s subtest failed:\n%s", cmd.ProcessState.ExitCode(), tc.layer, out)
			}
			for _, w := range append(tc.want, "reproduce: go test -run '^TestBrokenHarness$/^"+tc.layer+"$/^continuity$' ./conformance -storecheck.seed 1\n") {
				if !strings.Contains(string(out), w) {
					t.Errorf("the failure does not show %q:\n%s", w, out)
				}
			}
		})
	}
}
