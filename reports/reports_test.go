package reports

import (
	"strings"
	"testing"
)

func TestTextSummary(t *testing.T) {
	r := Run{Backend: "b", Seed: 9, Checks: []Check{
		{Store: "runtime", Layer: "spec", Name: "r1", Outcome: Passed},
		{Store: "continuity", Layer: "spec", Name: "c1", Outcome: Passed},
		{Store: "continuity", Layer: "spec", Name: "c2", Outcome: Failed, Message: "boom"},
		{Store: "continuity", Layer: "spec", Name: "c3", Outcome: Skipped, Message: "no files"},
		{Store: "continuity", Layer: "spec", Name: "c4", Outcome: Skipped, Message: "no files"},
	}}
	var b strings.Builder
	WriteText(&b, r)
	want := `storecheck: backend b, seed 9
  continuity  spec                1 passed    1 failed    2 skipped
  runtime     spec                1 passed    0 failed    0 skipped
FAIL continuity/spec: c2
    boom
skip continuity/spec: no files
`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if !r.Failed() {
		t.Fatal("a run with a failed check did not fail")
	}
}

// A failed simulated check shows its interleaving one column per process,
// every line within the terminal's width, each cell cut to its column; a
// long one shows its last rows.
func TestWriteCheckFitsTheInterleavingToTheWidth(t *testing.T) {
	il := &Interleaving{Columns: []string{"process 0", "process 1"}}
	for i := range 70 {
		il.Rows = append(il.Rows, InterleavingRow{Step: i, Cells: []string{strings.Repeat("x", i), "┊"}})
	}
	c := Check{Store: "continuity", Layer: "sim", Name: "seed 1", Outcome: Failed, Message: "step 69: boom\nsaved in out",
		Interleaving: il, Reproduce: "storecheck sim --store continuity --seed 1"}
	for _, width := range []int{60, 100, 160} {
		var b strings.Builder
		WriteCheck(&b, c, width)
		out := b.String()
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if n := len([]rune(line)); n > width && !strings.HasPrefix(line, "    reproduce:") {
				t.Errorf("width %d: a line of %d runes: %q", width, n, line)
			}
		}
		for _, want := range []string{"FAIL continuity/sim: seed 1\n    step 69: boom\n    saved in out\n",
			"    the interleaving, one column per process:\n    step │ process 0", "…    (10 earlier rows",
			"\n    0069 │ xxxxx", "…", "    reproduce: storecheck sim --store continuity --seed 1\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("width %d: no %q in\n%s", width, want, out)
			}
		}
		if strings.Contains(out, "\n    0009 │") {
			t.Errorf("width %d: shows the rows before the last %d:\n%s", width, consoleRows, out)
		}
	}
}

func TestReachSummary(t *testing.T) {
	r := Reach{Events: []EventCount{{"kill", 3}, {"crash", 0}, {"abandon", 0}, {"lease", 1}}}
	if got := r.Summary(); got != "2 of 4 rare events reached (not: abandon; crash)" {
		t.Errorf("got %q", got)
	}
	r.Events[1].Count, r.Events[2].Count = 1, 1
	if got := r.Summary(); got != "4 of 4 rare events reached" {
		t.Errorf("got %q", got)
	}
}

func TestWidthIsTheTerminalsThenColumnsThenAHundred(t *testing.T) {
	defer func(ask func() (int, bool)) { terminalWidth = ask }(terminalWidth)
	terminalWidth = func() (int, bool) { return 0, false }
	t.Setenv("COLUMNS", "132")
	if Width() != 132 {
		t.Errorf("no terminal, COLUMNS=132: %d", Width())
	}
	t.Setenv("COLUMNS", "wide")
	if Width() != DefaultWidth {
		t.Errorf("no terminal, COLUMNS=wide: %d", Width())
	}
	// The terminal's own width wins over a $COLUMNS the shell exported
	// before the window was resized.
	terminalWidth = func() (int, bool) { return 77, true }
	t.Setenv("COLUMNS", "132")
	if Width() != 77 {
		t.Errorf("a terminal 77 wide, COLUMNS=132: %d", Width())
	}
}

// Output go test relays (a pipe, not a terminal) is as wide as the
// controlling terminal go test runs in, before $COLUMNS; Width, for the
// command's own stdout, never asks it: a report redirected to a file is
// DefaultWidth wide.
func TestRelayedWidthAsksTheControllingTerminal(t *testing.T) {
	defer func(ask, tty func() (int, bool)) { terminalWidth, ttyWidth = ask, tty }(terminalWidth, ttyWidth)
	terminalWidth = func() (int, bool) { return 0, false }
	ttyWidth = func() (int, bool) { return 91, true }
	t.Setenv("COLUMNS", "132")
	if RelayedWidth() != 91 {
		t.Errorf("piped, a controlling terminal 91 wide, COLUMNS=132: %d", RelayedWidth())
	}
	if Width() != 132 {
		t.Errorf("Width asked the controlling terminal: %d", Width())
	}
	terminalWidth = func() (int, bool) { return 77, true }
	if RelayedWidth() != 77 {
		t.Errorf("stdout a terminal 77 wide: %d", RelayedWidth())
	}
	terminalWidth = func() (int, bool) { return 0, false }
	ttyWidth = func() (int, bool) { return 0, false }
	if RelayedWidth() != 132 {
		t.Errorf("no terminal at all, COLUMNS=132: %d", RelayedWidth())
	}
}

