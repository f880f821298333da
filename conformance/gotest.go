package conformance

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec/suite"
)

// The flags of a test binary that runs Test: a CI job widens the sweep with
// them (go test -run TestConformance ./mystore -storecheck.seeds 1..500),
// and a failure prints the one that runs it again (-storecheck.seed 17).
// They are registered in test binaries only (testing.Testing), once, by
// this package.
const (
	flagSeed      = "storecheck.seed"
	flagSeeds     = "storecheck.seeds"
	flagShard     = "storecheck.shard"
	flagLayers    = "storecheck.layers"
	flagStores    = "storecheck.stores"
	flagSteps     = "storecheck.steps"
	flagOps       = "storecheck.ops"
	flagClients   = "storecheck.clients"
	flagProcesses = "storecheck.processes"
	flagShrink    = "storecheck.shrink"
	flagPowerCuts = "storecheck.power-cuts"
	flagReportDir = "storecheck.report-dir"
)

// testFlags are the flags, in the order their help lists them.
var testFlags = []struct{ name, help string }{
	{flagSeed, "storecheck: one seed for every layer (a failure prints the one that reproduces it)"},
	{flagSeeds, "storecheck: seeds A..B for every layer (default: the specs and one history of seed 1, the simulator's seeds " + TestSimSeeds.String() + ")"},
	{flagShard, "storecheck: run the i-th of n shares of the seeds, i/n"},
	{flagLayers, "storecheck: layers to run, comma-separated: " + layerList(Layers) + " (default: all)"},
	{flagStores, "storecheck: stores to check, comma-separated (default: every store the harness opens)"},
	{flagSteps, "storecheck: steps of a simulated schedule"},
	{flagOps, "storecheck: operations of a linearizability history (default " + strconv.Itoa(TestOps) + ")"},
	{flagClients, "storecheck: concurrent clients of a history and of a schedule"},
	{flagProcesses, "storecheck: processes a schedule's clients are spread over"},
	{flagShrink, "storecheck: runs spent shrinking a failing schedule (0: do not shrink)"},
	{flagPowerCuts, "storecheck: false: the simulator cuts no power (default true: a seed may, on a forgetful FUSE file system, where the machine has FUSE)"},
	{flagReportDir, "storecheck: where failing checks keep their files (default " + DefaultReportDir + ")"},
}

// The defaults of go test that differ from a run's (Defaults): an author's
// go test stays a few seconds; a CI job widens it with the flags.
const (
	// TestOps are the operations of a history under go test.
	TestOps = 500
)

// TestSimSeeds are the simulator's seeds under go test.
var TestSimSeeds = SeedRange{First: 1, Last: 20}

var flagValues = map[string]*string{}

func init() {
	if !testing.Testing() {
		return
	}
	for _, f := range testFlags {
		flagValues[f.name] = flag.String(f.name, "", f.help)
	}
}

// Test runs every layer of the check on the stores of h, in this process,
// from go test: the specs, the linearizability check and the simulator,
// each a subtest (spec, linearizability, sim) with one subtest a store:
//
//	func TestConformance(t *testing.T) { conformance.Test(t, myHarness) }
//
// The storecheck flags of the test binary select and widen the run
// (-storecheck.layers sim, -storecheck.seeds 1..500, -storecheck.steps
// 1000; see testFlags). A failure is a test failure that names the rule, or
// explains the linearizability failure in words, or shows the shrunk
// interleaving one column per process, and prints the go test line that
// runs it again (-run narrowed to its subtest, -storecheck.seed N).
func Test(t *testing.T, h suite.Harness) { TestWith(t, h, Config{}) }

