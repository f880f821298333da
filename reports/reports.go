// Package reports holds what a run found, as checks, and renders it for the
// people and the tools that read it.
package reports

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Outcome is a check's verdict.
type Outcome string

const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
	// Inconclusive: the check could not decide (it ran out of time); it is
	// never a pass.
	Inconclusive Outcome = "inconclusive"
	// NotRun: the backend failed before the check could give a verdict;
	// the failure is one check of its own (layer BackendLayer).
	NotRun Outcome = "not run"
)

// BackendLayer is the layer of a backend's own failure (it would not start,
// broke the protocol, died): reported once, with its cause and its stderr;
// the checks it prevented are NotRun.
const BackendLayer = "backend"

// Check is one verdict of one layer of the kit on one store: a spec, a
// linearizability check, a simulated seed.
type Check struct {
	Store    string        `json:"store"`
	Layer    string        `json:"layer"`
	Name     string        `json:"name"`
	Outcome  Outcome       `json:"outcome"`
	Message  string        `json:"message,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Recheck is the command line that checks the evidence the check saved
	// again, deterministically (storecheck check HISTORY.json): a failure
	// offers it before Reproduce, which runs real concurrency again and may
	// fail at another operation, or not at all.
	Recheck string `json:"recheck,omitempty"`
	// Reproduce is the command line that runs this check again.
	Reproduce string `json:"reproduce,omitempty"`
	// Details is what a person needs to see the failure: the minimal
	// history or the shrunk schedule, as text.
	Details string `json:"details,omitempty"`
	// Artifacts are files the check left, relative to the report folder.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Interleaving is a simulated run laid out one column per process.
	Interleaving *Interleaving `json:"interleaving,omitempty"`
}

// Interleaving is a run one column per process: where one operation's check
// and another's write crossed.
type Interleaving struct {
	Columns []string          `json:"columns"`
	Rows    []InterleavingRow `json:"rows"`
	// Notes say what the run could not explore, and why.
	Notes []string `json:"notes,omitempty"`
}

// InterleavingRow is one step of an interleaving.
type InterleavingRow struct {
	Step  int      `json:"step"`
	Cells []string `json:"cells"`
}

// Artifact is a file a check left: a saved history, a visualization, a
// schedule.
type Artifact struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Run is everything one invocation found.
type Run struct {
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"`
	Backend string `json:"backend"`
	// Seed is the first seed of the first layer; Seeds the seeds each
	// layer ran, which the header names.
	Seed  int64        `json:"seed"`
	Seeds []LayerSeeds `json:"seeds,omitempty"`
	// Shard is the share of the seeds this run took ("2/4"; "" for all).
	Shard    string        `json:"shard,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Checks   []Check       `json:"checks"`
	// Notes say what the run could not explore, and why: an event no run
	// reached, a capability the backend lacks (less is explored, nothing
	// is refused).
	Notes []string `json:"notes,omitempty"`
	// Gaps are the notes that say a rare event or a declared crash point
	// was not reached (their texts are among Notes too), kept whole so
	// that shards merge (Merge).
	Gaps []Gap `json:"gaps,omitempty"`
	// Coverage is what each layer reached of each store's coverage
	// matrix.
	Coverage []Coverage `json:"coverage,omitempty"`
	// Reach is what each simulator sweep reached of its store's rare
	// events.
	Reach []Reach `json:"reach,omitempty"`
}

// LayerSeeds are the seeds one layer ran: "7", or a range "1..50".
type LayerSeeds struct {
	Layer string `json:"layer"`
	Seeds string `json:"seeds"`
}

// SeedText names the seeds the run ran, for its header: "seed 7", "seeds
// 1..50", or each layer's when they differ ("spec seed 1, sim seeds
// 1..20"), with the shard when the run took a share of them.
func (r Run) SeedText() string {
	word := func(seeds string) string {
		if strings.Contains(seeds, "..") {
			return "seeds " + seeds
		}
		return "seed " + seeds
	}
	var text string
	switch {
	case len(r.Seeds) == 0:
		text = word(fmt.Sprint(r.Seed))
	case !slices.ContainsFunc(r.Seeds, func(l LayerSeeds) bool { return l.Seeds != r.Seeds[0].Seeds }):
		text = word(r.Seeds[0].Seeds)
	default:
		parts := make([]string, len(r.Seeds))
		for i, l := range r.Seeds {
			parts[i] = l.Layer + " " + word(l.Seeds)
		}
		text = strings.Join(parts, ", ")
	}
	if r.Shard != "" {
		text += " (shard " + r.Shard + ")"
	}
	return text
}

// seedsOf is the seeds layer ran ("" when the run does not say).
func (r Run) seedsOf(layer string) string {
	for _, l := range r.Seeds {
		if l.Layer == layer {
			return l.Seeds
		}
	}
	return ""
}

// Tally counts a store's checks in one layer.
type Tally struct {
	Store, Layer                                         string
	Passed, Failed, Skipped, Inconclusive, NotRun, Total int
	Duration                                             time.Duration
}

// Tallies counts the checks per store and layer, sorted by store then layer.
func (r Run) Tallies() []Tally {
	idx := map[[2]string]*Tally{}
	var out []*Tally
	for _, c := range r.Checks {
		k := [2]string{c.Store, c.Layer}
		t := idx[k]
		if t == nil {
			t = &Tally{Store: c.Store, Layer: c.Layer}
			idx[k] = t
			out = append(out, t)
		}
		t.Total++
		t.Duration += c.Duration
		switch c.Outcome {
		case Passed:
			t.Passed++
		case Failed:
			t.Failed++
		case Skipped:
			t.Skipped++
		case Inconclusive:
			t.Inconclusive++
		case NotRun:
			t.NotRun++
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Store != out[j].Store {
			return out[i].Store < out[j].Store
		}
		return out[i].Layer < out[j].Layer
	})
	res := make([]Tally, len(out))
	for i, t := range out {
		res[i] = *t
	}
	return res
}

// Failed reports whether any check failed.
func (r Run) Failed() bool {
	for _, c := range r.Checks {
		if c.Outcome == Failed {
			return true
		}
	}
	return false
}

// Inconclusive reports whether any check could not decide.
func (r Run) Inconclusive() bool {
	for _, c := range r.Checks {
		if c.Outcome == Inconclusive {
			return true
		}
	}
	return false
}

// WriteText writes the short summary a person reads on a terminal: a line
// per store and layer, every failure by name, skip reasons once each, fitted
// to the console's Width.
func WriteText(w io.Writer, r Run) { writeText(w, r, Width()) }

// writeText is WriteText width runes wide.
func writeText(w io.Writer, r Run, width int) {
	fmt.Fprintf(w, "storecheck: backend %s, %s", r.Backend, r.SeedText())
	if r.Duration > 0 {
		fmt.Fprintf(w, ", took %v", r.Duration.Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	for _, t := range r.Tallies() {
		fmt.Fprintf(w, "  %-11s %-16s %4d passed %4d failed %4d skipped", t.Store, t.Layer, t.Passed, t.Failed, t.Skipped)
		if t.Inconclusive > 0 {
			fmt.Fprintf(w, " %4d inconclusive", t.Inconclusive)
		}
		if t.NotRun > 0 {
			fmt.Fprintf(w, " %4d not run", t.NotRun)
		}
		if t.Duration > 0 {
			fmt.Fprintf(w, "  %v", t.Duration.Round(time.Millisecond))
		}
		fmt.Fprintln(w)
	}
	seen := map[string]bool{}
	for _, c := range r.Checks {
		switch {
		case c.Outcome == Failed || c.Outcome == Inconclusive:
			WriteCheck(w, c, width)
		case c.Outcome == Skipped && c.Message != "" && !seen[c.Store+c.Message]:
			seen[c.Store+c.Message] = true
			fmt.Fprintf(w, "skip %s/%s: %s\n", c.Store, c.Layer, c.Message)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "not explored: %s\n", n)
	}
	for _, t := range r.Tallies() {
		if t.NotRun > 0 {
			fmt.Fprintf(w, "not run %s/%s: %d checks: the backend failed before they could give a verdict\n", t.Store, t.Layer, t.NotRun)
		}
	}
	WriteCoverageSummary(w, r.Coverage)
}

// WriteCheck writes a failed or inconclusive check as a person reads it on
// a terminal width columns wide: what failed and why, the interleaving of a
// simulated run one column per process (fitted to the width), the command
// that checks its saved history again and the one that runs it again.
func WriteCheck(w io.Writer, c Check, width int) {
	fmt.Fprintf(w, "%s %s/%s: %s\n%s\n", map[Outcome]string{Failed: "FAIL", Inconclusive: "INCONCLUSIVE"}[c.Outcome], c.Store, c.Layer, c.Name, indent(c.Message, "    "))
	if c.Interleaving != nil && len(c.Interleaving.Rows) > 0 {
		fmt.Fprintf(w, "    the interleaving, one column per process:\n%s\n", indent(c.Interleaving.Fitted(width-4, consoleRows), "    "))
	}
	if c.Recheck != "" {
		fmt.Fprintf(w, "    %s\n", recheckLine(c))
	}
	if c.Reproduce != "" {
		fmt.Fprintf(w, "    reproduce: %s\n", c.Reproduce)
	}
}

// RecheckLabel names a check's Recheck line in every form of the report:
// what it does, and why it comes before the reproduce line.
const RecheckLabel = "re-check the saved history (deterministic)"

func recheckLine(c Check) string {
	if c.Recheck == "" {
		return ""
	}
	return RecheckLabel + ": " + c.Recheck
}

// indent is text with every line indented by prefix.
func indent(text, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n"+prefix)
}
