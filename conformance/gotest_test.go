package conformance

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// The storecheck flags of a test binary take the place of the config's
// fields; those that change a layer's check are what its go test line
// carries; a bad value is an error naming the flag.
func TestTheTestFlagsTakeTheConfigsPlace(t *testing.T) {
	cfg, err := withFlags(Config{Steps: 50, Ops: 100}, map[string]string{
		"seeds": "3..9", "shard": "2/3", "layers": "sim, linearizability", "store": "continuity",
		"steps": "500", "clients": "4", "shrink": "0", "report-dir": "out", "fail-fast": "true", "workers": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.Seeds != (SeedRange{First: 3, Last: 9}) || cfg.Shard != (Shard{I: 2, N: 3}) || cfg.Steps != 500 || cfg.Ops != 100 ||
		cfg.Clients != 4 || cfg.Shrink >= 0 || cfg.ReportDir != "out" || strings.Join(cfg.Stores, ",") != "continuity" ||
		len(cfg.Layers) != 2 || cfg.Layers[0] != LayerSim || !cfg.FailFast || cfg.Workers != 2 {
		t.Errorf("the flags made %+v", cfg)
	}
	ln := goTestLines{test: "T", pkg: "p", given: map[string]string{"steps": "500", "clients": "4", "shrink": "0", "workers": "2", "seeds": "3..9"}}
	if got := ln.sim("continuity", 1); !strings.HasSuffix(got, " -storecheck.seed 1 -storecheck.steps 500 -storecheck.clients 4") {
		t.Errorf("the flags a go test line of the simulator carries: %q", got)
	}
	for given, want := range map[[2]string]string{
		{"seed", "x"}:         "-storecheck.seed \"x\": want N",
		{"seed", "1..3"}:      "-storecheck.seed \"1..3\": want N",
		{"seeds", "9..1"}:     "-storecheck.seeds \"9..1\": want A..B",
		{"sim-seeds", "9..1"}: "-storecheck.sim-seeds \"9..1\": want A..B",
		{"shard", "0/2"}:      "-storecheck.shard \"0/2\"",
		{"steps", "-5"}:       "-storecheck.steps \"-5\": want a number",
		{"processes", "xx"}:   "-storecheck.processes \"xx\": want a number",
		{"fail-fast", "xx"}:   "-storecheck.fail-fast \"xx\": want true or false",
	} {
		if _, err := withFlags(Config{}, map[string]string{given[0]: given[1]}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("-%s %s: %v, want %q", given[0], given[1], err, want)
		}
	}
	if _, err := withFlags(Config{}, map[string]string{"seed": "1", "seeds": "1..2"}); err == nil {
		t.Error("-storecheck.seed and -storecheck.seeds together were taken")
	}
}

// Each layer's seeds: a layer's own flag wins over the seeds of every
// layer, the others keep those; a seed given for every layer wins over
// the layers' seeds a test set, so a go test line's -storecheck.seed runs
// that seed.
func TestTheTestFlagsChooseSeedsPerLayer(t *testing.T) {
	for _, tc := range []struct {
		cfg            Config
		given          map[string]string
		spec, lin, sim SeedRange
	}{
		{Config{}, map[string]string{"sim-seeds": "1..200"}, *Seeds(1, 1), *Seeds(1, 1), *Seeds(1, 200)},
		{Config{}, map[string]string{"seeds": "3..9", "linearize-seeds": "5", "spec-seed": "4"}, *Seeds(4, 4), *Seeds(5, 5), *Seeds(3, 9)},
		{Config{SimSeeds: Seeds(1, 50)}, map[string]string{"seed": "17"}, *Seeds(17, 17), *Seeds(17, 17), *Seeds(17, 17)},
		{Config{SimSeeds: Seeds(1, 50)}, map[string]string{}, *Seeds(1, 1), *Seeds(1, 1), *Seeds(1, 50)},
	} {
		cfg, err := withFlags(tc.cfg, tc.given)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.SeedsOf(LayerSpec) != tc.spec || cfg.SeedsOf(LayerLinearizability) != tc.lin || cfg.SeedsOf(LayerSim) != tc.sim {
			t.Errorf("%v: spec %v, linearizability %v, sim %v; want %v, %v, %v", tc.given, cfg.SeedsOf(LayerSpec), cfg.SeedsOf(LayerLinearizability),
				cfg.SeedsOf(LayerSim), tc.spec, tc.lin, tc.sim)
		}
	}
}

// A go test line names the package as the person who ran go test would
// where they ran it: "." in its folder, "./DIR" from a folder above, else
// the import path (a binary run on its own, a folder beside it).
func TestTheGoTestLineNamesThePackageAsGiven(t *testing.T) {
	for _, tc := range []struct{ from, here, want string }{
		{"/m/store", "/m/store", "."},
		{"/m", "/m/store", "./store"},
		{"/", "/m/store/sub", "./m/store/sub"},
		{"/m/other", "/m/store", "example.com/m/store"},
		{"/m/store/sub", "/m/store", "example.com/m/store"},
		{"/m/store2", "/m/store", "example.com/m/store"},
	} {
		if got := packageFrom(tc.from, tc.here, "example.com/m/store"); got != tc.want {
			t.Errorf("go test run in %s, the package in %s: %q, want %q", tc.from, tc.here, got, tc.want)
		}
	}
	// This test binary: where go test ran it, the package it names is
	// this one (go list finds it there); run on its own, its import path.
	from, ok := goCommandDir()
	if !ok {
		if testPackageAsGiven() != testPackage() {
			t.Errorf("a binary not run by go test names %q, want its import path", testPackageAsGiven())
		}
		return
	}
	here, _ := os.Getwd()
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", testPackageAsGiven())
	cmd.Dir = from
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != here {
		t.Errorf("go list %s in %s (where go test ran): %q, %v; want %s", testPackageAsGiven(), from, out, err, here)
	}
}

// A go test line names the package by its import path when it cannot
// tell where go test ran, which the go command finds from any folder of
// the module: here from its root and from another package's folder.
func TestTheGoTestLineNamesThePackageByItsImportPath(t *testing.T) {
	pkg := testPackage()
	if pkg != "github.com/storecheck/storecheck/conformance" {
		t.Fatalf("the package of this test binary is %q", pkg)
	}
	here, _ := os.Getwd()
	for _, dir := range []string{"..", "../spec"} {
		cmd := exec.Command("go", "list", "-f", "{{.Dir}}", pkg)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != here {
			t.Errorf("go list %s in %s: %q, %v; want %s", pkg, dir, out, err, here)
		}
	}
	if want := filepath.Join(os.TempDir(), "storecheck-report", "github.com", "storecheck", "storecheck", "conformance"); TestDefaults().ReportDir != want {
		t.Errorf("under go test the reports land in %s, want %s", TestDefaults().ReportDir, want)
	}
}

// Ginkgo keeps one suite a process; the kit resets it for each run: Run
// may run the specs again in one process, twice at once, and each run
// finds what the first did; Test's specs after them run in its process
// too.
func TestRunRunsTheSpecsAgainInOneProcess(t *testing.T) {
	cfg := Config{Layers: []Layer{LayerSpec}, Stores: []string{"continuity"}, ReportDir: t.TempDir()}
	names := func(rep reports.Run, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range rep.Checks {
			if c.Outcome != reports.Passed && c.Outcome != reports.Skipped {
				t.Errorf("%s: %s %s", c.Name, c.Outcome, c.Message)
			}
			out = append(out, c.Name+" "+string(c.Outcome))
		}
		slices.Sort(out)
		return out
	}
	first := names(Run(context.Background(), Reference(), cfg))
	if len(first) < 10 {
		t.Fatalf("the first run ran %d specs", len(first))
	}
	var wg sync.WaitGroup
	both := make([][]string, 2)
	for i := range both {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := Run(context.Background(), Reference(), cfg)
			if err == nil {
				both[i] = names(rep, nil)
			}
		}()
	}
	wg.Wait()
	for i, got := range both {
		if !slices.Equal(got, first) {
			t.Errorf("run %d of two at once found %d specs, want the %d of the first", i, len(got), len(first))
		}
	}
	TestWith(t, suite.HarnessOf(stores.Reference()), cfg)
}

// Config.Spec runs one spec, by its full name or by its rule's ID; a name
// no spec has is a config error, not a pass.
func TestConfigSpecRunsOneSpec(t *testing.T) {
	const name = "continuity upsert_continuity_record accepts the stored fence again and a newer one"
	cfg := Config{Layers: []Layer{LayerSpec}, Stores: []string{"continuity"}, ReportDir: t.TempDir(), Spec: name}
	rep, err := Run(context.Background(), Reference(), cfg)
	if err != nil || len(rep.Checks) != 1 || rep.Checks[0].Name != name || rep.Checks[0].Outcome != reports.Passed {
		t.Fatalf("by its name: %v %+v", err, rep.Checks)
	}
	cfg.Spec = "continuity.upsert_continuity_record.fence_not_lower"
	rep, err = Run(context.Background(), Reference(), cfg)
	if err != nil || len(rep.Checks) == 0 {
		t.Fatalf("by its rule: %v %+v", err, rep.Checks)
	}
	for _, c := range rep.Checks {
		if !strings.HasPrefix(c.Name, "continuity upsert_continuity_record ") {
			t.Errorf("the rule's run ran %q", c.Name)
		}
	}
	cfg.Spec = "continuity no such spec"
	if _, err := Run(context.Background(), Reference(), cfg); err == nil || !strings.Contains(err.Error(), `"continuity no such spec"`) {
		t.Errorf("an unknown spec: %v, want a config error naming it", err)
	}
	// A run of every spec after them runs every spec: the focus was the
	// earlier runs' own (it once stayed Ginkgo's, and the rest read as
	// skipped, with no reason).
	cfg.Spec = ""
	rep, err = Run(context.Background(), Reference(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for _, c := range rep.Checks {
		switch {
		case c.Outcome == reports.Passed:
			passed++
		case c.Outcome == reports.Skipped && c.Message == "":
			t.Errorf("after a run of one spec, %q skipped with no reason", c.Name)
		}
	}
	if passed < 2 {
		t.Errorf("after a run of one spec, %d passed of %d", passed, len(rep.Checks))
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
	TestWith(t, h, Config{Env: []string{brokenEnv}})
}

// brokenChild runs TestBrokenHarness with args in this test binary's
// place, in the environment env (the variables given, and this process's
// but brokenEnv).
func brokenChild(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, brokenEnv+"=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, _ := cmd.CombinedOutput()
	return string(out), cmd.ProcessState.ExitCode()
}

// goTestLine is a go test reproduce line: the environment it sets, -run,
// the package, the storecheck flags.
var goTestLine = regexp.MustCompile(`(?m)^\s*reproduce: ((?:[A-Z_]+=\S+ )*)go test -run '([^']+)' (\S+)((?: -storecheck\.\S+ (?:'(?:[^']|'\\'')*'|\S+))*)$`)

// flagWords are the storecheck flags of a go test line as the test binary
// takes them: -NAME=VALUE, a quoted value unquoted.
func flagWords(flags string) []string {
	var out []string
	for _, m := range regexp.MustCompile(` (-storecheck\.\S+) ('(?:[^']|'\\'')*'|\S+)`).FindAllStringSubmatch(flags, -1) {
		v := m[2]
		if strings.HasPrefix(v, "'") {
			v = strings.ReplaceAll(v[1:len(v)-1], `'\''`, "'")
		}
		out = append(out, m[1]+"="+v)
	}
	return out
}

// A failure under go test is a test failure that shows what failed: a
// spec's rule, a history's failure in words (its files outside the source
// tree by default), and the go test line that runs the failing subtest
// again with its seed and the environment the harness reads; that line,
// run in an environment without it, fails the same way.
func TestAGoTestFailureShowsWhatFailedAndTheLine(t *testing.T) {
	for _, tc := range []struct {
		bug, layer string
		want       []string
		// flags the line carries after its seed; ran, what its run tallies.
		flags, ran string
	}{
		{"continuity_fence_rejects_equal", "spec", []string{"FAIL continuity/spec: continuity upsert_continuity_record accepts the stored fence again and a newer one",
			"rules: continuity.upsert_continuity_record.fence_not_lower"},
			" -storecheck.spec 'continuity upsert_continuity_record accepts the stored fence again and a newer one'", "continuity spec: 0 passed, 1 failed, 0 skipped, 0 not run"},
		{"continuity_fence_accepts_older", "linearizability", []string{"FAIL continuity/linearizability: 8 clients, 500 operations, 2 handles, seed 1",
			"no sequential order of the history is one the contract allows"}, "", ""},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			tmp := t.TempDir()
			out, code := brokenChild(t, []string{brokenEnv + "=" + tc.bug, "TMPDIR=" + tmp}, "-test.run=^TestBrokenHarness$", "-storecheck.layers="+tc.layer)
			if code != 1 || !strings.Contains(out, "--- FAIL: TestBrokenHarness/"+tc.layer+"/continuity") {
				t.Fatalf("exit %d, want the %s subtest failed:\n%s", code, tc.layer, out)
			}
			reports := filepath.Join(tmp, "storecheck-report", "github.com", "storecheck", "storecheck", "conformance")
			line := brokenEnv + "=" + tc.bug + " go test -run '^TestBrokenHarness$/^" + tc.layer + "$/^continuity$' github.com/storecheck/storecheck/conformance -storecheck.seed 1" + tc.flags + "\n"
			for _, w := range append(tc.want, "failing checks keep their files in "+reports+"\n", "reproduce: "+line) {
				if !strings.Contains(out, w) {
					t.Errorf("the failure does not show %q:\n%s", w, out)
				}
			}
			if tc.layer == "linearizability" {
				saved, _ := filepath.Glob(filepath.Join(reports, "linearizability-continuity-*", "history.json"))
				if len(saved) == 0 || !strings.Contains(out, "history and visualization in "+reports) {
					t.Fatalf("no history saved in %s:\n%s", reports, out)
				}
				// The deterministic re-check of the saved history comes
				// first, runnable with no storecheck installed; it fails
				// again, every time.
				recheck := "re-check the saved history (deterministic): go run github.com/storecheck/storecheck/cmd/storecheck check " + saved[0] + "\n"
				if i := strings.Index(out, recheck); i < 0 || i > strings.Index(out, "reproduce: "+line) {
					t.Errorf("the failure does not offer %q before its re-run:\n%s", recheck, out)
				}
				if hc, err := CheckHistory(saved[0], 0); err != nil || hc.Result.Verdict != linearizability.Illegal {
					t.Errorf("the saved history checked again: %+v, %v; want illegal", hc.Result.Verdict, err)
				}
			}
			// The line that follows the failure wanted: its own.
			m := goTestLine.FindStringSubmatch(out[max(strings.Index(out, tc.want[0]), 0):])
			if m == nil {
				t.Fatalf("no go test line:\n%s", out)
			}
			args := append([]string{"-test.run=" + m[2], "-storecheck.report-dir=" + t.TempDir()}, flagWords(m[4])...)
			again, code := brokenChild(t, strings.Fields(m[1]), args...)
			if code != 1 || !strings.Contains(again, tc.want[0]) {
				t.Errorf("the line run again, exit %d, does not fail with %q:\n%s", code, tc.want[0], again)
			}
			if !strings.Contains(again, tc.ran) {
				t.Errorf("the line run again does not run that spec alone (%q):\n%s", tc.ran, again)
			}
		})
	}
}

// -storecheck.fail-fast stops at the first failure: the specs fail, the
// linearizability check is not run.
func TestFailFastUnderGoTest(t *testing.T) {
	out, code := brokenChild(t, []string{brokenEnv + "=continuity_fence_rejects_equal"}, "-test.run=^TestBrokenHarness$", "-test.v",
		"-storecheck.layers=spec,linearizability", "-storecheck.fail-fast", "-storecheck.report-dir="+t.TempDir())
	if code != 1 || !strings.Contains(out, "--- FAIL: TestBrokenHarness/spec/continuity") || strings.Contains(out, "TestBrokenHarness/linearizability") {
		t.Errorf("exit %d, want the specs failed and no linearizability check:\n%s", code, out)
	}
}

// A spec to narrow to, given to a run without the spec layer, is an error
// naming the flag (or the field), not a narrowing silently ignored.
func TestASpecWithoutTheSpecLayerIsAnError(t *testing.T) {
	given := map[string]string{"spec": "continuity x y", "layers": "sim"}
	cfg, err := withFlags(Config{}, given)
	if err != nil {
		t.Fatal(err)
	}
	fillDefaults(&cfg, TestDefaults())
	err = narrowsARunLayer(cfg, given)
	if err == nil || !strings.Contains(err.Error(), "-storecheck.spec 'continuity x y' narrows the spec layer, which -storecheck.layers sim does not run") {
		t.Errorf("-storecheck.spec with -storecheck.layers sim: %v", err)
	}
	var ce *ConfigError
	if err := (Config{Spec: "x", Layers: []Layer{LayerLinearizability}}).Validate(); !errors.As(err, &ce) || ce.Field != "Spec" ||
		!strings.Contains(ce.Problem, "narrows the spec layer, which the run does not run (its layers: linearizability)") {
		t.Errorf("Config.Spec without the spec layer: %v", err)
	}
	// With the spec layer, or with every layer, it narrows.
	for _, c := range []Config{{Spec: "x"}, {Spec: "x", Layers: []Layer{LayerSpec, LayerSim}}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := narrowsARunLayer(TestDefaults(), map[string]string{"spec": "x"}); err != nil {
		t.Errorf("-storecheck.spec with every layer: %v", err)
	}
}
