package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// A race the specs cannot see fails linearize, leaves a folder with the
// history, the visualization and the command, and the saved history fails
// "storecheck check" again offline.
func TestLinearizeCatchesARaceAndItsHistoryRechecks(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := storecheck(t, "bug:continuity_upsert_check_outside_tx", "linearize", "--store", "continuity", "--seed", "3", "--report-dir", dir)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailed, out, errs)
	}
	folder := filepath.Join(dir, "linearizability-continuity-seed-3")
	for _, f := range []string{"history.json", "visualization.html", "summary.txt"} {
		if st, err := os.Stat(filepath.Join(folder, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(folder, "summary.txt"))
	if !strings.Contains(string(summary), "reproduce: storecheck linearize --clients 8 --ops 2000 --handles 2 --store continuity --seed 3") {
		t.Errorf("summary lacks the command:\n%s", summary)
	}
	var o, e bytes.Buffer
	if code := cli([]string{"check", filepath.Join(folder, "history.json")}, &o, &e, stores.Reference()); code != exitFailed {
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

// countedModel is a model whose steps are counted: in the check until
// the check's time is known, in the report after.
type countedModel struct {
	model.Model
	tm            *linearizeTimings
	check, report *atomic.Int64
}

func (c countedModel) Step(s model.State, op spec.Op, nowMS int64) []model.Branch {
	if c.tm.check == 0 {
		c.check.Add(1)
	} else {
		c.report.Add(1)
	}
	return c.Model.Step(s, op, nowMS)
}

// countedSplitter is a countedModel of a model.Splitter.
type countedSplitter struct {
	countedModel
	model.Splitter
}

func (c countedSplitter) Step(s model.State, op spec.Op, nowMS int64) []model.Branch {
	return c.countedModel.Step(s, op, nowMS)
}

// A failing linearize reports within 1.5x of its check time: the report
// reads porcupine's one check in words and checks nothing again (it used to
// bisect the history with a check for each step). Time on a shared machine
// is noise, so what is asserted is the work: the report steps the model at
// most half as often as the check did (the visualization walks the
// partial orders the check found, each step once); the times are logged,
// and BenchmarkAFailingLinearizeReport measures them.
func TestAFailingLinearizeReportsWithinItsCheckTime(t *testing.T) {
	for _, name := range []string{"runtime_lease_claim_outside_tx", "client_settle_check_outside_tx"} {
		b, _ := bugs.ByName(name)
		s, _ := stores.Lookup(b.Store())
		var tm linearizeTimings
		var checkSteps, reportSteps atomic.Int64
		c := linearizeStore(context.Background(), stores.Backend(stores.Options{Bug: b}), s, linearizeConfig{
			run: linearizability.Config{Seed: 2}, timeout: defaultCheckTimeout, reportDir: t.TempDir(),
			command: "storecheck linearize", timings: &tm,
			model: func(m model.Model) model.Model {
				counted := countedModel{m, &tm, &checkSteps, &reportSteps}
				if sp, ok := m.(model.Splitter); ok {
					return countedSplitter{counted, sp}
				}
				return counted
			}}, io.Discard)
		if c.Outcome != reports.Failed {
			t.Fatalf("%s: %s: %s", name, c.Outcome, c.Message)
		}
		t.Logf("%s: history recorded in %v, checked in %v (%d model steps), reported in %v (%d model steps): check and report %.2fx the check",
			name, tm.run.Round(time.Millisecond), tm.check.Round(time.Millisecond), checkSteps.Load(), tm.report.Round(time.Millisecond),
			reportSteps.Load(), float64(tm.check+tm.report)/float64(tm.check))
		if checkSteps.Load() == 0 || reportSteps.Load() > checkSteps.Load()/2 {
			t.Errorf("%s: the report stepped the model %d times, more than half the check's %d", name, reportSteps.Load(), checkSteps.Load())
		}
	}
}

func TestCheckGoldenHistories(t *testing.T) {
	h := stores.Reference()
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
	h := stores.Reference()
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"store":"continuity","entries":[{"op":"nope"}]}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"linearize", "--clients", "0"}, "storecheck linearize: --clients must be at least 1, got 0\n"},
		{[]string{"linearize", "--seed", "1", "--seeds", "1..3"}, "storecheck linearize: --seed and --seeds name the same thing; give one\n"},
		{[]string{"linearize", "--shard", "0/1"}, "storecheck linearize: shard \"0/1\": want i/n with 1 <= i <= n\n"},
		{[]string{"linearize", "--store", "x"}, "storecheck linearize: unknown store \"x\"; accepted: " + strings.Join(storeNames, ", ") + "\n"},
		{[]string{"check"}, "storecheck check: want exactly 1 HISTORY.json, got 0 arguments; usage: storecheck check [flags] HISTORY.json\n"},
		{[]string{"check", bad}, "storecheck check: " + bad + ": history entry 0: continuity has no operation \"nope\"\n"},
	} {
		var o, e bytes.Buffer
		if code := cli(tc.args, &o, &e, h); code != exitUsage || e.String() != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, %q", tc.args, code, e.String(), exitUsage, tc.want)
		}
	}
}

// Over the wire, every handle of a linearizability run after the first is
// a process of its own on the one database, so that a race between
// processes is real whatever the backend's own concurrency; closing the
// handle ends its process.
func TestLinearizeGivesEveryHandleAProcessOfItsOwn(t *testing.T) {
	e := startServe(t)
	s, _ := stores.Lookup("continuity")
	open, handles := opener(e, s, t.TempDir())
	if handles != 2 {
		t.Fatalf("%d handles, want 2", handles)
	}
	clock := clockwork.NewFakeClockAt(linearizability.Epoch)
	ctx := context.Background()
	first, err := open(ctx, clock)
	if err != nil {
		t.Fatal(err)
	}
	second, err := open(ctx, clock)
	if err != nil {
		t.Fatal(err)
	}
	own, ok := second.(ownProcess)
	if !ok || own.e.PID() == e.PID() {
		t.Fatalf("the second handle is not a process of its own: %T", second)
	}
	// Both processes work on the one database.
	if _, err := first.Apply(ctx, c.UpsertContinuityRecord{Record: c.Record{Identity: "a", SessionID: "s"}, Fence: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := second.Apply(ctx, c.MaxFencingToken{})
	if err != nil || got != c.FencingToken(3) {
		t.Fatalf("the second process reads %v, %v", got, err)
	}
	first.Close()
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if own.e.Err() != nil {
		t.Fatalf("the second process ended with %v", own.e.Err())
	}
}
