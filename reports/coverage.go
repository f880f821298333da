package reports

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"
)

// Coverage is what one layer of a run reached of one store's coverage
// matrix: every operation crossed with every answer the contract allows it
// (spec.Contract.Cells), and how often the layer saw each.
type Coverage struct {
	Store string `json:"store"`
	Layer string `json:"layer"`
	// Over says what the counts were taken over ("seeds 1..100").
	Over  string         `json:"over,omitempty"`
	Cells []CoverageCell `json:"cells"`
	// Outside counts the answers no cell names, by "<operation>:<answer>"
	// (a backend that answered outside the contract).
	Outside map[string]int `json:"outside,omitempty"`
}

// CoverageCell is one cell of a store's matrix, as one layer reached it.
type CoverageCell struct {
	Op     string `json:"op"`
	Answer string `json:"answer"`
	// Rules are the rules that make the answer, for an error kind.
	Rules []string `json:"rules,omitempty"`
	Count int      `json:"count"`
	// Unreachable says why the layer's workload is not meant to reach the
	// cell ("" when it is: then a count of 0 is a gap).
	Unreachable string `json:"unreachable,omitempty"`
}

// Key names the cell: "<operation>:<answer>".
func (c CoverageCell) Key() string { return c.Op + ":" + c.Answer }

// Count adds n answers to the cell named key ("<operation>:<answer>"), or
// to Outside when no cell has that name.
func (c *Coverage) Count(key string, n int) {
	if n == 0 {
		return
	}
	for i := range c.Cells {
		if c.Cells[i].Key() == key {
			c.Cells[i].Count += n
			return
		}
	}
	if c.Outside == nil {
		c.Outside = map[string]int{}
	}
	c.Outside[key] += n
}

// Reached counts the cells the layer saw at least once.
func (c Coverage) Reached() int {
	n := 0
	for _, cell := range c.Cells {
		if cell.Count > 0 {
			n++
		}
	}
	return n
}

// Missed are the cells the layer never saw and is meant to reach.
func (c Coverage) Missed() []CoverageCell {
	var out []CoverageCell
	for _, cell := range c.Cells {
		if cell.Count == 0 && cell.Unreachable == "" {
			out = append(out, cell)
		}
	}
	return out
}

// Unreachable are the cells listed as out of the layer's reach (whether
// it reached them or not).
func (c Coverage) Unreachable() []CoverageCell {
	var out []CoverageCell
	for _, cell := range c.Cells {
		if cell.Unreachable != "" {
			out = append(out, cell)
		}
	}
	return out
}

// Summary is the coverage in one line: how many cells were reached, and
// the ones the layer is meant to reach and never did.
func (c Coverage) Summary() string {
	s := fmt.Sprintf("%s %s coverage: %d of %d cells reached", c.Store, c.Layer, c.Reached(), len(c.Cells))
	if c.Over != "" {
		s += " over " + c.Over
	}
	if n := len(c.Unreachable()); n > 0 {
		s += fmt.Sprintf(" (%d listed unreachable)", n)
	}
	if missed := c.Missed(); len(missed) > 0 {
		keys := make([]string, len(missed))
		for i, m := range missed {
			keys[i] = m.Key()
		}
		s += "; never reached: " + strings.Join(keys, ", ")
	} else {
		s += "; every reachable cell reached"
	}
	if len(c.Outside) > 0 {
		s += "; OUTSIDE THE CONTRACT: " + strings.Join(slices.Sorted(maps.Keys(c.Outside)), ", ")
	}
	return s
}

// WriteCoverageSummary writes each coverage's Summary, one line each.
func WriteCoverageSummary(w io.Writer, cs []Coverage) {
	for _, c := range cs {
		fmt.Fprintln(w, c.Summary())
	}
}

// matrix is one store's coverage, every layer side by side.
type matrix struct {
	Store  string
	Layers []string
	Over   []string
	Rows   []matrixRow
	// Notes are the reasons of the cells listed unreachable, by cell.
	Notes []matrixNote
	// Outside are the answers outside the contract, by layer.
	Outside []string
}

type matrixRow struct {
	Op, Answer string
	Rules      []string
	Counts     []int
	// Unreachable, by layer: the cell is listed out of that layer's reach.
	Unreachable []bool
	// First is the row's operation's first answer.
	First bool
}

