package spec

import (
	"fmt"
	"io"
	"strings"
)

// Rule is one rule a contract states, with where it comes from. The seed is
// the authority: a rule quotes the seed line it comes from, or says the seed
// is silent and then what a backend may choose (its latitude). Specs, models
// and docs all name rules by ID.
type Rule struct {
	// ID is stable: "<store>.<operation>.<what>" (dots only: a Ginkgo label
	// carries it).
	ID string
	// Op is the operation the rule governs, "" for the store as a whole.
	Op string
	// Says is what the kit checks.
	Says string
	// Source is the seed line, or the silence, the rule comes from.
	Source Source
	// Latitude is what a backend may choose where the seed leaves it open,
	// and how the kit then judges: every defensible answer is accepted, or
	// the backend declares its choice. "" when the seed fixes the behaviour.
	Latitude string
	// Bounds are the numbers the rule's clauses turn on, each checked at
	// it, one below and one above (see Bound); every number of two digits
	// or more that Says names is one of them.
	Bounds []Bound
}

// Source is where a rule comes from: a quote of a seed, or its silence.
type Source struct {
	// Seed is the seed's file name (seeds/).
	Seed string
	// At is the function (or table, or comment) the quote is in.
	At string
	// Quote is the seed's text, verbatim up to spacing; "" when the seed is
	// silent.
	Quote string
	// Silence, for a silent seed, says what the seed leans on without
	// showing it (a helper, a type, a protocol the Rust types make moot).
	Silence string
}

// Quoted is a source that quotes seed file at the function at.
func Quoted(seed, at, quote string) Source { return Source{Seed: seed, At: at, Quote: quote} }

// Silent is a source where the seed is silent: silence says on what.
func Silent(seed, at, silence string) Source { return Source{Seed: seed, At: at, Silence: silence} }

// IsSilent reports whether the seed is silent on the rule.
func (s Source) IsSilent() bool { return s.Quote == "" }

// String is the source in one line, for reports.
func (s Source) String() string {
	if s.IsSilent() {
		return fmt.Sprintf("the seed is silent (%s, %s: %s)", s.Seed, s.At, s.Silence)
	}
	return fmt.Sprintf("%s, %s: %q", s.Seed, s.At, oneLine(s.Quote))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Rule finds a rule of the contract by ID.
func (c Contract) Rule(id string) (Rule, bool) {
	for _, r := range c.Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Explain is a rule in words for a report: what it says, its source and its
// latitude; for a bound's ID, the bound and its rule. An unknown ID is given
// back as it is.
func (c Contract) Explain(id string) string {
	if b, ok := c.Bound(id); ok {
		s := fmt.Sprintf("bound %s: %s. Source: %s.", b.ID, b.Bound, b.Source)
		if b.Latitude != "" {
			s += " Latitude: " + b.Latitude
		}
		return s + " Rule " + c.Explain(b.Rule.ID)
	}
	r, ok := c.Rule(id)
	if !ok {
		return id
	}
	s := fmt.Sprintf("%s: %s Source: %s.", r.ID, r.Says, r.Source)
	if r.Latitude != "" {
		s += " Latitude: " + r.Latitude
	}
	return s
}

// WriteRules writes the contract's rule table as a Markdown page: one
// section per operation, each rule with its source and latitude.
func WriteRules(w io.Writer, c Contract) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# The %s store's rules\n\n", c.Name)
	b.WriteString("Every rule the kit checks of this store, with the seed line it comes from or,\n")
	b.WriteString("where the seed is silent, what a backend may choose. Generated from\n")
	fmt.Fprintf(&b, "`spec/%s/rules.go` (do not edit: `go test ./spec -update` writes it).\n", c.Name)
	b.WriteString("A spec of `spec/suite` names each rule by its ID; a model branch names the rule\nthat decides an answer, and reports quote it.\n")
	var silent int
	for _, r := range c.Rules {
		if r.Source.IsSilent() {
			silent++
		}
	}
	fmt.Fprintf(&b, "\n%d rules: %d quote the seed, %d are where the seed is silent.\n", len(c.Rules), len(c.Rules)-silent, silent)
	writeBoundTable(&b, c)
	op := "\x00"
	for _, r := range c.Rules {
		if r.Op != op {
			op = r.Op
			title := "`" + op + "`"
			if op == "" {
				title = "The whole store"
			}
			fmt.Fprintf(&b, "\n## %s\n", title)
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n", r.ID, r.Says)
		if r.Source.IsSilent() {
			fmt.Fprintf(&b, "- **Source:** the seed is silent. `%s`, %s: %s\n", r.Source.Seed, r.Source.At, r.Source.Silence)
		} else {
			fmt.Fprintf(&b, "- **Source:** `%s`, %s:\n\n", r.Source.Seed, r.Source.At)
			for _, line := range strings.Split(strings.TrimSpace(r.Source.Quote), "\n") {
				fmt.Fprintf(&b, "  > %s\n", strings.TrimSpace(line))
			}
		}
		if r.Latitude != "" {
			fmt.Fprintf(&b, "- **Latitude:** %s\n", r.Latitude)
		}
		for _, bd := range r.Bounds {
			writeBound(&b, BoundID(r.ID, bd.Name), bd)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBoundTable writes the inventory of the contract's bounds: one row
// a bound, with what each side gives.
func writeBoundTable(b *strings.Builder, c Contract) {
	bounds := c.Bounds()
	if len(bounds) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%d bounds: the numbers the rules turn on, each checked by a spec one below it,\n", len(bounds))
	b.WriteString("at it and one above it (a side that cannot exist says why), and each broken by a\n")
	b.WriteString("deliberate bug of `internal/bugs` that its specs catch.\n\n")
	b.WriteString("| bound | number | against | one below | at | one above |\n|---|---|---|---|---|---|\n")
	for _, bd := range bounds {
		cells := []string{"`" + bd.ID + "`", bd.Value, bd.Of}
		for _, s := range Sides {
			cell := bd.Answer(s)
			if cell == "" {
				cell = "(none: " + bd.Missing[s] + ")"
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
}

// writeBound writes one bound under its rule.
func writeBound(b *strings.Builder, id string, bd Bound) {
	fmt.Fprintf(b, "- **Bound `%s`:** %s against %s.\n", id, bd.Value, bd.Of)
	for _, s := range Sides {
		if a := bd.Answer(s); a != "" {
			fmt.Fprintf(b, "  - %s: %s\n", sideWords[s], a)
		} else {
			fmt.Fprintf(b, "  - %s: none, %s\n", sideWords[s], bd.Missing[s])
		}
	}
	src := bd.Source
	if src.IsSilent() {
		fmt.Fprintf(b, "  - source: the seed is silent. `%s`, %s: %s\n", src.Seed, src.At, src.Silence)
	} else {
		fmt.Fprintf(b, "  - source: `%s`, %s:\n\n", src.Seed, src.At)
		for _, line := range strings.Split(strings.TrimSpace(src.Quote), "\n") {
			fmt.Fprintf(b, "    > %s\n", strings.TrimSpace(line))
		}
	}
	if bd.Latitude != "" {
		fmt.Fprintf(b, "  - latitude: %s\n", bd.Latitude)
	}
}