// The header names the seeds the run ran: one seed, a sweep's range, each
// layer's when they differ, and the shard; never only the first seed of a
// range.
func TestTheHeaderSaysTheSeedRange(t *testing.T) {
	for _, tc := range []struct {
		run  Run
		want string
	}{
		{Run{Seed: 9}, "seed 9"},
		{Run{Seed: 3, Seeds: []LayerSeeds{{"spec", "3"}, {"linearizability", "3"}}}, "seed 3"},
		{Run{Seed: 1, Seeds: []LayerSeeds{{"sim", "1..50"}}}, "seeds 1..50"},
		{Run{Seed: 1, Seeds: []LayerSeeds{{"spec", "1"}, {"linearizability", "1"}, {"sim", "1..20"}}},
			"spec seed 1, linearizability seed 1, sim seeds 1..20"},
		{Run{Seed: 1, Seeds: []LayerSeeds{{"sim", "1..2000"}}, Shard: "2/4"}, "seeds 1..2000 (shard 2/4)"},
	} {
		var b strings.Builder
		writeText(&b, tc.run, 100)
		if head, _, _ := strings.Cut(b.String(), "\n"); head != "storecheck: backend , "+tc.want {
			t.Errorf("header %q, want %q", head, "storecheck: backend , "+tc.want)
		}
	}
}

// A cell too wide for its column keeps its start and shows the arguments
// that tell one step from the next first: fences, tokens, then versions
// and generations, then ids, then the rest, as many as fit, "…" saying
// some were cut; a cell with no JSON end is cut at its end.
func TestACutCellShowsTheDistinguishingArgumentsFirst(t *testing.T) {
	cell := `client 0: upsert {"record":{"identity":"agent-1","agent_runtime_id":"rt-attempt","session_id":"session-2","generation":3,"checkpoint_version":0},"fence":5}`
	for _, tc := range []struct {
		width int
		want  string
	}{
		{200, cell},
		{40, "client 0: upsert fence=5 generation=3…"},
		{60, "client 0: upsert fence=5 generation=3 checkpoint_version=0…"},
		{90, "client 0: upsert fence=5 generation=3 checkpoint_version=0 identity=agent-1…"},
		{110, "client 0: upsert fence=5 generation=3 checkpoint_version=0 identity=agent-1 agent_runtime_id=rt-attempt…"},
		{120, "client 0: upsert fence=5 generation=3 checkpoint_version=0 identity=agent-1 agent_runtime_id=rt-attempt…"},
		// Every argument fits as key=value: none is cut.
		{130, "client 0: upsert fence=5 generation=3 checkpoint_version=0 identity=agent-1 agent_runtime_id=rt-attempt session_id=session-2"},
	} {
		if got := strings.TrimRight(FitCell(cell, tc.width), " "); got != tc.want {
			t.Errorf("width %d: %q, want %q", tc.width, got, tc.want)
		}
		if n := len([]rune(FitCell(cell, tc.width))); n != tc.width {
			t.Errorf("width %d: %d runes", tc.width, n)
		}
	}
	// A crash note before the arguments stays whole; an answer's value
	// is ranked the same way; an array of scalars is one argument.
	for cell, want := range map[string]string{
		`client 1: save [crash at s/a] {"write":{"identity":"a","data":"eA==","fencing_token":7}}`:                                  "client 1: save [crash at s/a] fencing_token=7 identity=a…",
		`  → {"session_id":"s","owner_id":"o","lease_token":"s:o:1767225600047:1","fencing_token":1,"claimed_at_ms":1767225600047}`: "  → fencing_token=1 lease_token=s:o:1767225600047:1…",
		`client 0: resolve_many {"identities":["agent-1","agent-0"],"other":"a long value that will not fit"}`:                      "client 0: resolve_many identities=[agent-1,agent-0]…",
		// A fence that does not fit is never traded for a lesser argument.
		`client 1: save_session_snapshot_of_a_long_name {"write":{"identity":"agent-1","fencing_token":5,"data":""}}`: "client 1: save_session_snapshot_of_a_long_name …",
		"  … a_yield_point_whose_name_is_far_too_long_for_the_column_it_is_in":                                        "  … a_yield_point_whose_name_is_far_too_long_for_the_col…",
	} {
		if got := strings.TrimRight(FitCell(cell, 57), " "); got != want {
			t.Errorf("%s:\n got %q\nwant %q", cell, got, want)
		}
	}
}
