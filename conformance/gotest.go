package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// The flags of a test binary that runs Test are the knobs' (Knobs:
// -storecheck.NAME for each that sets a Config field a test in its process
// reads): a CI job widens the sweep with them (go test -run TestConformance
// ./mystore -storecheck.seeds 1..500), and a failure prints the one that
// runs it again (-storecheck.seed 17). They are registered in test binaries
// only (testing.Testing), once, by this package.
var (
	seedFlag  = knobNamed("seed").TestFlag()
	seedsFlag = knobNamed("seeds").TestFlag()
)

// The defaults of go test that differ from a run's (Defaults): an author's
// go test stays a few seconds; a CI job widens it with the flags.
const (
	// TestOps are the operations of a history under go test.
	TestOps = 500
)

// TestSimSeeds are the simulator's seeds under go test.
var TestSimSeeds = SeedRange{First: 1, Last: 20}

// TestDefaults are a run's defaults under go test: Defaults, but for the
// stores (the harness's), a history of TestOps operations and the reports
// outside the source tree (TestReportDir); the simulator's seeds are
// TestSimSeeds unless seeds are given.
func TestDefaults() Config {
	d := Defaults()
	d.Stores = nil
	d.Ops = TestOps
	d.ReportDir = TestReportDir()
	return d
}

// TestReportDir is where failing checks keep their files under go test:
// a folder of the system's temp folder for the test's package
// (os.TempDir()/storecheck-report/<import path>), never its source folder.
func TestReportDir() string {
	return filepath.Join(os.TempDir(), DefaultReportDir, filepath.FromSlash(testPackage()))
}

func init() {
	if !testing.Testing() {
		return
	}
	registerTestFlags(flag.CommandLine)
}

// registerTestFlags defines the knobs' go test flags in fs, each with its
// go test default and help.
func registerTestFlags(fs *flag.FlagSet) {
	for _, k := range knobs {
		switch name := k.TestFlag(); {
		case name == "":
		case k.Kind == KindBool:
			// It may stand alone: -storecheck.fail-fast.
			fs.Bool(name, k.TestDefault() == "true", k.TestHelpText())
		default:
			fs.String(name, k.TestDefault(), k.TestHelpText())
		}
	}
}

// Test runs every layer of the check on the stores of h, in this process,
// from go test: the specs, the linearizability check and the simulator,
// each a subtest (spec, linearizability, sim) with one subtest a store:
//
//	func TestConformance(t *testing.T) { conformance.Test(t, myHarness) }
//
// The storecheck flags of the test binary select and widen the run
// (-storecheck.layers sim, -storecheck.sim-seeds 1..500, -storecheck.steps
// 1000; one a knob: Knobs). Failing checks keep their files outside the
// source tree (TestReportDir, printed). A failure is a test failure that
// names the rule, or explains the linearizability failure in words, or
// shows the shrunk interleaving one column per process, and prints the go
// test line that runs it again (the environment cfg.Env names, -run narrowed to its
// subtest, the package's import path, -storecheck.seed N).
func Test(t *testing.T, h suite.Harness) { TestWith(t, h, Config{}) }

