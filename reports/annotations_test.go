package reports

import (
	"strings"
	"testing"
)

// In GitHub Actions each failed check, of every layer, is an ::error
// annotation naming its rules and its reproduce line, escaped as GitHub
// requires; passes, skips and inconclusive checks are not; outside Actions
// nothing is written.
func TestFailuresAreGitHubAnnotationsInActions(t *testing.T) {
	r := Run{Checks: []Check{
		{Store: "continuity", Layer: "spec", Name: "rejects a lower fence, with: colons, commas", Outcome: Failed,
			Message:   "Expected an error, got nil (continuity_records.go:27)\nrules: continuity.upsert_continuity_record.fence_not_lower, continuity.upsert_continuity_record.fence_stored\r\n100% sure",
			Reproduce: "storecheck run --store continuity --layers spec --seed 1"},
		{Store: "continuity", Layer: "sim", Name: "seed 3", Outcome: Failed,
			Message:   "step 5: ... (after the power cut at step 2, rule continuity.survives_power_loss); torn: writes of continuity.db kept",
			Reproduce: "storecheck sim --store continuity --seed 3"},
		{Store: "continuity", Layer: "backend", Name: "the backend failed", Outcome: Failed, Message: "exit status 2"},
		{Store: "continuity", Layer: "spec", Name: "passes", Outcome: Passed},
		{Store: "continuity", Layer: "linearizability", Name: "undecided", Outcome: Inconclusive, Message: "timed out"},
	}}
	defer func(was func() bool) { inActions = was }(inActions)
	inActions = func() bool { return false }
	var outside strings.Builder
	WriteAnnotations(&outside, r)
	if outside.Len() != 0 {
		t.Fatalf("outside GitHub Actions: %q", outside.String())
	}
	inActions = func() bool { return true }
	var b strings.Builder
	WriteAnnotations(&b, r)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := []string{
		"::error title=storecheck continuity/spec%3A rejects a lower fence%2C with%3A colons%2C commas (rule continuity.upsert_continuity_record.fence_not_lower%2C continuity.upsert_continuity_record.fence_stored)" +
			"::rules broken: continuity.upsert_continuity_record.fence_not_lower, continuity.upsert_continuity_record.fence_stored%0A" +
			"Expected an error, got nil (continuity_records.go:27)%0Arules: continuity.upsert_continuity_record.fence_not_lower, continuity.upsert_continuity_record.fence_stored%0D%0A100%25 sure%0A" +
			"reproduce: storecheck run --store continuity --layers spec --seed 1",
		// A file of the store is no rule.
		"::error title=storecheck continuity/sim%3A seed 3 (rule continuity.survives_power_loss)::rules broken: continuity.survives_power_loss%0A" +
			"step 5: ... (after the power cut at step 2, rule continuity.survives_power_loss); torn: writes of continuity.db kept%0A" +
			"reproduce: storecheck sim --store continuity --seed 3",
		"::error title=storecheck continuity/backend%3A the backend failed::exit status 2",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the annotations:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range lines {
		if strings.ContainsAny(l, "\r") {
			t.Errorf("an unescaped CR: %q", l)
		}
	}
	// A long message is cut to its first lines: the log has the rest.
	long := Annotation(Check{Store: "runtime", Layer: "spec", Name: "n", Outcome: Failed, Message: strings.Repeat("line\n", 40)})
	if n := strings.Count(long, "%0A"); n != annotationLines || !strings.HasSuffix(long, "… (28 more lines: see the log and the report)") {
		t.Errorf("a 40-line message: %d lines, %q", n, long[len(long)-60:])
	}
}
