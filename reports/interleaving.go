package reports

import (
	"encoding/json"
	"fmt"
	"sort"
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

// fit is s cut or padded to width runes (FitCell).
func fit(s string, width int) string {
	return FitCell(s, width)
}

// FitCell is an interleaving's cell cut or padded to width runes. A cell
// too wide whose end is JSON (an operation's arguments, an answer) keeps
// what it starts with (the client, the operation, a crash note) and shows
// the arguments that tell one step from the next first, as key=value:
// fences and tokens, then revisions, versions, generations, sequence
// numbers and attempts, then ids and keys, then the rest, as many as fit
// (none of a rank after one of a higher rank was cut); "…" says some were
// cut. Any other cell is cut at its end.
func FitCell(s string, width int) string {
	if n := utf8.RuneCountInString(s); n <= width {
		return s + strings.Repeat(" ", width-n)
	}
	if c, ok := compact(s, width); ok {
		return c + strings.Repeat(" ", width-utf8.RuneCountInString(c))
	}
	rs := []rune(s)
	return string(rs[:max(width-1, 0)]) + "…"
}

// compact is s with its JSON end as ranked key=value pairs, at most width
// runes (false: s does not end in JSON, or its start alone is too wide).
func compact(s string, width int) (string, bool) {
	at := jsonStart(s)
	if at < 0 {
		return "", false
	}
	head := s[:at]
	dec := json.NewDecoder(strings.NewReader(s[at:]))
	dec.UseNumber()
	var leaves []leaf
	if _, err := walk(dec, "", &leaves); err != nil || dec.More() {
		return "", false
	}
	sort.SliceStable(leaves, func(i, j int) bool { return rankOf(leaves[i].key) < rankOf(leaves[j].key) })
	// Room for the head and a closing "…".
	room := width - utf8.RuneCountInString(head) - 1
	if room < 0 {
		return "", false
	}
	var parts []string
	used, cut, cutRank := 0, false, 0
	for _, l := range leaves {
		text := l.text()
		n := utf8.RuneCountInString(text)
		if len(parts) > 0 {
			n++
		}
		// One that does not fit is skipped for a shorter one of its
		// rank, never for a lesser one: a fence cut and the data shown
		// would mislead.
		if cut && rankOf(l.key) > cutRank {
			break
		}
		if used+n > room {
			cut, cutRank = true, rankOf(l.key)
			continue
		}
		parts = append(parts, text)
		used += n
	}
	out := head + strings.Join(parts, " ")
	if cut {
		out += "…"
	}
	return out, true
}

// jsonStart is where s's JSON end begins: the first "{", or "[" that is
// not a crash note ("[crash at P]"); -1 for none.
func jsonStart(s string) int {
	for i, r := range s {
		if r == '{' || (r == '[' && !strings.HasPrefix(s[i:], "[crash at ")) {
			return i
		}
	}
	return -1
}

// leaf is one scalar of a JSON value: its key (the last name on its path)
// and its value as text.
type leaf struct{ key, value string }

func (l leaf) text() string {
	if l.key == "" {
		return l.value
	}
	return l.key + "=" + l.value
}

// walk adds the scalars of the JSON value dec is at to out, in the order
// they come, each under the last name on its path; an array of scalars is
// one leaf ("[a,b]"). It reports whether the value was a scalar.
func walk(dec *json.Decoder, key string, out *[]leaf) (bool, error) {
	t, err := dec.Token()
	if err != nil {
		return false, err
	}
	switch t {
	case json.Delim('{'):
		n := 0
		for ; dec.More(); n++ {
			k, err := dec.Token()
			if err != nil {
				return false, err
			}
			name, _ := k.(string)
			if _, err := walk(dec, name, out); err != nil {
				return false, err
			}
		}
		if n == 0 {
			*out = append(*out, leaf{key, "{}"})
		}
		_, err := dec.Token()
		return false, err
	case json.Delim('['):
		start, scalars := len(*out), true
		for dec.More() {
			one, err := walk(dec, key, out)
			if err != nil {
				return false, err
			}
			scalars = scalars && one
		}
		if scalars {
			values := make([]string, 0, len(*out)-start)
			for _, l := range (*out)[start:] {
				values = append(values, l.value)
			}
			*out = append((*out)[:start], leaf{key, "[" + strings.Join(values, ",") + "]"})
		}
		_, err := dec.Token()
		return false, err
	}
	*out = append(*out, leaf{key, scalar(t)})
	return true, nil
}

// scalar is a JSON scalar as text: strings bare.
func scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// rankOf orders a key by how much it tells one step from the next: fences,
// then tokens, then revisions, versions, generations, sequence numbers and
// attempts, then ids and keys, then the rest.
func rankOf(key string) int {
	k := strings.ToLower(key)
	has := func(parts ...string) bool {
		for _, p := range parts {
			if strings.Contains(k, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("fenc"):
		return 0
	case strings.HasSuffix(k, "token"):
		return 1
	case has("revision", "version", "generation", "seq", "attempt"):
		return 2
	case k == "id" || has("_id", "identit", "key", "owner"):
		return 3
	}
	return 4
}
