package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// complete are the stores whose every spec names its rules.
var complete = []spec.Contract{c.Contract, r.Contract, cli.Contract}

// specLabels is one spec as the coverage tests see it: its store (its
// first container), its full name and its labels.
type specLabels struct {
	store, name string
	labels      []string
}

var (
	dryRunOnce  sync.Once
	dryRunSpecs []specLabels
)

// dryRun walks the suite without running it (once for every test here)
// and gives its specs.
func dryRun(t *testing.T) []specLabels {
	dryRunOnce.Do(func() {
		defer freshSuite()()
		var reports []types.SpecReport
		RegisterFailHandler(Fail)
		Define(Harness{
			Name:       "dry run",
			Continuity: func(context.Context, spec.OpenOptions) (c.Store, error) { return nil, nil },
			Runtime:    func(context.Context, spec.OpenOptions) (r.Store, error) { return nil, nil },
			Client:     func(context.Context, spec.OpenOptions) (cli.Store, error) { return nil, nil },
		})
		ReportAfterSuite("rules", func(r Report) { reports = r.SpecReports })
		sc, rc := GinkgoConfiguration()
		sc.DryRun = true
		rc.Succinct = true
		RunSpecs(t, "rule coverage", sc, rc)
		for _, s := range reports {
			if s.LeafNodeType != types.NodeTypeIt || len(s.ContainerHierarchyTexts) == 0 {
				continue
			}
			dryRunSpecs = append(dryRunSpecs, specLabels{store: s.ContainerHierarchyTexts[0], name: s.FullText(), labels: s.Labels()})
		}
	})
	if len(dryRunSpecs) == 0 {
		t.Fatal("the dry run found no spec")
	}
	return dryRunSpecs
}

// TestEverySpecNamesARuleAndEveryRuleHasASpec walks the suite without
// running it: a spec that names no rule of its store's table, a rule ID no
// table has, or a rule no spec checks fails.
func TestEverySpecNamesARuleAndEveryRuleHasASpec(t *testing.T) {
	specs := dryRun(t)
	for _, c := range complete {
		covered := map[string]bool{}
		for _, s := range specs {
			if s.store != c.Name {
				continue
			}
			ids := rulesOf(s.labels)
			if len(ids) == 0 {
				t.Errorf("%s: the spec %q names no rule", c.Name, s.name)
			}
			for _, id := range ids {
				if _, ok := c.Rule(id); !ok {
					t.Errorf("%s: the spec %q names %q, which the rule table does not have", c.Name, s.name, id)
				}
				covered[id] = true
			}
		}
		for _, r := range c.Rules {
			if !covered[r.ID] {
				t.Errorf("%s: no spec checks the rule %s (%s)", c.Name, r.ID, r.Says)
			}
		}
		if len(c.Rules) == 0 {
			t.Errorf("%s: the rule table is empty", c.Name)
		}
	}
}

// TestEveryBoundIsCheckedAtEverySide is the clause-level twin of the test
// above: every bound of every rule table has a spec one below it, one at
// it and one above it, or says why that side cannot exist.
func TestEveryBoundIsCheckedAtEverySide(t *testing.T) {
	for _, gap := range boundGaps(complete, dryRun(t)) {
		t.Error(gap)
	}
	n := 0
	for _, c := range complete {
		n += len(c.Bounds())
	}
	if n == 0 {
		t.Error("no rule table states a bound")
	}
}

