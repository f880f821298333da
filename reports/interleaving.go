package reports

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// consoleRows bounds the rows of an interleaving a console shows: a
// schedule that was not shrunk has hundreds; its last rows are where it
// failed, and the saved interleaving has them all.
const consoleRows = 60

// minColumn is the narrowest a process's column gets, however narrow the
// terminal.
const minColumn = 12

// Fitted is the interleaving as text at most width runes wide (the columns
// share what the step numbers leave, each cut to fit), its last maxRows
// rows when it has more (0: every row).
func (il Interleaving) Fitted(width, maxRows int) string {
	n := max(len(il.Columns), 1)
	// "0000" and " │ " before each column.
	col := max((width-4-3*n)/n, minColumn)
	rows := il.Rows
	var b strings.Builder
	line := func(step string, cells []string) {
		b.WriteString(step)
		for i, c := range cells {
			c = fit(c, col)
			if i == len(cells)-1 {
				c = strings.TrimRight(c, " ")
			}
			b.WriteString(" │ " + c)
		}
		b.WriteString("\n")
	}
	line("step", il.Columns)
	if maxRows > 0 && len(rows) > maxRows {
		fmt.Fprintf(&b, "…    (%d earlier rows: see the saved interleaving)\n", len(rows)-maxRows)
		rows = rows[len(rows)-maxRows:]
	}
	for _, r := range rows {
		line(fmt.Sprintf("%04d", r.Step), r.Cells)
	}
	return strings.TrimRight(b.String(), "\n")
}

// fit is s cut or padded to width runes.
func fit(s string, width int) string {
	if n := utf8.RuneCountInString(s); n <= width {
		return s + strings.Repeat(" ", width-n)
	}
	rs := []rune(s)
	return string(rs[:width-1]) + "…"
}
