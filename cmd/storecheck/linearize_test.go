package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
)

// A race the specs cannot see fails linearize, leaves a folder with the
// history, the visualization and the command, and the saved history fails
// "storecheck check" again offline.
func TestLinearizeCatchesARaceAndItsHistoryRechecks(t *testing.T) {
	dir := t.TempDir()
	out, errs, code, seed := raced(t, "bug:continuity_upsert_check_outside_tx", 3, raceTries, func(seed int) []string {
		return []string{"linearize", "--store", "continuity", "--seed", strconv.Itoa(seed), "--report-dir", dir}
	})
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailed, out, errs)
	}
	folder := filepath.Join(dir, "linearizability-continuity-seed-"+strconv.Itoa(seed))
	for _, f := range []string{"history.json", "visualization.html", "summary.txt"} {
		if st, err := os.Stat(filepath.Join(folder, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(folder, "summary.txt"))
	if !strings.Contains(string(summary), "reproduce: storecheck linearize --clients 8 --ops 2000 --handles 2 --store continuity --seed "+strconv.Itoa(seed)) {
		t.Errorf("summary lacks the command:\n%s", summary)
	}
	// The deterministic re-check of the saved history is offered first,
	// on the console and in the folder; the re-run, real concurrency again,
	// second.
	recheck := reports.RecheckLabel + ": storecheck check " + filepath.Join(folder, "history.json") + "\n"
	for form, text := range map[string]string{"console": out, "summary.txt": string(summary)} {
		if i := strings.Index(text, recheck); i < 0 || i > strings.Index(text, "reproduce: storecheck linearize") {
			t.Errorf("the %s does not offer %q before the re-run:\n%s", form, recheck, text)
		}
	}
	var o, e bytes.Buffer
	if code := cli([]string{"check", filepath.Join(folder, "history.json")}, &o, &e, conformance.Reference()); code != exitFailed {
		t.Fatalf("check of the saved history: exit %d\n%s%s", code, o.String(), e.String())
	}
	if !strings.Contains(o.String(), "illegal") {
		t.Errorf("check output: %s", o.String())
	}
	// The failure is explained in words, the same in every output: the
	// operation no order could place, what the contract allows there,
	// every failing part.
	explained := regexp.MustCompile(`(?m)^no sequential order of the history is one the contract allows: client \d+'s [a-z_]+ answered .*, where the contract allows only .*\npart 1 of (\d+) \(\d+ operations\): client \d+'s [a-z_]+ \{.*\} at \d+ms answered .*,\n  but after the longest order`)
	m := explained.FindStringSubmatch(string(summary))
	if m == nil {
		t.Fatalf("summary.txt does not explain the failure:\n%s", summary)
	}
	_, explanation, _ := strings.Cut(string(summary), "\n\n")
	if !strings.Contains(o.String(), explanation) {
		t.Errorf("storecheck check explains the saved history otherwise than summary.txt:\n%s\nsummary.txt:\n%s", o.String(), explanation)
	}
	if parts, _ := strconv.Atoi(m[1]); strings.Count(explanation, "\npart ") != parts {
		t.Errorf("summary.txt says %d failing parts and explains %d:\n%s", parts, strings.Count(explanation, "\npart "), explanation)
	}
	headline, _, _ := strings.Cut(explanation, "\n")
	if !strings.Contains(out, "    "+headline+"\n") {
		t.Errorf("the console does not give the failure's headline %q:\n%s", headline, out)
	}
	for _, f := range []string{reports.JUnitFile, reports.JSONFile, reports.HTMLFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		text := string(b)
		switch f {
		case reports.HTMLFile:
			text = html.UnescapeString(text)
		case reports.JUnitFile:
			var suites struct {
				Cases []struct {
					Failure struct {
						Message string `xml:"message,attr"`
						Text    string `xml:",chardata"`
					} `xml:"failure"`
				} `xml:"testsuite>testcase"`
			}
			if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Cases) == 0 {
				t.Fatalf("junit.xml: %v", err)
			}
			text = suites.Cases[0].Failure.Message + "\n" + suites.Cases[0].Failure.Text
		}
		if f == reports.JSONFile {
			var r reports.Run
			json.Unmarshal(b, &r)
			text = r.Checks[0].Message
		}
		if !strings.Contains(text, headline) {
			t.Errorf("%s does not give the failure's headline %q", f, headline)
		}
	}
}

func TestCheckGoldenHistories(t *testing.T) {
	h := conformance.Reference()
	files, _ := filepath.Glob("../../linearizability/testdata/*/*/*.json")
	if len(files) == 0 {
		t.Fatal("no golden histories")
	}
	for _, f := range files {
		want := exitPassed
		if filepath.Base(filepath.Dir(f)) == "illegal" {
			want = exitFailed
		}
		var o, e bytes.Buffer
		if code := cli([]string{"check", f}, &o, &e, h); code != want {
			t.Errorf("%s: exit %d, want %d\n%s%s", f, code, want, o.String(), e.String())
		}
	}
}

func TestLinearizeAndCheckUsageErrors(t *testing.T) {
	h := conformance.Reference()
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"store":"continuity","entries":[{"op":"nope"}]}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"linearize", "--clients", "0"}, "storecheck linearize: --clients must be at least 1, got 0\n"},
		{[]string{"linearize", "--seed", "1", "--seeds", "1..3"}, "storecheck linearize: --seed and --seeds name the same thing; give one\n"},
		{[]string{"linearize", "--shard", "0/1"}, "storecheck linearize: shard \"0/1\": want i/n with 1 <= i <= n\n"},
		{[]string{"linearize", "--store", "x"}, "storecheck linearize: unknown store \"x\"; accepted: " + strings.Join(stores.Names(), ", ") + "\n"},
		{[]string{"check"}, "storecheck check: want exactly 1 HISTORY.json, got 0 arguments; usage: storecheck check [flags] HISTORY.json\n"},
		{[]string{"check", bad}, "storecheck check: " + bad + ": history entry 0: continuity has no operation \"nope\"\n"},
	} {
		var o, e bytes.Buffer
		if code := cli(tc.args, &o, &e, h); code != exitUsage || e.String() != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, %q", tc.args, code, e.String(), exitUsage, tc.want)
		}
	}
}
