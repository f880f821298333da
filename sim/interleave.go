package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
)

// Row is one line of a run laid out by process (or by caller): the step,
// and what each column did at it ("" for nothing; "┊" for an operation of
// its own still in flight, paused at a yield point).
type Row struct {
	Step  int
	Cells []string
}

// Interleaving lays the run out one column per process, so that a person
// sees where one operation's check and another's write crossed: each
// process's operations down its own column, a "┊" while one waits at a yield
// point as the others move. A crash sits on the operation it hits: the
// fault's own row (which only arms the process's next operation) moves to
// a row of its own just below that operation's, and its answer says
// whether it died at the point. A power cut's row ends every operation in flight, each in its own
// column.
//
// Where the run overlapped operations inside a process (Schedule.Overlap),
// a column is one caller: "p0.c3" is client 3's operations on process 0,
// and "p0" process 0's own moves (its faults), when it has any.
func (r Result) Interleaving() (columns []string, rows []Row) {
	columns, colOf, procOf := r.columns()
	n := len(columns)
	folded := foldedCrashes(r.Moves)
	flying := make([]bool, n)
	armed := make([]string, n)
	for k, m := range r.Moves {
		j := colOf(m)
		if j < 0 || folded[k] {
			continue
		}
		row := Row{Step: m.Step, Cells: make([]string, n)}
		for q := range n {
			if flying[q] && q != j {
				row.Cells[q] = "┊"
			}
		}
		text, note := m.Text, ""
		switch {
		case strings.HasPrefix(text, "client "):
			flying[j] = true
			if point := armedPoint(text); point != "" {
				// The operation's row keeps its arguments (a narrow
				// column shows its fences); the crash gets a row of
				// its own below it, on the same step.
				armed[j] = shortPoint(text, point)
				text = strings.Replace(text, " "+armedTag(point), "", 1)
				note = "  crash armed at " + armed[j]
			}
		case strings.HasPrefix(text, "  → "):
			if armed[j] != "" {
				text = crashAnswer(text, armed[j])
			}
			flying[j], armed[j] = false, ""
		case text == "kill the backend (SIGKILL)":
			// Every operation of the process dies with it.
			for q := range n {
				if procOf[q] == m.Process {
					flying[q], armed[q] = false, ""
				}
			}
		}
		row.Cells[j] = text
		rows = append(rows, row)
		if note != "" {
			below := Row{Step: m.Step, Cells: slices.Clone(row.Cells)}
			below.Cells[j] = note
			rows = append(rows, below)
		}
	}
	return columns, rows
}

// columns are the interleaving's columns, the column of each move (-1:
// none) and the process of each column: a process each, or where the run
// overlapped operations inside a process, a caller each (with a column of
// the process's own before its callers', when it has moves of its own).
func (r Result) columns() (names []string, colOf func(Move) int, procOf []int) {
	n := max(r.Schedule.Processes, 1)
	if !r.Schedule.Overlap {
		for p := range n {
			names, procOf = append(names, fmt.Sprintf("process %d", p)), append(procOf, p)
		}
		return names, func(m Move) int {
			if m.Process < 0 || m.Process >= n {
				return -1
			}
			return m.Process
		}, procOf
	}
	type key struct{ p, c int }
	used := map[key]bool{}
	for _, m := range r.Moves {
		if m.Process >= 0 && m.Process < n {
			used[key{m.Process, max(m.Client, -1)}] = true
		}
	}
	keys := slices.SortedFunc(maps.Keys(used), func(a, b key) int {
		if a.p != b.p {
			return a.p - b.p
		}
		return a.c - b.c
	})
	index := map[key]int{}
	for j, k := range keys {
		index[k] = j
		procOf = append(procOf, k.p)
		if k.c < 0 {
			names = append(names, fmt.Sprintf("p%d", k.p))
		} else {
			names = append(names, fmt.Sprintf("p%d.c%d", k.p, k.c))
		}
	}
	return names, func(m Move) int {
		j, ok := index[key{m.Process, max(m.Client, -1)}]
		if !ok {
			return -1
		}
		return j
	}, procOf
}

// shortPoint is point as an operation's rows show it: "…/after_write" when
// it is a point of the operation itself ("save/after_write" on a save),
// whose name is right above.
func shortPoint(text, point string) string {
	_, rest, _ := strings.Cut(text, ": ")
	name, _, _ := strings.Cut(rest, " ")
	if tail, ok := strings.CutPrefix(point, name+"/"); ok {
		return "…/" + tail
	}
	return point
}

// The answers of the operations a power cut hits, in the trace.
const (
	cutBeforeWrite = "  → never ran: the power was cut at its first yield point"
	cutInFlight    = "  → ? (the power was cut under it: it may have taken effect)"
)

// crashedAnswer is the trace's answer of an operation that died at its
// crash point.
const crashedAnswer = "  → ? (" + string(spec.ErrCrashed) + ")"

// armedTag marks an operation armed to crash at point, between its name
// and its arguments.
func armedTag(point string) string { return "[crash at " + point + "]" }

// armedPoint is the crash point an operation's row is armed at ("" for
// none): "client N: NAME [crash at POINT] {ARGS}".
func armedPoint(text string) string {
	_, rest, _ := strings.Cut(text, ": ")
	_, rest, _ = strings.Cut(rest, " ")
	tag, ok := strings.CutPrefix(rest, "[crash at ")
	if !ok {
		return ""
	}
	point, _, _ := strings.Cut(tag, "]")
	return point
}

// crashAnswer is the answer row of an operation armed at point: it died
// there, or never reached it; either way its process starts again.
func crashAnswer(text, point string) string {
	switch text {
	case cutBeforeWrite, cutInFlight:
		// The cut ended it first, and its row says so.
		return text
	case crashedAnswer:
		return "  → ? crashed at " + point + ": the process died there, and starts again"
	}
	note := "the crash at " + point + " was not reached; the process starts again"
	if open, ok := strings.CutSuffix(text, ")"); ok {
		return open + "; " + note + ")"
	}
	return text + " (" + note + ")"
}

// foldedCrashes are the moves that arm a crash ("crash at POINT (time N)")
// whose process's next operation carries it: the crash is shown on that
// operation's row. An arming no operation followed keeps its row.
func foldedCrashes(moves []Move) map[int]bool {
	folded := map[int]bool{}
	for k, m := range moves {
		if !strings.HasPrefix(m.Text, "crash at ") {
			continue
		}
		for _, next := range moves[k+1:] {
			if next.Process == m.Process && strings.HasPrefix(next.Text, "client ") {
				folded[k] = armedPoint(next.Text) != ""
				break
			}
		}
	}
	return folded
}

// InterleavingText is Interleaving as text, each column width runes wide.
func (r Result) InterleavingText(width int) string {
	columns, rows := r.Interleaving()
	var b strings.Builder
	line := func(step string, cells []string) {
		b.WriteString(step)
		for i, c := range cells {
			if i < len(cells)-1 {
				c = fit(c, width)
			}
			b.WriteString(" │ " + c)
		}
		b.WriteString("\n")
	}
	line("step", columns)
	for _, row := range rows {
		line(fmt.Sprintf("%04d", row.Step), row.Cells)
	}
	for _, u := range r.Unexplored() {
		b.WriteString("note: " + u + "\n")
	}
	return b.String()
}

// fit is s cut or padded to width runes, the arguments that tell one step
// from the next kept first (reports.FitCell).
func fit(s string, width int) string { return reports.FitCell(s, width) }
