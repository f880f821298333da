package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
)

// cellsOf is each row of r's interleaving as "step|process|text", the
// "┊" cells left out.
func cellsOf(r Result) []string {
	_, rows := r.Interleaving()
	var out []string
	for _, row := range rows {
		for p, c := range row.Cells {
			if c != "" && c != "┊" {
				out = append(out, fmt.Sprintf("%d|%d|%s", row.Step, p, c))
			}
		}
	}
	return out
}

// A crash sits on the operation it hits: the fault's row, which only arms
// the process's next operation, moves to a row of its own just below that
// operation's, on its step (the operation's row keeps its arguments, for a
// narrow column to show its fences), and the answer says it died there;
// an armed operation that never reached its point says so; an arming no
// operation followed keeps its row.
func TestACrashSitsOnTheOperationItHits(t *testing.T) {
	r := Result{Schedule: Schedule{Processes: 2}, Moves: []Move{
		{Step: 0, Process: 0, Text: "client 0: save " + armedTag("save/after_write") + ` {"id":1}`},
		{Step: 0, Process: 0, Text: "  … save/before_write"},
		{Step: 1, Process: 1, Text: "crash at load/after_read (time 1)"},
		{Step: 2, Process: 0, Text: crashedAnswer},
		{Step: 3, Process: 1, Text: "client 1: load " + armedTag("load/after_read") + ` {"id":1}`},
		{Step: 3, Process: 1, Text: "  → ok"},
		{Step: 4, Process: 0, Text: "crash at save/after_write (time 1)"},
	}}
	got := strings.Join(cellsOf(r), "\n")
	want := strings.Join([]string{
		`0|0|client 0: save {"id":1}`,
		"0|0|  crash armed at …/after_write",
		"0|0|  … save/before_write",
		"2|0|  → ? crashed at …/after_write: the process died there, and starts again",
		`3|1|client 1: load {"id":1}`,
		"3|1|  crash armed at …/after_read",
		"3|1|  → ok (the crash at …/after_read was not reached; the process starts again)",
		"4|0|crash at save/after_write (time 1)",
	}, "\n")
	if got != want {
		t.Fatalf("the interleaving:\n%s\nwant:\n%s", got, want)
	}
}

// In a real run against the reference, every crash an armed operation
// reached is shown on that operation's column, after its row, and no
// arming row stays where an operation carried it.
func TestACrashInARunIsShownWhereItHit(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 40; seed++ {
		res, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{Steps: 150}, ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		crashed := 0
		for k, v := range res.Coverage {
			if strings.HasPrefix(k, CrashedAt) {
				crashed += v
			}
		}
		if crashed == 0 {
			continue
		}
		_, rows := res.Interleaving()
		armed := map[int]string{}
		shown := 0
		for _, row := range rows {
			for p, c := range row.Cells {
				switch {
				case strings.HasPrefix(c, "client "):
					armed[p] = ""
				case strings.HasPrefix(c, "  crash armed at "):
					armed[p] = strings.TrimPrefix(c, "  crash armed at ")
				case strings.HasPrefix(c, "  → ? crashed at "):
					if armed[p] == "" || !strings.HasPrefix(c, "  → ? crashed at "+armed[p]+": ") {
						t.Fatalf("seed %d: %q in column %d, whose operation was armed at %q:\n%s", seed, c, p, armed[p], res.InterleavingText(60))
					}
					shown++
				case c == crashedAnswer && armed[p] != "":
					t.Fatalf("seed %d: a crash at %s not named on its answer:\n%s", seed, armed[p], res.InterleavingText(60))
				}
			}
		}
		if shown != crashed {
			t.Fatalf("seed %d: %d crashes, %d shown:\n%s", seed, crashed, shown, res.InterleavingText(60))
		}
		return
	}
	t.Fatal("seeds 1..40 never crashed at a point")
}

// A power cut ends every operation in flight on its own row, each in its
// own column: after the cut no column shows an operation still waiting.
func TestAPowerCutEndsEachOperationItHitsInItsColumn(t *testing.T) {
	ctx := context.Background()
	d := mountForTest(t)
	for seed := int64(1); seed <= 60; seed++ {
		res, err := explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{Steps: 150, PowerCuts: true}, "", d, "")
		if err != nil {
			t.Fatal(err)
		}
		_, rows := res.Interleaving()
		hit := 0
		for k, row := range rows {
			if !containsCut(row.Cells) {
				continue
			}
			for p, c := range row.Cells {
				if c != "┊" {
					continue
				}
				// In flight at the cut: it ends on the cut's step.
				hit++
				ended := false
				for _, later := range rows[k+1:] {
					if later.Step != row.Step {
						break
					}
					ended = ended || later.Cells[p] == cutInFlight || later.Cells[p] == cutBeforeWrite
				}
				if !ended {
					t.Fatalf("seed %d: process %d's operation in flight at the cut of step %d does not end there:\n%s", seed, p, row.Step, res.InterleavingText(50))
				}
			}
			for _, later := range rows[k+1:] {
				if later.Step == row.Step {
					continue
				}
				for p, c := range later.Cells {
					if c == "┊" {
						t.Fatalf("seed %d: process %d waits after the cut of step %d:\n%s", seed, p, row.Step, res.InterleavingText(50))
					}
				}
				break
			}
		}
		if hit > 0 {
			return
		}
	}
	t.Fatal("seeds 1..60 never cut the power under an operation of another process")
}

func containsCut(cells []string) bool {
	for _, c := range cells {
		if strings.HasPrefix(c, "cut the power") {
			return true
		}
	}
	return false
}
