package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
)

// markupBackend speaks the wire protocol and answers every operation with an
// error whose message is markup: what a hostile or careless backend could
// put in front of a person reading the HTML report.
const markupArg = "storecheck-test-markup-backend"

func init() {
	if len(os.Args) < 2 || os.Args[1] != markupArg {
		return
	}
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req adapters.Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			os.Exit(9)
		}
		switch req.Type {
		case adapters.TypeHello:
			out.Encode(map[string]any{"id": req.ID, "result": adapters.Hello{Version: adapters.ProtocolVersion, Name: "markup <b>backend</b>",
				Stores: []string{"continuity"}, Capabilities: adapters.Capabilities{Capabilities: spec.Capabilities{InMemory: true}}}})
		case adapters.TypeOpen:
			out.Encode(map[string]any{"id": req.ID, "result": adapters.Opened{Handle: 1}})
		case adapters.TypeClose:
			out.Encode(map[string]any{"id": req.ID, "result": nil})
		default:
			out.Encode(map[string]any{"id": req.ID, "error": adapters.WireError{Kind: "corruption",
				Message: `<script>alert("owned")</script><img src=x onerror=alert(1)>`}})
		}
	}
	os.Exit(0)
}

// The JUnit XML and the JSON report read back with the standard decoders and
// say what the run said; the HTML escapes what the backend wrote.
func TestReportsOfAFailingRun(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := storecheck(t, "file", "run", "--store", "continuity", "--seed", "4", "--report-dir", dir, "--", os.Args[0], markupArg)
	if code != exitFailed {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(filepath.Join(dir, reports.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatal(err)
	}
	var run reports.Run
	jb, err := os.ReadFile(filepath.Join(dir, reports.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(jb)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&run); err != nil {
		t.Fatal(err)
	}
	var failed, skipped int
	for _, c := range run.Checks {
		switch c.Outcome {
		case reports.Failed:
			failed++
		case reports.Skipped:
			skipped++
		}
	}
	if suites.Tests != len(run.Checks) || suites.Failures != failed || suites.Skipped != skipped || failed == 0 {
		t.Fatalf("JUnit says %d tests, %d failures, %d skipped; JSON %d checks, %d failed, %d skipped",
			suites.Tests, suites.Failures, suites.Skipped, len(run.Checks), failed, skipped)
	}
	for _, tl := range run.Tallies() {
		line := fmt.Sprintf("  %-11s %-16s %4d passed %4d failed %4d skipped", tl.Store, tl.Layer, tl.Passed, tl.Failed, tl.Skipped)
		if !strings.Contains(out, line) {
			t.Errorf("the text summary lacks the JSON's line %q:\n%s", line, out)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(html), "<script>alert") || strings.Contains(string(html), "<img src=x") || strings.Contains(string(html), "<b>backend</b>") {
		t.Fatal("the HTML report carries the backend's markup unescaped")
	}
	if !strings.Contains(string(html), "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;") {
		t.Fatalf("the HTML report does not show the backend's message, escaped")
	}
}
