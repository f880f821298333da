package spec_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

var update = flag.Bool("update", false, "rewrite docs/rules from the rule tables")

var contracts = []spec.Contract{c.Contract, r.Contract, cli.Contract}

// TestRuleTables checks every contract's rule table: unique IDs of the form
// "<store>.<operation>.<what>", an operation the contract has, a quote found
// word for word (up to spacing) in its seed file, or a silence that says on
// what; each rule's bounds (boundProblems), their sources checked as the
// rules' are; and that docs/rules holds the table as it renders.
func TestRuleTables(t *testing.T) {
	seeds := map[string]string{}
	// checkSource checks that src names a seed file and place, and quotes
	// it word for word, or is a silence that says on what, with latitude.
	checkSource := func(c spec.Contract, what string, src spec.Source, latitude string) {
		t.Helper()
		if src.Seed == "" || src.At == "" {
			t.Errorf("%s: %s names no seed file and place", c.Name, what)
			return
		}
		if src.IsSilent() {
			if src.Silence == "" || latitude == "" {
				t.Errorf("%s: %s: the seed is silent, so it says on what and what latitude a backend has", c.Name, what)
			}
			return
		}
		text, ok := seeds[src.Seed]
		if !ok {
			b, err := os.ReadFile(filepath.Join("..", "seeds", src.Seed))
			if err != nil {
				t.Fatalf("%s: %s: %v", c.Name, what, err)
			}
			text = squash(string(b))
			seeds[src.Seed] = text
		}
		if !strings.Contains(text, squash(src.Quote)) {
			t.Errorf("%s: %s quotes %q, which %s does not hold word for word", c.Name, what, src.Quote, src.Seed)
		}
	}
	for _, c := range contracts {
		seen := map[string]bool{}
		for _, r := range c.Rules {
			if seen[r.ID] {
				t.Errorf("%s: rule %s twice", c.Name, r.ID)
			}
			seen[r.ID] = true
			prefix := c.Name + "."
			if r.Op != "" {
				prefix += r.Op + "."
				if _, ok := c.Op(r.Op); !ok {
					t.Errorf("%s: rule %s governs %q, which the contract does not have", c.Name, r.ID, r.Op)
				}
			}
			if !strings.HasPrefix(r.ID, prefix) || len(r.ID) == len(prefix) || strings.ContainsAny(r.ID, "&|!,()/ #") {
				t.Errorf("%s: rule ID %q: want %q and a name, no spaces or &|!,()/#", c.Name, r.ID, prefix)
			}
			if r.Says == "" {
				t.Errorf("%s: rule %s says nothing", c.Name, r.ID)
			}
			checkSource(c, "rule "+r.ID, r.Source, r.Latitude)
			for _, msg := range boundProblems(r) {
				t.Errorf("%s: rule %s: %s", c.Name, r.ID, msg)
			}
			for _, b := range r.Bounds {
				checkSource(c, "bound "+spec.BoundID(r.ID, b.Name), b.Source, b.Latitude)
			}
		}
		var b bytes.Buffer
		if err := spec.WriteRules(&b, c); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join("..", "docs", "rules", c.Name+".md")
		if *update {
			if err := os.MkdirAll(filepath.Dir(page), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if old, err := os.ReadFile(page); err != nil || !bytes.Equal(old, b.Bytes()) {
			t.Errorf("%s is not the rule table as it renders: run go test ./spec -run TestRuleTables -update", page)
		}
	}
}

// number is a number a rule names: a run of digits, not inside a word.
var number = regexp.MustCompile(`\b[0-9]+\b`)

// boundProblems is what is wrong with a rule's bounds: a name that is not a
// plain word or repeats, a bound with no number or nothing set against it,
// a side neither answered nor said missing (or both), a missing side the
// bound does not have; and a number of two digits or more that the rule
// says but no bound holds (0 and 1 are values a rule names, an empty log's
// head, a first fence, a step of one; the kit's own slacks are one digit),
// or a constant bound whose number the rule does not say.
func boundProblems(r spec.Rule) []string {
	var out []string
	names := map[string]bool{}
	var values []string
	for _, b := range r.Bounds {
		id := spec.BoundID(r.ID, b.Name)
		if !regexp.MustCompile(`^[a-z][a-z_]*$`).MatchString(b.Name) || names[b.Name] {
			out = append(out, fmt.Sprintf("bound name %q: want a word of a-z and _, once", b.Name))
		}
		names[b.Name] = true
		if b.Value == "" || b.Of == "" {
			out = append(out, fmt.Sprintf("bound %s says no number or nothing set against it", id))
		}
		values = append(values, b.Value)
		for _, s := range spec.Sides {
			answered, missing := b.Answer(s) != "", b.Missing[s] != ""
			if answered == missing {
				out = append(out, fmt.Sprintf("bound %s: side %s wants what the seed gives there, or why it cannot exist (one of them)", id, s))
			}
		}
		for s := range b.Missing {
			if !slices.Contains(spec.Sides, s) {
				out = append(out, fmt.Sprintf("bound %s: %q is not a side", id, s))
			}
		}
		if regexp.MustCompile(`^[0-9]+$`).MatchString(b.Value) && !slices.Contains(number.FindAllString(r.Says, -1), b.Value) {
			out = append(out, fmt.Sprintf("bound %s: the rule does not say its number %s", id, b.Value))
		}
	}
	for _, n := range number.FindAllString(r.Says, -1) {
		if len(n) < 2 {
			continue
		}
		held := false
		for _, v := range values {
			held = held || slices.Contains(number.FindAllString(v, -1), n)
		}
		if !held {
			out = append(out, fmt.Sprintf("it says the number %s, which no bound of it holds", n))
		}
	}
	return out
}

// The bound checks fail where they should: a fake rule per problem.
func TestBoundProblems(t *testing.T) {
	good := spec.Bound{Name: "cap", Value: "500", Of: "the limit asked", Below: "499", At: "500", Above: "500"}
	with := func(f func(*spec.Bound)) spec.Bound { b := good; f(&b); return b }
	for _, tc := range []struct {
		name string
		rule spec.Rule
		want string
	}{
		{"clean", spec.Rule{Says: "at most 500", Bounds: []spec.Bound{good}}, ""},
		{"a number no bound holds", spec.Rule{Says: "at most 500, and 0 takes 100", Bounds: []spec.Bound{good}}, "the number 100"},
		{"no bound at all", spec.Rule{Says: "never more than 500"}, "the number 500"},
		{"the rule does not say it", spec.Rule{Says: "at most a few", Bounds: []spec.Bound{good}}, "does not say its number 500"},
		{"a side neither answered nor missing", spec.Rule{Says: "500", Bounds: []spec.Bound{with(func(b *spec.Bound) { b.Below = "" })}}, "side below"},
		{"a side both answered and missing", spec.Rule{Says: "500", Bounds: []spec.Bound{with(func(b *spec.Bound) { b.Missing = map[spec.Side]string{spec.At: "why"} })}}, "side at"},
		{"a side that is not one", spec.Rule{Says: "500", Bounds: []spec.Bound{with(func(b *spec.Bound) { b.Missing = map[spec.Side]string{"beside": "why"} })}}, `"beside" is not a side`},
		{"nothing set against it", spec.Rule{Says: "500", Bounds: []spec.Bound{with(func(b *spec.Bound) { b.Of = "" })}}, "nothing set against it"},
		{"a name twice", spec.Rule{Says: "500", Bounds: []spec.Bound{good, good}}, `bound name "cap"`},
		{"a name that is not a word", spec.Rule{Says: "500", Bounds: []spec.Bound{with(func(b *spec.Bound) { b.Name = "the cap" })}}, `bound name "the cap"`},
	} {
		got := strings.Join(boundProblems(tc.rule), "\n")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want one with %q", tc.name, got, tc.want)
		}
	}
}

// squash is s with every run of white space one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
