package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
)

// fakeBackend plays a misbehaving backend (this test binary started as
// "fake-backend NAME", see TestMain): it shakes hands and opens stores
// correctly, then breaks the protocol in one way on its first operation.
func fakeBackend(name string) {
	fmt.Fprintf(os.Stderr, "fake backend %s: starting\n", name)
	if name == "exits_at_start" {
		fmt.Fprintln(os.Stderr, "fatal: cannot read /etc/fake-backend.conf")
		os.Exit(1)
	}
	if n, ok := strings.CutPrefix(name, "garbles_reply_"); ok {
		// The reference over the wire, but for its nth reply, which is
		// not JSON: one protocol violation, in the middle of a run.
		nth, _ := strconv.Atoi(n)
		os.Exit(serve(os.Stdin, &garbler{w: os.Stdout, nth: nth, name: name}, os.Stderr, conformance.Reference()))
	}
	if name == "maps_a_side_file" {
		os.Exit(mappingServe())
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	reply := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	if strings.HasSuffix(name, "_open_timeout") {
		lockedOpenBackend(name, reply)
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var req adapters.Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			continue
		}
		switch req.Type {
		case adapters.TypeHello:
			reply(map[string]any{"id": req.ID, "result": adapters.Hello{Version: adapters.ProtocolVersion, Name: "fake " + name,
				Stores: []string{"continuity"}, Capabilities: adapters.Capabilities{Capabilities: spec.Capabilities{Files: true}}}})
			continue
		case adapters.TypeOpen:
			reply(map[string]any{"id": req.ID, "result": adapters.Opened{Handle: 1}})
			continue
		case adapters.TypeClose:
			reply(map[string]any{"id": req.ID, "result": nil})
			continue
		}
		if name == "instant" { // a well-behaved backend with no store: the protocol's own cost
			var result any
			if req.Op == "max_fencing_token" {
				result = 0
			}
			reply(map[string]any{"id": req.ID, "result": result})
			continue
		}
		fmt.Fprintf(os.Stderr, "fake backend %s: misbehaving on %s\n", name, req.Op)
		switch name {
		case "not_json":
			out.WriteString("this is not JSON\n")
			out.Flush()
		case "unknown_id":
			reply(map[string]any{"id": req.ID + 1000, "result": nil})
		case "unknown_kind":
			reply(map[string]any{"id": req.ID, "error": map[string]string{"kind": "cosmic_ray", "message": "a bit flipped"}})
		case "wrong_type":
			reply(map[string]any{"id": req.ID, "result": map[string]bool{"surprise": true}})
		case "never_replies":
		case "exits_mid_run":
			fmt.Fprintln(os.Stderr, "panic: index out of range [3] with length 3")
			os.Exit(2)
		case "endless_line":
			chunk := []byte(strings.Repeat("x", 1<<16))
			for {
				if _, err := os.Stdout.Write(chunk); err != nil {
					os.Exit(1)
				}
			}
		}
	}
}

// lockedOpenBackend plays a backend that declares sqlite_locking: an open
// of a locked.db (the locked-open spec's file) waits the first time, and every operation
// but upsert_continuity_record fails with io. "keeps_open_timeout" gives up waiting at the open's
// timeout_ms; "ignores_open_timeout" answers with handle 77 half a second
// after timeout_ms and the slack, as a backend that waits for the lock its
// own busy timeout would (the kit waits a second more: it gets the answer). It says on
// stderr which handles it is asked to close.
func lockedOpenBackend(name string, reply func(any)) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	next := uint64(0)
	locked := map[string]bool{}
	for in.Scan() {
		var req adapters.Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			continue
		}
		switch req.Type {
		case adapters.TypeHello:
			reply(map[string]any{"id": req.ID, "result": adapters.Hello{Version: adapters.ProtocolVersion, Name: "fake " + name,
				Stores: []string{"continuity"}, Capabilities: adapters.Capabilities{Capabilities: spec.Capabilities{Files: true, SQLiteLocking: true}}}})
		case adapters.TypeOpen:
			if filepath.Base(req.Path) != "locked.db" || locked[req.Path] {
				next++
				reply(map[string]any{"id": req.ID, "result": adapters.Opened{Handle: next}})
				continue
			}
			locked[req.Path] = true // the spec opens it again once it is released
			go func(id uint64, timeout time.Duration) {
				if name == "keeps_open_timeout" {
					time.Sleep(timeout)
					reply(map[string]any{"id": id, "error": adapters.WireError{Kind: "io", Message: "database is locked"}})
					return
				}
				time.Sleep(timeout + spec.LockedOpenSlack + 500*time.Millisecond)
				reply(map[string]any{"id": id, "result": adapters.Opened{Handle: 77}})
			}(req.ID, time.Duration(req.TimeoutMS)*time.Millisecond)
		case adapters.TypeClose:
			fmt.Fprintf(os.Stderr, "fake backend %s: closed handle %d\n", name, req.Handle)
			reply(map[string]any{"id": req.ID, "result": nil})
		default:
			if req.Op == "upsert_continuity_record" { // what the spec does once the lock is released
				reply(map[string]any{"id": req.ID, "result": nil})
				continue
			}
			reply(map[string]any{"id": req.ID, "error": adapters.WireError{Kind: "io", Message: "fake"}})
		}
	}
}

