package reports

import (
	"html/template"
	"io"
	"strings"
	"time"
)

// The HTML report. html/template escapes every value, so nothing a backend
// wrote (an error message, a value, its stderr) can add markup or script.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":   func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"lower": func(o Outcome) string { return strings.ToLower(string(o)) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>storecheck: {{.Run.Backend}}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: .3em .7em; text-align: left; }
td.n { text-align: right; }
.failed { color: #b00020; font-weight: bold; }
.inconclusive { color: #9a6700; font-weight: bold; }
.passed { color: #1a7f37; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; white-space: pre-wrap; }
iframe { width: 100%; height: 32em; border: 1px solid #ccc; }
section.failure { border-left: 4px solid #b00020; padding-left: 1em; margin: 1.5em 0; }
table.interleaving td { font-family: monospace; font-size: 12px; white-space: pre-wrap; vertical-align: top; max-width: 40em; }
p.note { color: #555; font-style: italic; }
table.coverage td { padding: .1em .6em; font-size: 13px; }
</style>
</head>
<body>
<h1>storecheck {{if .Failed}}<span class="failed">failed</span>{{else if .Inconclusive}}<span class="inconclusive">inconclusive</span>{{else}}<span class="passed">passed</span>{{end}}</h1>
<p>Backend <code>{{.Run.Backend}}</code>, <code>{{.Run.SeedText}}</code>, {{dur .Run.Duration}}.{{if .Run.Command}} Command: <code>{{.Run.Command}}</code>{{end}}</p>
<table>
<tr><th>store</th><th>layer</th><th>passed</th><th>failed</th><th>inconclusive</th><th>skipped</th><th>not run</th></tr>
{{range .Tallies}}<tr><td>{{.Store}}</td><td>{{.Layer}}</td><td class="n">{{.Passed}}</td><td class="n{{if .Failed}} failed{{end}}">{{.Failed}}</td><td class="n{{if .Inconclusive}} inconclusive{{end}}">{{.Inconclusive}}</td><td class="n">{{.Skipped}}</td><td class="n">{{.NotRun}}</td></tr>
{{end}}</table>
{{range .Problems}}<section class="failure">
<h2 class="{{lower .Outcome}}">{{.Outcome}}: {{.Store}}/{{.Layer}}: {{.Name}}</h2>
<pre>{{.Message}}</pre>
{{if .Recheck}}<p>Re-check the saved history (deterministic): <code>{{.Recheck}}</code></p>{{end}}
{{if .Reproduce}}<p>Reproduce: <code>{{.Reproduce}}</code></p>{{end}}
{{range .Artifacts}}<p><a href="{{.Path}}">{{.Name}}</a></p>
{{if eq .Name "visualization"}}<iframe src="{{.Path}}" title="porcupine visualization"></iframe>{{end}}
{{end}}{{with .Interleaving}}<h3>The interleaving, one column per process</h3>
<table class="interleaving"><tr><th>step</th>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="n">{{.Step}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
{{end}}{{if .Details}}<details open><summary>Minimal history / shrunk schedule</summary><pre>{{.Details}}</pre></details>{{end}}
</section>
{{end}}
{{with .Run.Notes}}<h2>Not explored</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .NotRun}}<h2>Not run</h2><ul>{{range .}}<li>{{.Store}}/{{.Layer}}: {{.NotRun}} checks: the backend failed before they could give a verdict</li>{{end}}</ul>{{end}}
{{with .Skips}}<h2>Skipped</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Run.Reach}}{{$store := .Store}}{{with .Guided}}<h2>Guided sweep of {{$store}}</h2><p>{{.}}</p>{{.GrowthSVG}}{{end}}{{end}}
{{.Coverage}}
</body>
</html>
`))

// WriteHTML writes the report for people: a summary table per store and
// layer, then each failure with its message, details, the command to
// reproduce it and its artifacts, porcupine's visualization embedded.
func WriteHTML(w io.Writer, r Run) error {
	var problems []Check
	var skips []string
	seen := map[string]bool{}
	for _, c := range r.Checks {
		switch c.Outcome {
		case Failed, Inconclusive:
			problems = append(problems, c)
		case Skipped:
			key := c.Store + "/" + c.Layer + ": " + c.Message
			if c.Message != "" && !seen[key] {
				seen[key] = true
				skips = append(skips, key)
			}
		}
	}
	var notRun []Tally
	for _, t := range r.Tallies() {
		if t.NotRun > 0 {
			notRun = append(notRun, t)
		}
	}
	coverage, err := coverageHTML(r.Coverage)
	if err != nil {
		return err
	}
	return page.Execute(w, map[string]any{
		"Run": r, "Tallies": r.Tallies(), "Problems": problems, "Skips": skips, "NotRun": notRun,
		"Failed": r.Failed(), "Inconclusive": r.Inconclusive(), "Coverage": coverage,
	})
}
