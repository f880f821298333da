package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
)

// storecheckIn runs the command in dir.
func storecheckIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), harnessEnv+"=file")
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	cmd.Run()
	return out.String(), errs.String(), cmd.ProcessState.ExitCode()
}

// A storecheck.json in the folder sets what the job line would: the stores,
// the budgets, a capability withdrawn; a flag on the command line wins.
func TestConfigFileSetsTheDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{
  "stores": ["continuity"],
  "ops": 300,
  "capabilities": {"shared_files": false},
  "report_dir": "out"
}`), 0o644)
	out, errs, code := storecheckIn(t, dir, "run", "--seed", "2")
	if code != exitPassed {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out, "runtime") || strings.Contains(out, "client ") {
		t.Errorf("stores other than the config's were checked:\n%s", out)
	}
	if !strings.Contains(out, "skip continuity/spec: backend does not declare capability shared_files") {
		t.Errorf("the withdrawn capability's specs were not skipped:\n%s", out)
	}
	report, err := os.ReadFile(filepath.Join(dir, "out", "report.json"))
	if err != nil {
		t.Fatalf("the config's report folder: %v", err)
	}
	if !strings.Contains(string(report), "8 clients, 300 operations, 1 handles") {
		t.Errorf("the config's budget and capabilities did not reach the linearizability check:\n%s", report)
	}
	// The command line wins.
	out, _, _ = storecheckIn(t, dir, "run", "--seed", "2", "--store", "client", "--layers", "spec")
	if !strings.Contains(out, "  client ") || strings.Contains(out, "  continuity ") {
		t.Errorf("--store did not win over the config:\n%s", out)
	}
}

func TestBadConfigIsAUsageError(t *testing.T) {
	for body, want := range map[string]string{
		`{"stores": ["continuity"], "opps": 3}`:  `unknown field "opps"`,
		`{"capabilities": {"telepathy": false}}`: `unknown capability "telepathy"`,
		`{"stores": ["nope"]}`:                   `unknown store "nope"`,
		`{"timeout": "soon"}`:                    `config timeout: invalid value "soon"`,
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte(body), 0o644)
		_, errs, code := storecheckIn(t, dir, "run")
		if code != exitUsage || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", body, code, errs, exitUsage, want)
		}
	}
}

// The exit codes, each as documented: 0 passed, 1 a check failed, 2 a usage
// error, 3 the backend failed, 4 inconclusive only.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		harness string
		args    []string
		want    int
	}{
		{"file", []string{"run", "--store", "continuity", "--layers", "spec"}, exitPassed},
		{"bug:continuity_fence_accepts_older", []string{"run", "--store", "continuity", "--layers", "spec"}, exitFailed},
		{"file", []string{"run", "--layers", "everything"}, exitUsage},
		{"file", []string{"run", "--store", "continuity", "--", filepath.Join(dir, "no-such-backend")}, exitBackend},
		{"file", []string{"linearize", "--store", "continuity", "--seed", "1", "--ops", "3000", "--check-timeout", "1us", "--report-dir", dir}, exitInconclusive},
	} {
		out, errs, code := storecheck(t, tc.harness, tc.args...)
		if code != tc.want {
			t.Errorf("%v: exit %d, want %d\n%s\n%s", tc.args, code, tc.want, out, errs)
		}
	}
}

// selftest reads storecheck.json like every other command: here its store
// list, which names no store.
func TestSelftestReadsTheConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"stores": ["nope"], "workers": 1}`), 0o644)
	_, errs, code := storecheckIn(t, dir, "selftest")
	if code != exitUsage || !strings.Contains(errs, `storecheck selftest: unknown store "nope"`) {
		t.Errorf("exit %d, stderr %q; want %d and the config's unknown store", code, errs, exitUsage)
	}
}

// Every option a command takes may be set in the config, under its
// snake_case name, with a value of its kind; a knob of go test's alone is
// no key.
func TestConfigTakesEveryOption(t *testing.T) {
	for _, o := range options {
		if len(o.Commands) == 0 {
			if _, err := parseConfig([]byte(`{"` + o.ConfigKey() + `": "1"}`)); err == nil {
				t.Errorf("%s, which no command takes, is a config key", o.ConfigKey())
			}
			continue
		}
		val := `"x"`
		switch o.Kind {
		case conformance.KindInt, conformance.KindSeed:
			val = `3`
		case conformance.KindBool:
			val = `true`
		case conformance.KindDuration:
			val = `"3s"`
		}
		c, err := parseConfig([]byte(`{"` + o.ConfigKey() + `": ` + val + `}`))
		if err != nil || c.values[o.Name] == "" {
			t.Errorf("%s: %v %+v", o.ConfigKey(), err, c)
		}
	}
	if _, err := parseConfig([]byte(`{"ops": "many"}`)); err == nil || !strings.Contains(err.Error(), `config ops: invalid value "many"`) {
		t.Errorf("a value of the wrong kind: %v", err)
	}
}
