package sim

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Row is one line of a run laid out by process: the step, and what each
// process did at it ("" for nothing; "┊" for an operation of its own still
// in flight, paused at a yield point).
type Row struct {
	Step  int
	Cells []string
}

// Interleaving lays the run out one column per process, so that a person
// sees where one operation's check and another's write crossed: each
// process's operations down its own column, a "┊" while one waits at a yield
// point as the others move.
func (r Result) Interleaving() (columns []string, rows []Row) {
	n := max(r.Schedule.Processes, 1)
	for p := range n {
		columns = append(columns, fmt.Sprintf("process %d", p))
	}
	flying := make([]bool, n)
	for _, m := range r.Moves {
		if m.Process < 0 || m.Process >= n {
			continue
		}
		row := Row{Step: m.Step, Cells: make([]string, n)}
		for p := range n {
			if flying[p] && p != m.Process {
				row.Cells[p] = "┊"
			}
		}
		row.Cells[m.Process] = m.Text
		switch {
		case strings.HasPrefix(m.Text, "client "):
			flying[m.Process] = true
		case strings.HasPrefix(m.Text, "  → "), m.Text == "kill the backend (SIGKILL)":
			flying[m.Process] = false
		}
		rows = append(rows, row)
	}
	return columns, rows
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

// fit is s cut or padded to width runes.
func fit(s string, width int) string {
	if n := utf8.RuneCountInString(s); n <= width {
		return s + strings.Repeat(" ", width-n)
	}
	rs := []rune(s)
	return string(rs[:width-1]) + "…"
}
