package spec_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	cont "github.com/storecheck/storecheck/spec/continuity"
	rt "github.com/storecheck/storecheck/spec/runtime"
)

var update = flag.Bool("update", false, "rewrite docs/rules from the rule tables")

var contracts = []spec.Contract{cont.Contract, rt.Contract, cli.Contract}

// TestRuleTables checks every contract's rule table: unique IDs of the form
// "<store>.<operation>.<what>", an operation the contract has, a quote found
// word for word (up to spacing) in its seed file, or a silence that says on
// what; and that docs/rules holds the table as it renders.
func TestRuleTables(t *testing.T) {
	seeds := map[string]string{}
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
			if !strings.HasPrefix(r.ID, prefix) || len(r.ID) == len(prefix) || strings.ContainsAny(r.ID, "&|!,()/ ") {
				t.Errorf("%s: rule ID %q: want %q and a name, no spaces or &|!,()/", c.Name, r.ID, prefix)
			}
			if r.Says == "" {
				t.Errorf("%s: rule %s says nothing", c.Name, r.ID)
			}
			src := r.Source
			if src.Seed == "" || src.At == "" {
				t.Errorf("%s: rule %s names no seed file and place", c.Name, r.ID)
				continue
			}
			if src.IsSilent() {
				if src.Silence == "" || r.Latitude == "" {
					t.Errorf("%s: rule %s: the seed is silent, so it says on what and what latitude a backend has", c.Name, r.ID)
				}
				continue
			}
			text, ok := seeds[src.Seed]
			if !ok {
				b, err := os.ReadFile(filepath.Join("..", "seeds", src.Seed))
				if err != nil {
					t.Fatalf("%s: rule %s: %v", c.Name, r.ID, err)
				}
				text = squash(string(b))
				seeds[src.Seed] = text
			}
			if !strings.Contains(text, squash(src.Quote)) {
				t.Errorf("%s: rule %s quotes %q, which %s does not hold word for word", c.Name, r.ID, src.Quote, src.Seed)
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

// squash is s with every run of white space one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