// matrixNote is why cells are listed unreachable by layers.
type matrixNote struct {
	Cells  []string
	Layers string
	Reason string
}

// Cell names the note's cells: one, or "io of every operation".
func (n matrixNote) Cell() string { return strings.Join(n.Cells, ", ") }

// matrices lays the coverages out one store at a time, in the order they
// first appear, each store's layers in the order they appear.
func matrices(cs []Coverage) []matrix {
	type layerReason struct{ layer, reason string }
	var out []matrix
	notes := map[string][]layerReason{} // by store and cell
	for _, c := range cs {
		i := slices.IndexFunc(out, func(m matrix) bool { return m.Store == c.Store })
		if i < 0 {
			out = append(out, matrix{Store: c.Store})
			i = len(out) - 1
		}
		m := &out[i]
		m.Layers = append(m.Layers, c.Layer)
		m.Over = append(m.Over, c.Over)
		for _, cell := range c.Cells {
			j := slices.IndexFunc(m.Rows, func(r matrixRow) bool { return r.Op == cell.Op && r.Answer == cell.Answer })
			if j < 0 {
				m.Rows = append(m.Rows, matrixRow{Op: cell.Op, Answer: cell.Answer, Rules: cell.Rules})
				j = len(m.Rows) - 1
			}
			r := &m.Rows[j]
			for len(r.Counts) < len(m.Layers)-1 {
				r.Counts, r.Unreachable = append(r.Counts, 0), append(r.Unreachable, false)
			}
			r.Counts, r.Unreachable = append(r.Counts, cell.Count), append(r.Unreachable, cell.Unreachable != "")
			if cell.Unreachable != "" {
				notes[c.Store+" "+cell.Key()] = append(notes[c.Store+" "+cell.Key()], layerReason{c.Layer, cell.Unreachable})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(c.Outside)) {
			m.Outside = append(m.Outside, fmt.Sprintf("%s: %s answered %d times", c.Layer, k, c.Outside[k]))
		}
	}
	for i := range out {
		m := &out[i]
		// A note per reason and layers, with every cell it is for.
		allIO := true
		var io []string
		for _, r := range m.Rows {
			if r.Answer != "io" {
				continue
			}
			io = append(io, r.Op+":io")
		}
		for _, r := range m.Rows {
			key := r.Op + ":" + r.Answer
			var layers []string
			reason := ""
			for _, lr := range notes[m.Store+" "+key] {
				layers, reason = append(layers, lr.layer), lr.reason
			}
			if reason == "" {
				if r.Answer == "io" {
					allIO = false
				}
				continue
			}
			l := strings.Join(layers, ", ")
			k := slices.IndexFunc(m.Notes, func(n matrixNote) bool { return n.Reason == reason && n.Layers == l })
			if k < 0 {
				m.Notes = append(m.Notes, matrixNote{Layers: l, Reason: reason})
				k = len(m.Notes) - 1
			}
			m.Notes[k].Cells = append(m.Notes[k].Cells, key)
		}
		for k := range m.Notes {
			if allIO && len(io) > 1 && slices.Equal(m.Notes[k].Cells, io) {
				m.Notes[k].Cells = []string{"io of every operation"}
			}
		}
		for j := range m.Rows {
			r := &m.Rows[j]
			for len(r.Counts) < len(m.Layers) {
				r.Counts, r.Unreachable = append(r.Counts, 0), append(r.Unreachable, false)
			}
			r.First = j == 0 || m.Rows[j-1].Op != r.Op
		}
	}
	return out
}

// WriteCoverage writes every store's coverage matrix as text: a row per
// cell, a column per layer, each the number of answers the layer saw ("-"
// for none; "·" marks a cell listed out of the layer's reach), then why
// each cell listed unreachable is.
func WriteCoverage(w io.Writer, cs []Coverage) {
	for _, m := range matrices(cs) {
		fmt.Fprintf(w, "coverage of the %s store: %d cells\n", m.Store, len(m.Rows))
		for i, l := range m.Layers {
			if m.Over[i] != "" {
				fmt.Fprintf(w, "  %s: over %s\n", l, m.Over[i])
			}
		}
		fmt.Fprintf(w, "  %-46s %-32s", "operation", "answer")
		for _, l := range m.Layers {
			fmt.Fprintf(w, " %15s", l)
		}
		fmt.Fprintln(w)
		for _, r := range m.Rows {
			op := ""
			if r.First {
				op = r.Op
			}
			fmt.Fprintf(w, "  %-46s %-32s", op, r.Answer)
			for i, n := range r.Counts {
				text := "-"
				if n > 0 {
					text = fmt.Sprint(n)
				}
				if r.Unreachable[i] {
					text = "·" + text
				}
				fmt.Fprintf(w, " %15s", text)
			}
			fmt.Fprintln(w)
		}
		for _, n := range m.Notes {
			fmt.Fprintf(w, "  · %s (%s): %s\n", n.Cell(), n.Layers, n.Reason)
		}
		for _, o := range m.Outside {
			fmt.Fprintf(w, "  OUTSIDE THE CONTRACT: %s\n", o)
		}
	}
}

// coveragePage is the matrix as HTML: a table per store, a row per cell, a
// column per layer, each count coloured by how often the layer saw it (red:
// never, though it is meant to; grey: listed out of its reach).
var coveragePage = template.Must(template.New("coverage").Funcs(template.FuncMap{
	"heat": heat,
	"join": strings.Join,
}).Parse(`{{if .}}<h2>Coverage</h2>
<p>Every operation of each store crossed with every answer its contract allows, and how many times each layer saw it. Red: never seen, though the layer is meant to reach it; grey: listed out of the layer's reach, with the reason below the table.</p>
{{range .}}{{$m := .}}<h3>The {{.Store}} store</h3>
<table class="coverage">
<tr><th>operation</th><th>answer</th>{{range $i, $l := .Layers}}<th>{{$l}}{{with index $m.Over $i}}<br><small>{{.}}</small>{{end}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{if .First}}{{.Op}}{{end}}</td><td{{with .Rules}} title="{{join . ", "}}"{{end}}>{{.Answer}}</td>{{$row := .}}{{range $i, $n := .Counts}}<td class="n" style="background: {{heat $n (index $row.Unreachable $i)}}">{{if $n}}{{$n}}{{else}}-{{end}}</td>{{end}}</tr>
{{end}}</table>
{{with .Notes}}<ul>{{range .}}<li><code>{{.Cell}}</code> ({{.Layers}}): {{.Reason}}</li>{{end}}</ul>{{end}}
{{range .Outside}}<p class="failed">Outside the contract: {{.}}</p>{{end}}
{{end}}{{end}}`))

// heat is the background of a count: red for a gap, grey for a cell out
// of reach, and greens that deepen with the count.
func heat(n int, unreachable bool) template.CSS {
	switch {
	case n == 0 && unreachable:
		return "#eeeeee"
	case n == 0:
		return "#f8b4b4"
	case n < 3:
		return "#fff3b0"
	case n < 10:
		return "#dcf5d0"
	case n < 100:
		return "#a8e6a1"
	case n < 1000:
		return "#6fcf6a"
	}
	return "#3fae3f"
}

// coverageHTML is the matrices of cs as HTML, for the report page.
func coverageHTML(cs []Coverage) (template.HTML, error) {
	var b strings.Builder
	if err := coveragePage.Execute(&b, matrices(cs)); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

// Reach is what a simulator sweep reached of one store's rare events: the
// ones its default sweep must reach, each with how often it was.
type Reach struct {
	Store string `json:"store"`
	Layer string `json:"layer"`
	// Over says what the counts were taken over ("seeds 1..100").
	Over   string       `json:"over,omitempty"`
	Events []EventCount `json:"events"`
	// Rechecked is how many seeds the sweep ran twice to check that one
	// seed is one run; Diverged how many of them parted.
	Rechecked int `json:"rechecked,omitempty"`
	Diverged  int `json:"diverged,omitempty"`
	// Guided is what a guided sweep spent its runs on, nil for a blind one.
	Guided *Guided `json:"guided,omitempty"`
}

// Guided is a guided sweep's account: its blind runs, its children of the
// runs that reached something new (Parents), and how many distinct
// coverage milestones it had reached after each generation of runs.
type Guided struct {
	Blind    int           `json:"blind"`
	Children int           `json:"children"`
	Parents  int           `json:"parents"`
	Growth   []GrowthPoint `json:"growth"`
	// Corpus is what the sweep reached, for the next sweep to start from
	// (--corpus); a merge of shards holds the union of theirs.
	Corpus *Corpus `json:"corpus,omitempty"`
	// From names the corpus the sweep started from ("the kit's corpus",
	// a report folder), empty when it started from nothing.
	From string `json:"from,omitempty"`
}

// Corpus is what a guided sweep reached: the milestones (an event's count
// reaching a power of two, "event x4"), sorted, and the runs that reached
// one first, in the order they did, each with the step of its first new
// milestone and of its last. A sweep started from a corpus counts its
// milestones as reached already and gives its parents children from its
// first generation on, so a sweep continues where the last one, or every
// shard of it, stopped (AFL keeps its queue across runs the same way).
type Corpus struct {
	Milestones []string       `json:"milestones"`
	Parents    []CorpusParent `json:"parents"`
	// Hits is how many runs reached each milestone: the fewer, the rarer
	// the state, and a parent that was first to reach a rare one has
	// children before the others (FairFuzz, ASE 2018, steers to rare
	// branches the same way).
	Hits map[string]int `json:"hits,omitempty"`
	// Made says the shape of the runs it was made with ("200 steps, 8
	// clients, 2 processes"): a parent's seed names another run in
	// another shape.
	Made string `json:"made,omitempty"`
	// Favored is how many of the first parents are the favored ones: in
	// order, the fewest whose runs together reach every milestone any of
	// them reaches, the rarest first (AFL's favored entries). A guided
	// sweep replays each whole, with a tail, before anything else.
	Favored int `json:"favored,omitempty"`
}

// CorpusParent is a run a guided sweep branches from: its seed and
// branches name it; First and Last are the steps of its first and last new
// milestone, no later than Issued, the step its clients stopped issuing
// at; Children is how many children sweeps gave it.
type CorpusParent struct {
	Seed     int64    `json:"seed"`
	Branches []Branch `json:"branches,omitempty"`
	First    int      `json:"first"`
	Last     int      `json:"last"`
	Issued   int      `json:"issued"`
	Children int      `json:"children"`
	// New are the milestones it was the first run to reach.
	New []string `json:"new,omitempty"`
	// Pairs are the steps of the interleavings among them (sim's
	// "interleave: " milestones), where its children swap who moves.
	Pairs []int `json:"pairs,omitempty"`
	// Swaps is how many of its children swapped who moves at a pair (of
	// Children): the first of each pair swaps the two, the others draw
	// the scheduler afresh there.
	Swaps int `json:"swaps,omitempty"`
}

// Branch is where a guided sweep's child leaves its parent's run: from
// step At on, its choices are drawn from Seed, and it issues Tail more
// operations than its parent did. A branch of the schedule alone changes
// who moves and nothing else: Flip, the operation that would move at At
// waits until another one ends (the two of an interleaving swap); Sched,
// the scheduler's priorities and change points are drawn from Seed.
type Branch struct {
	At    int   `json:"at"`
	Seed  int64 `json:"seed"`
	Tail  int   `json:"tail,omitempty"`
	Flip  bool  `json:"flip,omitempty"`
	Sched bool  `json:"sched,omitempty"`
}

// Name names a parent as its run's check does.
func (p CorpusParent) Name() string { return RunName(p.Seed, p.Branches) }

// RunName names a simulated run in reports: its seed, and where it
// branched ("seed 3 > 12345@40", "+50" when the branch lengthened the run).
func RunName(seed int64, branches []Branch) string {
	name := fmt.Sprintf("seed %d", seed)
	for _, b := range branches {
		switch {
		case b.Flip:
			name += fmt.Sprintf(" > flip@%d", b.At)
		case b.Sched:
			name += fmt.Sprintf(" > sched %d@%d", b.Seed, b.At)
		default:
			name += fmt.Sprintf(" > %d@%d", b.Seed, b.At)
		}
		if b.Tail > 0 {
			name += fmt.Sprintf("+%d", b.Tail)
		}
	}
	return name
}

// union is the corpus of two sweeps: every milestone of either, once, and
// a's parents then b's not in a.
func (a *Corpus) union(b *Corpus) *Corpus {
	if a == nil || b == nil {
		if a == nil {
			return b.clone()
		}
		return a.clone()
	}
	out := a.clone()
	for k, n := range b.Hits {
		if out.Hits == nil {
			out.Hits = map[string]int{}
		}
		out.Hits[k] += n
	}
	if out.Made != b.Made {
		out.Made = ""
	}
	out.Milestones = append(out.Milestones, b.Milestones...)
	slices.Sort(out.Milestones)
	out.Milestones = slices.Compact(out.Milestones)
	have := map[string]bool{}
	for _, p := range out.Parents {
		have[p.Name()] = true
	}
	for _, p := range b.Parents {
		if !have[p.Name()] {
			have[p.Name()] = true
			out.Parents = append(out.Parents, p)
		}
	}
	return out
}

func (a *Corpus) clone() *Corpus {
	if a == nil {
		return nil
	}
	out := &Corpus{Milestones: slices.Clone(a.Milestones), Hits: maps.Clone(a.Hits), Made: a.Made, Favored: a.Favored}
	for _, p := range a.Parents {
		p.Branches = slices.Clone(p.Branches)
		p.New = slices.Clone(p.New)
		p.Pairs = slices.Clone(p.Pairs)
		out.Parents = append(out.Parents, p)
	}
	return out
}

// GrowthPoint: after Runs runs, Milestones distinct milestones reached.
type GrowthPoint struct {
	Runs       int `json:"runs"`
	Milestones int `json:"milestones"`
}

func (g Guided) String() string {
	var pts []string
	for _, p := range g.Growth {
		pts = append(pts, fmt.Sprintf("%d:%d", p.Runs, p.Milestones))
	}
	s := fmt.Sprintf("guided: %d runs, %d blind and %d children of %d parents; milestones reached by run: %s",
		g.Blind+g.Children, g.Blind, g.Children, g.Parents, strings.Join(pts, " "))
	if g.From != "" {
		s += "; started from " + g.From
	}
	if g.Corpus != nil {
		s += fmt.Sprintf("; corpus: %d milestones, %d parents", len(g.Corpus.Milestones), len(g.Corpus.Parents))
	}
	return s
}

// GrowthSVG plots the growth: milestones reached against runs.
func (g Guided) GrowthSVG() template.HTML {
	const w, h = 320.0, 120.0
	if len(g.Growth) == 0 {
		return ""
	}
	last := g.Growth[len(g.Growth)-1]
	top := 1
	for _, p := range g.Growth {
		top = max(top, p.Milestones)
	}
	var pts []string
	for _, p := range append([]GrowthPoint{{}}, g.Growth...) {
		x := w * float64(p.Runs) / float64(max(last.Runs, 1))
		y := h - h*float64(p.Milestones)/float64(top)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	return template.HTML(fmt.Sprintf(`<svg class="growth" width="%.0f" height="%.0f" viewBox="-4 -4 %.0f %.0f" role="img" aria-label="milestones reached against runs">`+
		`<polyline fill="none" stroke="currentColor" points="%s"/><text x="0" y="%.0f" font-size="10">0</text>`+
		`<text x="%.0f" y="%.0f" font-size="10" text-anchor="end">%d runs</text><text x="0" y="8" font-size="10">%d milestones</text></svg>`,
		w+8, h+16, w+8, h+16, strings.Join(pts, " "), h+10, w, h+10, last.Runs, top))
}

// EventCount is how often a sweep reached one event.
type EventCount struct {
	Event string `json:"event"`
	Count int    `json:"count"`
}

// Missing are the events the sweep never reached, sorted.
func (r Reach) Missing() []string {
	var out []string
	for _, e := range r.Events {
		if e.Count == 0 {
			out = append(out, e.Event)
		}
	}
	slices.Sort(out)
	return out
}

// Summary is the reach in a line: "7 of 9 rare events reached (not: a; b)".
func (r Reach) Summary() string {
	missing := r.Missing()
	s := fmt.Sprintf("%d of %d rare events reached", len(r.Events)-len(missing), len(r.Events))
	if len(missing) > 0 {
		s += " (not: " + strings.Join(missing, "; ") + ")"
	}
	if r.Rechecked > 0 {
		s += fmt.Sprintf("; %d seeds run twice, %d parted", r.Rechecked, r.Diverged)
	}
	if r.Guided != nil {
		s += "; " + r.Guided.String()
	}
	return s
}
