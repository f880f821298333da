package conformance

import (
	"strings"
	"testing"

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
