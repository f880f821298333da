package suite

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	cont "github.com/storecheck/storecheck/spec/continuity"
	rt "github.com/storecheck/storecheck/spec/runtime"
)

// complete are the stores whose every spec names its rules.
var complete = []spec.Contract{cont.Contract, rt.Contract}

// TestEverySpecNamesARuleAndEveryRuleHasASpec walks the suite without
// running it: a spec that names no rule of its store's table, a rule ID no
// table has, or a rule no spec checks fails.
func TestEverySpecNamesARuleAndEveryRuleHasASpec(t *testing.T) {
	var specs []types.SpecReport
	RegisterFailHandler(Fail)
	Define(Harness{
		Name:       "dry run",
		Continuity: func(context.Context, Options) (cont.Store, error) { return nil, nil },
		Runtime:    func(context.Context, Options) (rt.Store, error) { return nil, nil },
		Client:     func(context.Context, Options) (cli.Store, error) { return nil, nil },
	})
	ReportAfterSuite("rules", func(r Report) { specs = r.SpecReports })
	sc, rc := GinkgoConfiguration()
	sc.DryRun = true
	rc.Succinct = true
	RunSpecs(t, "rule coverage", sc, rc)

	for _, c := range complete {
		covered := map[string]bool{}
		for _, s := range specs {
			if s.LeafNodeType != types.NodeTypeIt || len(s.ContainerHierarchyTexts) == 0 || s.ContainerHierarchyTexts[0] != c.Name {
				continue
			}
			ids := rulesOf(s.Labels())
			if len(ids) == 0 {
				t.Errorf("%s: the spec %q names no rule", c.Name, s.FullText())
			}
			for _, id := range ids {
				if _, ok := c.Rule(id); !ok {
					t.Errorf("%s: the spec %q names %q, which the rule table does not have", c.Name, s.FullText(), id)
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
