package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/reports"
)

// bugBackend is a deliberate bug of the reference as a program over the
// wire: this test binary serving it, the way selftest starts its exec
// sample.
func bugBackend(bug string) []string {
	return []string{os.Args[0], selftestSubject, bug, "serve"}
}

// reproduceCommands are the reproduce commands of every form of the report
// in dir, by form: the console's (out), summary.txt's, JUnit's, the JSON's,
// the HTML's, and each saved history's summary.txt.
func reproduceCommands(t *testing.T, out, dir string) map[string][]string {
	t.Helper()
	lines := regexp.MustCompile(`(?m)^\s*reproduce: (.*)$`)
	fromText := func(text string) []string {
		var cmds []string
		for _, m := range lines.FindAllStringSubmatch(text, -1) {
			cmds = append(cmds, m[1])
		}
		return cmds
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	forms := map[string][]string{"console": fromText(out), reports.TextFile: fromText(string(read(reports.TextFile)))}
	var suites struct {
		Cases []struct {
			Failure *struct {
				Text string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(read(reports.JUnitFile), &suites); err != nil {
		t.Fatal(err)
	}
	for _, c := range suites.Cases {
		if c.Failure != nil {
			forms[reports.JUnitFile] = append(forms[reports.JUnitFile], fromText(c.Failure.Text)...)
		}
	}
	var run reports.Run
	if err := json.Unmarshal(read(reports.JSONFile), &run); err != nil {
		t.Fatal(err)
	}
	for _, c := range run.Checks {
		if c.Outcome == reports.Failed {
			forms[reports.JSONFile] = append(forms[reports.JSONFile], c.Reproduce)
		}
	}
	for _, m := range regexp.MustCompile(`Reproduce: <code>(.*?)</code>`).FindAllStringSubmatch(string(read(reports.HTMLFile)), -1) {
		forms[reports.HTMLFile] = append(forms[reports.HTMLFile], html.UnescapeString(m[1]))
	}
	saved, _ := filepath.Glob(filepath.Join(dir, "linearizability-*", "summary.txt"))
	for _, f := range saved {
		b, _ := os.ReadFile(f)
		forms["history "+filepath.Base(filepath.Dir(f))] = fromText(string(b))
	}
	for form, cmds := range forms {
		slices.Sort(cmds)
		forms[form] = slices.Compact(cmds)
	}
	return forms
}

// shellWords splits a command line as a POSIX shell would the words
// shellQuote writes: bare words, and single-quoted ones.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			w.WriteByte(ch)
		case ch == '\'':
			quoted, in = true, true
		case ch == ' ':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// failures are the FAIL lines of a console report: which checks failed.
func failures(out string) []string {
	var fails []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			fails = append(fails, line)
		}
	}
	return fails
}

// rerun runs a printed reproduce command against the reference of this
// test binary in a folder of its own (storecheck run as the command, in a
// process of its own; the others through cli in this one).
func rerun(t *testing.T, command string) (string, int) {
	t.Helper()
	words := shellWords(command)
	if len(words) < 2 || words[0] != "storecheck" {
		t.Fatalf("not a storecheck command: %q", command)
	}
	dir := t.TempDir()
	if words[1] == "run" {
		cmd := exec.Command(os.Args[0], words[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), harnessEnv+"=file")
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Run()
		return out.String(), cmd.ProcessState.ExitCode()
	}
	t.Chdir(dir)
	var out, errs strings.Builder
	code := cli(words[1:], &out, &errs, conformance.Reference())
	return out.String() + errs.String(), code
}

// Every reproduce command a report prints, in every form (console,
// summary.txt, JUnit, JSON, HTML, a saved history's summary), names the
// backend after "--" and every flag that changes the run, and run as
// printed it fails the same check again.
func TestEveryReproduceCommandFailsTheSameWay(t *testing.T) {
	// The backend processes are this test binary, serving.
	t.Setenv(harnessEnv, "file")
	for _, tc := range []struct {
		name string
		args []string
		bug  string
	}{
		// A bug both the specs and the linearizability check catch, the
		// history checked within a timeout that is not the default.
		{"run", []string{"run", "--store", "continuity", "--seed", "3", "--ops", "400", "--check-timeout", "45s", "--reply-timeout", "20s"},
			"continuity_fence_rejects_equal"},
		{"sim", []string{"sim", "--store", "continuity", "--seeds", "1..1", "--steps", "60", "--shrink", "0", "--reply-timeout", "20s", "--quiet"},
			"continuity_write_behind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			backend := bugBackend(tc.bug)
			args := append(append(slices.Clone(tc.args), "--report-dir", dir, "--"), backend...)
			var out, errs strings.Builder
			var code int
			if tc.name == "run" {
				cmd := exec.Command(os.Args[0], args...)
				cmd.Dir, cmd.Env = dir, append(os.Environ(), harnessEnv+"=file")
				var o, e bytes.Buffer
				cmd.Stdout, cmd.Stderr = &o, &e
				cmd.Run()
				out.WriteString(o.String())
				errs.WriteString(e.String())
				code = cmd.ProcessState.ExitCode()
			} else {
				code = cli(args, &out, &errs, conformance.Reference())
			}
			if code != exitFailed {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailed, out.String(), errs.String())
			}
			forms := reproduceCommands(t, out.String(), dir)
			want := forms["console"]
			if len(want) == 0 {
				t.Fatalf("no reproduce command on the console:\n%s", out.String())
			}
			for form, cmds := range forms {
				if !slices.Equal(cmds, want) && !(strings.HasPrefix(form, "history ") && len(cmds) == 1 && slices.Contains(want, cmds[0])) {
					t.Errorf("%s's reproduce commands %q are not the console's %q", form, cmds, want)
				}
			}
			layers := map[string]bool{}
			for _, command := range want {
				if !strings.HasSuffix(command, " -- "+strings.Join(backend, " ")) {
					t.Errorf("%q does not end with the backend", command)
				}
				for _, flag := range []string{"--reply-timeout 20s", "--seed "} {
					if !strings.Contains(command, flag) {
						t.Errorf("%q lacks %s", command, flag)
					}
				}
				if strings.HasPrefix(command, "storecheck linearize") && !strings.Contains(command, "--check-timeout 45s") {
					t.Errorf("%q lacks --check-timeout", command)
				}
				layer := strings.Fields(command)[1]
				if strings.Contains(command, "--layers spec") {
					layer = "spec"
				}
				if layers[layer] {
					continue // one of each kind is enough to run
				}
				layers[layer] = true
				again, code := rerun(t, command)
				if code != exitFailed {
					t.Fatalf("%s: exit %d, want %d\n%s", command, code, exitFailed, again)
				}
				// The same check fails again: the line naming it.
				var same bool
				for _, f := range failures(again) {
					same = same || slices.Contains(failures(out.String()), f)
				}
				if !same {
					t.Errorf("%s fails otherwise:\n%s\nthe first run's failures:\n%s", command, again, strings.Join(failures(out.String()), "\n"))
				}
				// A spec's line runs that spec alone (--spec, its full name).
				if m := tally("continuity", "spec").FindStringSubmatch(again); layer == "spec" && (m == nil || m[1] != "0" || m[2] != "1" || m[3] != "0") {
					t.Errorf("%s runs more than its spec (tally %q):\n%s", command, m, again)
				}
			}
			if tc.name == "run" && (!layers["spec"] || !layers["linearize"]) {
				t.Errorf("want a spec and a linearize reproduce command, got %q", want)
			}
		})
	}
}