// The locked-open spec measures the backend: it sends timeout_ms and waits
// longer itself, fails a backend that answers after timeout_ms plus the
// stated slack, and passes one that gives up by then; the handle the late
// answer opened is closed (a reply later than the kit's own wait is
// adapters' TestAHandleALateOpenReplyOpenedIsClosed).
func TestTheLockedOpenSpecMeasuresTheBackend(t *testing.T) {
	const name = "continuity open waits for a database another connection holds write-locked, and gives up by its timeout_ms plus a slack of 2s"
	for _, fake := range []string{"keeps_open_timeout", "ignores_open_timeout"} {
		t.Run(fake, func(t *testing.T) {
			t.Parallel()
			out, errs, _ := storecheck(t, "file", "run", "--store", "continuity", "--layers", "spec", "--seed", "1", "--verbose",
				"--", os.Args[0], "fake-backend", fake)
			failed := strings.Contains(out, "FAIL continuity/spec: "+name+"\n")
			if fake == "keeps_open_timeout" {
				if failed {
					t.Fatalf("a backend that gives up by timeout_ms failed the locked-open spec:\n%s", out)
				}
				return
			}
			if !failed || !strings.Contains(out, "the open gave up by its timeout (timeout_ms 400) plus a slack of 2s: it answered after") {
				t.Fatalf("a backend that ignores timeout_ms passed the locked-open spec, or its failure does not say why:\n%s", out)
			}
			if !strings.Contains(errs, "closed handle 77") {
				t.Errorf("the handle the late open answer opened was not closed; the backend's stderr:\n%s", errs)
			}
		})
	}
}

// A backend that breaks the protocol gets a report naming the operation
// and what was wrong, with its last stderr lines, and exit code 3 (backend
// failure), never a hang.
func TestBackendFailures(t *testing.T) {
	op := `continuity [a-z_]+ \(request \d+\)`
	for _, tc := range []struct {
		name string
		want []string // regular expressions the error must match
	}{
		{"not_json", []string{`a stdout line is not JSON`, `this is not JSON`, `in flight: ` + op}},
		{"unknown_id", []string{`a reply to id \d+, which is no request in flight`, `in flight: ` + op}},
		{"unknown_kind", []string{op + `: the backend replied with error kind "cosmic_ray", which is not one of the continuity store's kinds \(not_found, .*io\)`}},
		{"wrong_type", []string{op + `: the result has the wrong type: .*surprise`}},
		{"never_replies", []string{`timeout: ` + op + `: no reply within 500ms`}},
		{"exits_at_start", []string{`hello \(request 1\)`, `the backend process ended: exit status 1 unexpectedly`, `cannot read /etc/fake-backend.conf`}},
		{"exits_mid_run", []string{`the backend process ended: exit status 2 unexpectedly with ` + op + ` in flight`, `panic: index out of range`}},
		{"endless_line", []string{`a stdout line longer than 16777216 bytes; in flight: ` + op + `: xxxx`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			timeout := "500ms"
			if tc.name == "endless_line" {
				timeout = "20s" // reading 16 MiB must not race the timeout on a slow machine
			}
			out, errs, code := storecheck(t, "file", "run", "--seed", "1", "--reply-timeout", timeout, "--", os.Args[0], "fake-backend", tc.name)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the run took %s", took)
			}
			if code != exitBackend {
				t.Fatalf("exit %d, want %d (backend failure)\n%s\n%s", code, exitBackend, out, errs)
			}
			if !strings.Contains(errs, "storecheck run: backend failure") {
				t.Errorf("stderr does not say backend failure:\n%s", errs)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(errs) {
					t.Errorf("stderr does not match %q:\n%s", w, errs)
				}
			}
			if !strings.Contains(errs, "last stderr lines of the backend:\n    | fake backend "+tc.name+": starting") {
				t.Errorf("the report does not quote the backend's stderr:\n%s", errs)
			}
			if strings.Contains(errs+out, "panic:") && tc.name != "exits_mid_run" {
				t.Errorf("the kit panicked:\n%s\n%s", out, errs)
			}
		})
	}
}

