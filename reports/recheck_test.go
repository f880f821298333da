package reports

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A linearizability failure offers the deterministic re-check of its saved
// history first, and the re-run second, in every form of the report: the
// console, summary.txt, JUnit, JSON, HTML and the Actions annotation.
func TestEveryFormOffersTheRecheckBeforeTheRerun(t *testing.T) {
	c := Check{Store: "continuity", Layer: "linearizability", Name: "seed 3", Outcome: Failed, Message: "no sequential order",
		Recheck:   "storecheck check 'report dir/linearizability-continuity-seed-3/history.json'",
		Reproduce: "storecheck linearize --store continuity --seed 3",
		Artifacts: []Artifact{{Name: "history", Path: "linearizability-continuity-seed-3/history.json"}}}
	r := Run{Tool: "storecheck", Backend: "b", Checks: []Check{c}}
	dir := t.TempDir()
	if err := WriteDir(dir, r); err != nil {
		t.Fatal(err)
	}
	var console strings.Builder
	WriteCheck(&console, c, DefaultWidth)
	forms := map[string]string{"console": console.String(), "annotation": Annotation(c)}
	for _, name := range []string{TextFile, JUnitFile, HTMLFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		forms[name] = html.UnescapeString(string(b))
	}
	forms["annotation"] = strings.ReplaceAll(forms["annotation"], "%0A", "\n")
	for form, text := range forms {
		re, rr := strings.Index(text, c.Recheck), strings.Index(text, c.Reproduce)
		switch {
		case re < 0 || rr < 0:
			t.Errorf("%s lacks the re-check or the re-run:\n%s", form, text)
		case re > rr:
			t.Errorf("%s offers the re-run before the re-check:\n%s", form, text)
		case !strings.Contains(text, "re-check the saved history (deterministic)") && !strings.Contains(text, "Re-check the saved history (deterministic)"):
			t.Errorf("%s does not say what the re-check is:\n%s", form, text)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, JSONFile))
	var back Run
	if err := json.Unmarshal(b, &back); err != nil || back.Checks[0].Recheck != c.Recheck {
		t.Errorf("the JSON's re-check: %+v (%v)", back.Checks, err)
	}
	// A check with nothing saved offers no re-check.
	console.Reset()
	c.Recheck = ""
	WriteCheck(&console, c, DefaultWidth)
	if strings.Contains(console.String(), "re-check") {
		t.Errorf("a re-check without a saved history:\n%s", console.String())
	}
}

// The merged report's re-check names its own copy of the history, not the
// shard's (which may be on another machine), its words quoted for a shell.
func TestAMergedRecheckNamesTheCopy(t *testing.T) {
	shard := t.TempDir()
	rel := filepath.Join("linearizability-continuity-seed-3", "history.json")
	if err := os.MkdirAll(filepath.Join(shard, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shard, rel), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Check{Store: "continuity", Layer: "linearizability", Name: "seed 3", Outcome: Failed,
		Recheck:   "go run example.com/storecheck check --check-timeout 2m0s '/ci/it'\\''s here/" + rel + "'",
		Artifacts: []Artifact{{Name: "history", Path: rel}}}
	r := Run{Checks: []Check{c}}
	out := filepath.Join(t.TempDir(), "merged out")
	if err := CopyArtifacts(out, []Shard{{Dir: shard, Run: r}}, &r); err != nil {
		t.Fatal(err)
	}
	want := "go run example.com/storecheck check --check-timeout 2m0s '" + filepath.Join(out, rel) + "'"
	if r.Checks[0].Recheck != want {
		t.Errorf("the merged re-check is %q, want %q", r.Checks[0].Recheck, want)
	}
	if withLastWord("storecheck check a", "b") != "storecheck check b" {
		t.Errorf("withLastWord of a bare word: %q", withLastWord("storecheck check a", "b"))
	}
}
