package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// A race the specs cannot see fails linearize, leaves a folder with the
// history, the visualization and the command, and the saved history fails
// "storecheck check" again offline.
func TestLinearizeCatchesARaceAndItsHistoryRechecks(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := storecheck(t, "bug:continuity_upsert_check_outside_tx", "linearize", "--seed", "3", "--report-dir", dir)
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