// TestWith is Test with cfg's fields in place of the go test defaults (a
// field left zero keeps its default); the flags given on the command line
// win over both.
func TestWith(t *testing.T, h suite.Harness, cfg Config) {
	t.Helper()
	cfg, given, err := withTestFlags(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Stores) == 0 {
		cfg.Stores = harnessStores(h)
	}
	if cfg.Ops == 0 {
		cfg.Ops = TestOps
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b := InProcess(h)
	if err := cfg.validateFor(b.local.Info(), true); err != nil {
		t.Fatal(err)
	}
	ln := goTestLines{test: t.Name(), pkg: packageDir(), flags: given}
	for _, l := range Layers {
		if !cfg.runs(l) {
			continue
		}
		lc := cfg
		lc.Layers = []Layer{l}
		if lc.Seeds == nil && l == LayerSim {
			seeds := TestSimSeeds
			lc.Seeds = &seeds
		}
		t.Run(string(l), func(t *testing.T) {
			if l == LayerSpec {
				testSpecs(t, b, lc, ln)
				return
			}
			for _, store := range lc.Stores {
				if !slices.Contains(b.local.Info().Stores, store) {
					continue
				}
				sc := lc
				sc.Stores = []string{store}
				t.Run(store, func(t *testing.T) {
					rep, err := run(context.Background(), b, sc, ln)
					report(t, rep, err)
				})
			}
		})
	}
}

// testSpecs runs the spec layer: in this process the first time (Ginkgo
// runs one suite a process), else in a process of its own, this test
// binary run again for this subtest alone.
func testSpecs(t *testing.T, b Backend, cfg Config, ln lines) {
	if specsRan.Load() {
		specsInChild(t)
		return
	}
	rep, err := run(context.Background(), b, cfg, ln)
	// Ginkgo's progress line ends without one.
	fmt.Println()
	if err != nil && !IsBackendFailure(err) {
		t.Fatal(err)
	}
	for _, store := range cfg.Stores {
		var own reports.Run
		for _, c := range rep.Checks {
			if c.Store == store {
				own.Checks = append(own.Checks, c)
			}
		}
		if len(own.Checks) > 0 {
			t.Run(store, func(t *testing.T) { report(t, own, nil) })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// specsInChild runs t, a spec layer's subtest, in a child process: this
// test binary with -test.run narrowed to it and the storecheck flags given.
func specsInChild(t *testing.T) {
	args := []string{"-test.run=" + runPattern(strings.Split(t.Name(), "/")), "-test.v"}
	given := givenFlags()
	for _, f := range testFlags {
		if v, ok := given[f.name]; ok {
			args = append(args, "-"+f.name+"="+v)
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		t.Fatalf("the specs, run in a process of their own (Ginkgo runs one suite a process, and this one ran them already): %v\n%s", err, out.String())
	}
	t.Logf("the specs ran in a process of their own (Ginkgo runs one suite a process, and this one ran them already):\n%s", out.String())
}

// report turns a run's checks into t's verdict: every failure (and every
// inconclusive check: never a pass) an error showing what failed and how
// to run it again; skips, notes and what was reached logged.
func report(t *testing.T, rep reports.Run, err error) {
	t.Helper()
	if err != nil && !IsBackendFailure(err) {
		t.Fatal(err)
	}
	width := reports.Width()
	seen := map[string]bool{}
	for _, c := range rep.Checks {
		switch c.Outcome {
		case reports.Failed, reports.Inconclusive:
			var b strings.Builder
			reports.WriteCheck(&b, c, width)
			t.Error("\n" + strings.TrimRight(b.String(), "\n"))
		case reports.Skipped:
			if !seen[c.Message] {
				seen[c.Message] = true
				t.Logf("skip: %s", c.Message)
			}
		}
	}
	for _, tl := range rep.Tallies() {
		t.Logf("%s %s: %d passed, %d failed, %d skipped, %d not run", tl.Store, tl.Layer, tl.Passed, tl.Failed, tl.Skipped, tl.NotRun)
	}
	for _, r := range rep.Reach {
		t.Logf("%s %s over %s: %s", r.Store, r.Layer, r.Over, r.Summary())
	}
	for _, n := range rep.Notes {
		t.Logf("not explored: %s", n)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// withTestFlags is cfg with the storecheck flags given on the test binary's
// command line in place of its fields, and those of them that change a
// run as a go test line carries them.
func withTestFlags(cfg Config) (Config, string, error) { return withFlags(cfg, givenFlags()) }

// givenFlags are the storecheck flags given on the command line, by name.
func givenFlags() map[string]string {
	given := map[string]string{}
	flag.Visit(func(f *flag.Flag) {
		if _, ok := flagValues[f.Name]; ok {
			given[f.Name] = f.Value.String()
		}
	})
	return given
}

// withFlags is withTestFlags of the flags given.
func withFlags(cfg Config, given map[string]string) (Config, string, error) {
	bad := func(name, v string, err error) (Config, string, error) {
		return cfg, "", fmt.Errorf("conformance: -%s %q: %v", name, v, err)
	}
	if _, one := given[flagSeed]; one {
		if _, many := given[flagSeeds]; many {
			return cfg, "", fmt.Errorf("conformance: -%s and -%s name the same thing; give one", flagSeed, flagSeeds)
		}
	}
	var changing strings.Builder
	for _, f := range testFlags {
		v, ok := given[f.name]
		if !ok {
			continue
		}
		switch f.name {
		case flagSeed, flagSeeds:
			sr, err := sim.ParseSeeds(v)
			if err != nil || (f.name == flagSeed && sr.First != sr.Last) {
				return bad(f.name, v, fmt.Errorf("want %s", map[string]string{flagSeed: "N", flagSeeds: "A..B"}[f.name]))
			}
			cfg.Seeds = &sr
		case flagShard:
			sh, err := sim.ParseShard(v)
			if err != nil {
				return bad(f.name, v, err)
			}
			cfg.Shard = sh
		case flagLayers:
			cfg.Layers = nil
			for _, l := range splitList(v) {
				cfg.Layers = append(cfg.Layers, Layer(l))
			}
		case flagStores:
			cfg.Stores = splitList(v)
		case flagReportDir:
			cfg.ReportDir = v
		case flagPowerCuts:
			on, err := strconv.ParseBool(v)
			if err != nil {
				return bad(f.name, v, fmt.Errorf("want true or false"))
			}
			if cfg.NoPowerCuts = !on; !on {
				fmt.Fprintf(&changing, " -%s=false", f.name)
			}
		default:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return bad(f.name, v, fmt.Errorf("want a number, 0 or more"))
			}
			switch f.name {
			case flagSteps:
				cfg.Steps = n
			case flagOps:
				cfg.Ops = n
			case flagClients:
				cfg.Clients = n
			case flagProcesses:
				cfg.Processes = n
			case flagShrink:
				cfg.Shrink = n
				if n == 0 {
					cfg.Shrink = -1
				}
				continue
			}
			fmt.Fprintf(&changing, " -%s %d", f.name, n)
		}
	}
	return cfg, changing.String(), nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// harnessStores are the stores h opens, in report order.
func harnessStores(h suite.Harness) []string { return harnessBackend(h).Info().Stores }

// runPattern is the -test.run pattern that runs exactly the (sub)test of
// these name parts.
func runPattern(parts []string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(out, "/")
}

// packageDir is the test's package as go test takes it from the root of
// its module ("./examples/harness"); "." when no module is found.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
}