// The simulator too: a backend that breaks the protocol, goes silent or
// dies by no fault of the kit's in a sweep is a backend failure (exit 3)
// naming the cause. Before, the simulator took the dead process's answers
// as indefinite, passed the garbler and hung on the silent one.
func TestTheSimulatorFailsABackendThatBreaksTheProtocol(t *testing.T) {
	op := `continuity [a-z_]+ \(request \d+\)`
	for _, tc := range []struct{ name, want string }{
		{"not_json", `a stdout line is not JSON`},
		{"never_replies", `timeout: ` + op + `: no reply within 500ms: the backend was alive and waiting on its stdin, having read the request`},
		{"exits_mid_run", `the backend process ended: exit status 2 unexpectedly with ` + op + ` in flight`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			out, errs, code := storecheck(t, "file", "sim", "--store", "continuity", "--seeds", "1..2", "--reply-timeout", "500ms",
				"--report-dir", t.TempDir(), "--", os.Args[0], "fake-backend", tc.name)
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("the sweep took %s", took)
			}
			if code != exitBackend || !strings.Contains(errs, "storecheck sim: backend failure") {
				t.Fatalf("exit %d, want %d (backend failure)\n%s\n%s", code, exitBackend, out, errs)
			}
			if !regexp.MustCompile(tc.want).MatchString(errs) {
				t.Errorf("stderr does not match %q:\n%s", tc.want, errs)
			}
		})
	}
}

func TestABackendThatCannotStartIsABackendFailure(t *testing.T) {
	var out, errs strings.Builder
	code := cli([]string{"run", "--", filepath.Join(t.TempDir(), "no-such-backend")}, &out, &errs, conformance.Reference())
	if code != exitBackend || !strings.Contains(errs.String(), "storecheck run: backend failure: backend_failure: start") ||
		!strings.Contains(errs.String(), "no such file or directory") {
		t.Fatalf("exit %d, want %d\n%s", code, exitBackend, errs.String())
	}
}

// garbler writes the lines written to it to w, but for the nth, which it
// replaces with a line that is not JSON (saying so on stderr).
type garbler struct {
	w       io.Writer
	nth     int
	name    string
	mu      sync.Mutex
	lines   int
	pending []byte
}

func (g *garbler) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = append(g.pending, b...)
	for {
		i := bytes.IndexByte(g.pending, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := g.pending[:i+1]
		g.lines++
		if g.lines == g.nth {
			fmt.Fprintf(os.Stderr, "fake backend %s: garbling reply %d\n", g.name, g.nth)
			line = []byte("<garbage reply>\n")
		}
		if _, err := g.w.Write(line); err != nil {
			return 0, err
		}
		g.pending = g.pending[i+1:]
	}
}

// A backend that breaks the protocol once, in the middle of the suite, is
// one failure: the backend's, with its cause and its stderr; the specs it
// kept from running (the one in flight, every one after, the
// linearizability check) are not run, not failures; the exit code is a
// backend failure's.
func TestABackendFailureIsReportedOnce(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := storecheck(t, "file", "run", "--store", "continuity", "--seed", "1", "--report-dir", dir,
		"--", os.Args[0], "fake-backend", "garbles_reply_60")
	if code != exitBackend {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitBackend, out, errs)
	}
	var run reports.Run
	b, _ := os.ReadFile(filepath.Join(dir, reports.JSONFile))
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	var failed []reports.Check
	passed, notRun := 0, 0
	for _, c := range run.Checks {
		switch c.Outcome {
		case reports.Failed:
			failed = append(failed, c)
		case reports.Passed:
			passed++
		case reports.NotRun:
			notRun++
		}
	}
	if len(failed) != 1 || failed[0].Layer != reports.BackendLayer {
		t.Fatalf("want exactly one failure, the backend's; got %d:\n%s", len(failed), out)
	}
	for _, want := range []string{"a stdout line is not JSON", "<garbage reply>", "last stderr lines of the backend",
		"| fake backend garbles_reply_60: garbling reply 60", fmt.Sprintf("%d checks not run", notRun)} {
		if !strings.Contains(failed[0].Message, want) {
			t.Errorf("the backend failure does not say %q:\n%s", want, failed[0].Message)
		}
	}
	if passed == 0 || notRun < 10 {
		t.Errorf("%d passed and %d not run: want the specs before the failure passed and the rest not run", passed, notRun)
	}
	if n := strings.Count(out, "\nFAIL "); n != 1 || !regexp.MustCompile(`(?m)^  continuity  spec +\d+ passed +0 failed +`+powerLossSkips()+` skipped +\d+ not run`).MatchString(out) {
		t.Errorf("the console shows %d failures, or counts the specs the backend failure prevented otherwise than not run:\n%s", n, out)
	}
	junit, _ := os.ReadFile(filepath.Join(dir, reports.JUnitFile))
	if !strings.Contains(string(junit), `<testsuites name="storecheck" tests="`+fmt.Sprint(len(run.Checks))+`" failures="1"`) {
		t.Errorf("junit.xml does not count one failure:\n%.400s", junit)
	}
}
