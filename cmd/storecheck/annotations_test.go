package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/selftest"
	"github.com/storecheck/storecheck/reports"
)

var annotation = regexp.MustCompile(`(?m)^::error title=storecheck ([a-z]+)/([a-z]+)%3A [^\n]*$`)

// In GitHub Actions every failure of every layer is also an ::error
// annotation at the start of a line of stdout, naming its rules and the
// line that reproduces it; outside Actions there is none.
func TestFailuresAreAnnotatedInGitHubActions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bug  string
		args []string
	}{
		{"bug:continuity_fence_accepts_older", []string{"run", "--store", "continuity", "--layers", "spec,linearizability", "--seed", "1"}},
		{"bug:continuity_write_behind", []string{"sim", "--store", "continuity", "--seeds", "1..2", "--quiet"}},
	} {
		args := append(tc.args, "--report-dir", t.TempDir())
		out, errs, code := storecheckEnv(t, []string{"GITHUB_ACTIONS=true"}, tc.bug, args...)
		if code != exitFailed {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", tc.args[0], code, exitFailed, out, errs)
		}
		layers := map[string]int{}
		for _, m := range annotation.FindAllStringSubmatch(out, -1) {
			if m[1] != "continuity" {
				t.Errorf("an annotation of store %q: %s", m[1], m[0])
			}
			layers[m[2]]++
			if !strings.Contains(m[0], "%0Areproduce: storecheck ") {
				t.Errorf("an annotation without its reproduce line: %s", m[0])
			}
			// A failure that names its rules has them in the title and
			// first in the message.
			title, msg, _ := strings.Cut(strings.TrimPrefix(m[0], "::error title="), "::")
			named := strings.Contains(title, "(rule continuity.")
			if named != strings.HasPrefix(msg, "rules broken: continuity.") || (tc.args[0] == "run" && !named) {
				t.Errorf("an annotation whose title and message do not name its rules: %s", m[0])
			}
		}
		fails := strings.Count(out, "\nFAIL continuity/")
		total := 0
		for _, n := range layers {
			total += n
		}
		if total != fails || fails == 0 {
			t.Errorf("%s: %d failures, %d annotations (%v):\n%s", tc.args[0], fails, total, layers, out)
		}
		if tc.args[0] == "run" && (layers["spec"] == 0 || layers["linearizability"] == 0) {
			t.Errorf("want annotations of the spec and linearizability layers, got %v", layers)
		}
		out, _, _ = storecheckEnv(t, []string{"GITHUB_ACTIONS=false"}, tc.bug, args...)
		if strings.Contains(out, "::error") {
			t.Errorf("%s outside GitHub Actions prints annotations:\n%s", tc.args[0], out)
		}
	}
}

// selftest's annotations are its failures: a flagged reference's checks,
// and each bug no layer caught (a verdict with a note is no catch), with
// the line that runs it again; a caught bug is none.
func TestSelftestAnnotatesEachEscapedBug(t *testing.T) {
	result := reports.Run{Checks: []reports.Check{
		{Store: "all", Layer: "selftest sim", Name: "reference (no bug)", Outcome: reports.Failed, Message: "FLAGGED"},
		{Store: "continuity", Layer: "selftest spec", Name: "caught_bug", Outcome: reports.Passed},
	}}
	rows := []selftest.Row{
		{Store: "all", Verdicts: map[string]selftest.Verdict{"sim": {Ran: true, Caught: true}}},
		{Bug: "caught_bug", Store: "continuity", Verdicts: map[string]selftest.Verdict{"spec": {Ran: true, Caught: true}}},
		{Bug: "escaped_bug", Store: "runtime", Verdicts: map[string]selftest.Verdict{"spec": {Ran: true}, "sim": {Ran: true, Caught: true, Note: "inconclusive"}}},
	}
	var failed []string
	for _, c := range selftestFailures(result, rows).Checks {
		if c.Outcome == reports.Failed {
			failed = append(failed, c.Store+"/"+c.Layer+"/"+c.Name+": "+c.Message+" | "+c.Reproduce)
		}
	}
	want := []string{"all/selftest sim/reference (no bug): FLAGGED | ",
		"runtime/selftest/escaped_bug: the deliberate bug escaped_bug escaped every layer | storecheck selftest --store runtime --bugs escaped_bug"}
	if strings.Join(failed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("selftest's failures:\n%s\nwant:\n%s", strings.Join(failed, "\n"), strings.Join(want, "\n"))
	}
}
