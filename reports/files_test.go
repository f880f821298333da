package reports

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var sample = Run{Tool: "storecheck", Command: "storecheck run", Backend: "b <x>", Seed: 3, Duration: 2 * time.Second, Checks: []Check{
	{Store: "continuity", Layer: "spec", Name: "ok one", Outcome: Passed, Duration: time.Millisecond},
	{Store: "continuity", Layer: "spec", Name: "bad one", Outcome: Failed, Message: "expected <b>x</b>\nsecond line", Reproduce: "storecheck run --seed 3"},
	{Store: "continuity", Layer: "linearizability", Name: "lin", Outcome: Inconclusive, Message: "timed out",
		Artifacts: []Artifact{{Name: "visualization", Path: "lin/visualization.html"}, {Name: "history", Path: "lin/history.json"}}},
	{Store: "runtime", Layer: "spec", Name: "skipped one", Outcome: Skipped, Message: "no files"},
}}

// The JUnit XML reads back with an XML parser and says what the run found.
func TestJUnitReadsBack(t *testing.T) {
	var b strings.Builder
	if err := WriteJUnit(&b, sample); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got.Tests != 4 || got.Fail != 1 || got.Errors != 1 || got.Skipped != 1 || len(got.Suites) != 3 {
		t.Fatalf("totals %+v", got)
	}
	var failure *junitCase
	for _, s := range got.Suites {
		for i := range s.Cases {
			if s.Cases[i].Name == "bad one" {
				failure = &s.Cases[i]
			}
		}
	}
	if failure == nil || failure.Failure == nil || failure.Failure.Message != "expected <b>x</b>" ||
		!strings.Contains(failure.Failure.Text, "reproduce: storecheck run --seed 3") {
		t.Fatalf("failure case: %+v", failure)
	}
}

// The JSON report decodes into the run it came from.
func TestJSONReadsBack(t *testing.T) {
	var b strings.Builder
	if err := WriteJSON(&b, sample); err != nil {
		t.Fatal(err)
	}
	var got Run
	dec := json.NewDecoder(strings.NewReader(b.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample) {
		t.Fatalf("got %+v\nwant %+v", got, sample)
	}
}

// Whatever a backend wrote is escaped in the HTML: it cannot add markup.
func TestHTMLEscapesWhatABackendWrote(t *testing.T) {
	evil := sample
	evil.Checks = append([]Check(nil), sample.Checks...)
	evil.Checks[1].Message = `<script>alert("owned")</script><img src=x onerror=alert(1)>`
	evil.Checks[1].Details = `</pre><iframe src="javascript:alert(2)">`
	var b strings.Builder
	if err := WriteHTML(&b, evil); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, bad := range []string{"<script>", "<img", `<iframe src="javascript`, "b <x>"} {
		if strings.Contains(html, bad) {
			t.Errorf("the HTML contains %q unescaped", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;", `<iframe src="lin/visualization.html"`, "storecheck run --seed 3", "runtime/spec: no files"} {
		if !strings.Contains(html, good) {
			t.Errorf("the HTML lacks %q", good)
		}
	}
}

func TestWriteDirWritesEveryForm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	if err := WriteDir(dir, sample); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{JUnitFile, JSONFile, HTMLFile, TextFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The saved summary is as wide whatever the terminal that wrote it: the
// same run, the same bytes; only the console follows the terminal.
func TestSavedSummaryIgnoresTheTerminal(t *testing.T) {
	defer func(ask func() (int, bool)) { terminalWidth = ask }(terminalWidth)
	run := sample
	run.Checks = append(slices.Clone(sample.Checks), Check{Store: "continuity", Layer: "sim", Name: "seed 3", Outcome: Failed, Message: "boom",
		Interleaving: &Interleaving{Columns: []string{"process 0"}, Rows: []InterleavingRow{{Step: 1, Cells: []string{strings.Repeat("x", 150)}}}}})
	var saved []string
	for _, width := range []int{40, 200} {
		terminalWidth = func() (int, bool) { return width, true }
		dir := t.TempDir()
		if err := WriteDir(dir, run); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, TextFile))
		if err != nil {
			t.Fatal(err)
		}
		saved = append(saved, string(b))
		var console strings.Builder
		WriteText(&console, run)
		row := console.String()[strings.Index(console.String(), "    0001 │ "):]
		row = row[:strings.Index(row, "\n")]
		if n := len([]rune(row)); n > width || (width < 150 && !strings.HasSuffix(row, "x…")) {
			t.Errorf("terminal %d wide: the console's row is %d wide: %q", width, n, row)
		}
	}
	if saved[0] != saved[1] {
		t.Errorf("the saved summary follows the terminal:\n%s\n---\n%s", saved[0], saved[1])
	}
}
