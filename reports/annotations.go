package reports

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// inActions reports whether this runs as a GitHub Actions step (the runner
// sets GITHUB_ACTIONS=true); a variable so that tests can stand in for one.
var inActions = func() bool { return os.Getenv("GITHUB_ACTIONS") == "true" }

// annotationLines bounds the lines of a check's message an annotation
// carries: the pull request shows the gist, the log and the report all of
// it.
const annotationLines = 12

// WriteAnnotations writes each failed check of r, of every layer, as a
// GitHub Actions error annotation ("::error title=...::..."), so that it
// shows on the run's summary and the pull request: its title names the
// store, the layer, the check and the rules it breaks, its message the
// rules, what failed and the line that reproduces it. Outside GitHub
// Actions it writes nothing.
func WriteAnnotations(w io.Writer, r Run) {
	if !inActions() {
		return
	}
	for _, c := range r.Checks {
		if c.Outcome == Failed {
			fmt.Fprintln(w, Annotation(c))
		}
	}
}

// Annotation is c as a GitHub Actions error annotation, one line: the
// workflow command "::error title=TITLE::MESSAGE", its title and message
// escaped as GitHub requires (% CR LF in both, and : , in the title).
func Annotation(c Check) string {
	rules := RulesNamed(c)
	title := fmt.Sprintf("storecheck %s/%s: %s", c.Store, c.Layer, c.Name)
	if len(rules) > 0 {
		title += " (rule " + strings.Join(rules, ", ") + ")"
	}
	var msg []string
	if len(rules) > 0 {
		msg = append(msg, "rules broken: "+strings.Join(rules, ", "))
	}
	lines := strings.Split(strings.TrimRight(c.Message, "\n"), "\n")
	if len(lines) > annotationLines {
		lines = append(lines[:annotationLines], fmt.Sprintf("… (%d more lines: see the log and the report)", len(lines)-annotationLines))
	}
	msg = append(msg, lines...)
	msg = append(msg, nonEmpty(recheckLine(c), reproduceLine(c))...)
	return "::error title=" + escapeProperty(title) + "::" + escapeData(strings.Join(msg, "\n"))
}

// RulesNamed are the rules of its contract a check's message names
// ("continuity.upsert_continuity_record.fence_not_lower"), in order, each
// once: every layer's failure names the rules it breaks in its message.
func RulesNamed(c Check) []string {
	if c.Store == "" {
		return nil
	}
	pattern := regexp.MustCompile(`\b` + regexp.QuoteMeta(c.Store) + `(?:\.[a-z0-9_]+)+`)
	var out []string
	seen := map[string]bool{}
	for _, r := range pattern.FindAllString(c.Message, -1) {
		if fileName.MatchString(r) {
			// "continuity.db": a file of the store, not a rule.
			continue
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// fileName matches a name that ends as the files a message may name do.
var fileName = regexp.MustCompile(`\.(db|go|json|html|txt|xml|wal|shm|log)$`)

// escapeData escapes a workflow command's message: "%", CR and LF.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value: as its
// message, and ":" and "," too.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