// TestWith is Test with cfg's fields in place of the go test defaults (a
// field left zero keeps its default); the flags given on the command line
// win over both.
func TestWith(t *testing.T, h suite.Harness, cfg Config) {
	t.Helper()
	given := givenFlags(flag.CommandLine)
	cfg, err := withFlags(cfg, given)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Stores) == 0 {
		cfg.Stores = harnessStores(h)
	}
	fillDefaults(&cfg, TestDefaults())
	if err := narrowsARunLayer(cfg, given); err != nil {
		t.Fatal(err)
	}
	if cfg.Seeds == nil && cfg.SimSeeds == nil {
		seeds := TestSimSeeds
		cfg.SimSeeds = &seeds
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b := InProcess(h)
	if err := cfg.validateFor(b.local.Info(), true); err != nil {
		t.Fatal(err)
	}
	t.Logf("failing checks keep their files in %s", cfg.ReportDir)
	ln := goTestLines{test: t.Name(), pkg: testPackageAsGiven(), given: given, env: cfg.Env}
	for _, l := range Layers {
		if !cfg.runs(l) || (cfg.FailFast && t.Failed()) {
			continue
		}
		lc := cfg
		lc.Layers = []Layer{l}
		t.Run(string(l), func(t *testing.T) {
			if l == LayerSpec {
				testSpecs(t, b, lc, ln)
				return
			}
			for _, store := range lc.Stores {
				if !slices.Contains(b.local.Info().Stores, store) {
					continue
				}
				if lc.FailFast && t.Failed() {
					return
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

// testSpecs runs the spec layer, a subtest per store.
func testSpecs(t *testing.T, b Backend, cfg Config, ln lines) {
	rep, err := run(context.Background(), b, cfg, ln)
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

// report turns a run's checks into t's verdict: every failure (and every
// inconclusive check: never a pass) an error showing what failed and how
// to run it again; skips, notes and what was reached logged.
func report(t *testing.T, rep reports.Run, err error) {
	t.Helper()
	if err != nil && !IsBackendFailure(err) {
		t.Fatal(err)
	}
	// go test pipes the output: the terminal it runs in is the one to ask.
	width := reports.RelayedWidth()
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
	// On stdout, not t.Log: GitHub reads a workflow command only at the
	// start of a line, and the test log indents.
	reports.WriteAnnotations(os.Stdout, rep)
	if err != nil {
		t.Fatal(err)
	}
}

// narrowsARunLayer says, naming the flag, that -storecheck.spec was given
// to a run without the spec layer, whose narrowing it would be ignored.
func narrowsARunLayer(cfg Config, given map[string]string) error {
	v, ok := given["spec"]
	if !ok || cfg.runs(LayerSpec) {
		return nil
	}
	return fmt.Errorf("conformance: -%s %s narrows the spec layer, which -%s %s does not run: add spec to the layers, or drop -%[1]s",
		knobNamed("spec").TestFlag(), shellQuote(v), knobNamed("layers").TestFlag(), layerList(cfg.Layers))
}

// givenFlags are the storecheck flags given on fs's command line, by
// knob name.
func givenFlags(fs *flag.FlagSet) map[string]string {
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		for _, k := range knobs {
			if name := k.TestFlag(); name != "" && name == f.Name {
				given[k.Name] = f.Value.String()
			}
		}
	})
	return given
}

// withFlags is cfg with the storecheck flags given (by knob name) in place
// of its fields: a seed given for every layer replaces the layers' own
// seeds cfg set too, so that a go test line's -storecheck.seed runs that
// seed; a bad value is an error naming the flag.
func withFlags(cfg Config, given map[string]string) (Config, error) {
	_, one := given["seed"]
	_, many := given["seeds"]
	if one && many {
		return cfg, fmt.Errorf("conformance: -%s and -%s name the same thing; give one", seedFlag, seedsFlag)
	}
	if one || many {
		cfg.SpecSeeds, cfg.LinearizeSeeds, cfg.SimSeeds = nil, nil, nil
	}
	for _, k := range knobs {
		v, ok := given[k.Name]
		if !ok || k.TestFlag() == "" {
			continue
		}
		err := k.Set(&cfg, v)
		if n, nerr := strconv.Atoi(v); k.Kind == KindInt && (nerr != nil || n < 0) {
			err = fmt.Errorf("want a number, 0 or more")
		}
		if err != nil {
			return cfg, fmt.Errorf("conformance: -%s %q: %v", k.TestFlag(), v, err)
		}
	}
	return cfg, nil
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

// testPackageAsGiven is the package of this test binary as the person who
// ran go test names it where they ran it: "." when go test ran in the
// package's folder, "./DIR" when it ran in a folder above it; else (go test
// ran elsewhere, or the binary on its own) its import path, which go test
// takes from any folder of the module.
func testPackageAsGiven() string {
	here, err := os.Getwd()
	from, ok := goCommandDir()
	if err != nil || !ok {
		return testPackage()
	}
	// /proc gives the parent's folder with its links resolved.
	if real, err := filepath.EvalSymlinks(here); err == nil {
		here = real
	}
	return packageFrom(from, here, testPackage())
}

// packageFrom is the package in folder here as go test run in folder from
// takes it: "." or "./DIR" under from, else pkg (its import path).
func packageFrom(from, here, pkg string) string {
	rel, err := filepath.Rel(from, here)
	switch {
	case err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		return pkg
	case rel == ".":
		return "."
	}
	return "./" + filepath.ToSlash(rel)
}

// goCommandDir is the folder go test was run in: the working folder of
// this process's parent when that is the go command (go test runs a test
// binary in its package's folder, and sets PWD to it, so only the parent
// knows). Linux's /proc tells; elsewhere, or when the binary ran on its
// own, there is none.
func goCommandDir() (string, bool) {
	proc := filepath.Join("/proc", strconv.Itoa(os.Getppid()))
	exe, err := os.Readlink(filepath.Join(proc, "exe"))
	if err != nil || strings.TrimSuffix(filepath.Base(exe), ".exe") != "go" {
		return "", false
	}
	dir, err := os.Readlink(filepath.Join(proc, "cwd"))
	return dir, err == nil
}

// testPackage is the package of this test binary as go test takes it
// from any folder of its module: its import path (go test builds
// IMPORTPATH.test); the folder it runs in, where the binary does not say.
func testPackage() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if pkg, ok := strings.CutSuffix(bi.Path, ".test"); ok && pkg != "" {
			return pkg
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return wd
}