// boundGaps is what specs leave of the contracts' bounds unchecked: a side
// no spec checks that the bound does not say cannot exist; a side a spec
// claims of a bound that says it cannot exist; a bound label that names no
// bound of the spec's store, or no side.
func boundGaps(contracts []spec.Contract, specs []specLabels) []string {
	var out []string
	checked := map[string][]string{}
	for _, c := range contracts {
		for _, s := range specs {
			if s.store != c.Name {
				continue
			}
			for _, bs := range boundsOf(s.labels) {
				b, ok := c.Bound(bs.id)
				switch {
				case !ok:
					out = append(out, fmt.Sprintf("%s: the spec %q checks %q, which no rule of the table bounds", c.Name, s.name, bs.id))
				case !slices.Contains(spec.Sides, bs.side):
					out = append(out, fmt.Sprintf("%s: the spec %q checks bound %s on side %q, which is not one of %v", c.Name, s.name, bs.id, bs.side, spec.Sides))
				case b.Missing[bs.side] != "":
					out = append(out, fmt.Sprintf("%s: the spec %q checks bound %s %s, which the bound says cannot exist (%s)", c.Name, s.name, bs.id, bs.side, b.Missing[bs.side]))
				default:
					key := bs.id + ":" + string(bs.side)
					checked[key] = append(checked[key], s.name)
				}
			}
		}
		for _, b := range c.Bounds() {
			for _, side := range spec.Sides {
				if b.Missing[side] == "" && len(checked[b.ID+":"+string(side)]) == 0 {
					out = append(out, fmt.Sprintf("%s: no spec checks bound %s %s it (%s: %s)", c.Name, b.ID, side, b.Of, b.Answer(side)))
				}
			}
		}
	}
	return out
}

// The coverage check fails where it should, over a fake inventory: one
// bound with three sides, one whose below side cannot exist.
func TestBoundGaps(t *testing.T) {
	fake := spec.Contract{Name: "fake", Rules: []spec.Rule{{ID: "fake.read.limit", Bounds: []spec.Bound{
		{Name: "cap", Value: "500", Of: "the limit asked", Below: "499", At: "500", Above: "500"},
		{Name: "zero", Value: "0", Of: "the limit asked", At: "none", Above: "one", Missing: map[spec.Side]string{spec.Below: "unsigned"}},
	}}}}
	labelled := func(labels ...Labels) specLabels {
		var all []string
		for _, l := range labels {
			all = append(all, l...)
		}
		return specLabels{store: "fake", name: "a spec", labels: all}
	}
	every := labelled(Bound("fake.read.limit#cap", "below", "at", "above"), Bound("fake.read.limit#zero", "at", "above"))
	for _, tc := range []struct {
		name  string
		specs []specLabels
		want  []string
	}{
		{"every side checked", []specLabels{every}, nil},
		{"the sides split over specs", []specLabels{labelled(Bound("fake.read.limit#cap", "below")), labelled(Bound("fake.read.limit#cap", "at", "above"), Bound("fake.read.limit#zero", "at", "above"))}, nil},
		{"no spec at all", nil, []string{"cap below", "cap at", "cap above", "zero at", "zero above"}},
		{"one side missing", []specLabels{labelled(Bound("fake.read.limit#cap", "below", "at"), Bound("fake.read.limit#zero", "at", "above"))}, []string{"cap above"}},
		{"a side the bound says cannot exist", []specLabels{every, labelled(Bound("fake.read.limit#zero", "below"))}, []string{"cannot exist"}},
		{"a bound no rule has", []specLabels{every, labelled(Bound("fake.read.limit#floor", "at"))}, []string{"no rule of the table bounds"}},
		{"a side that is not one", []specLabels{every, labelled(Bound("fake.read.limit#cap", "beside"))}, []string{`side "beside"`}},
		{"another store's spec", []specLabels{{store: "other", labels: every.labels}}, []string{"cap below", "cap at", "cap above", "zero at", "zero above"}},
	} {
		gaps := boundGaps([]spec.Contract{fake}, tc.specs)
		if len(gaps) != len(tc.want) {
			t.Errorf("%s: gaps %q, want %d", tc.name, gaps, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			w = strings.Replace(w, "cap ", "fake.read.limit#cap ", 1)
			w = strings.Replace(w, "zero ", "fake.read.limit#zero ", 1)
			if !strings.Contains(gaps[i], w) {
				t.Errorf("%s: gap %q, want one with %q", tc.name, gaps[i], w)
			}
		}
	}
}
