package bugs

import (
	"testing"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Every bound of every rule table has a deliberate bug that breaks it, of
// its own store, and every bound named here is one a table states.
func TestEveryBoundHasABugThatBreaksIt(t *testing.T) {
	known := map[string]bool{}
	for _, c := range []spec.Contract{c.Contract, r.Contract, cli.Contract} {
		for _, b := range c.Bounds() {
			known[b.ID] = true
			bugs := Breaking(b.ID)
			if len(bugs) == 0 {
				t.Errorf("bound %s (%s) has no deliberate bug that breaks it", b.ID, b.Bound)
			}
			for _, bug := range bugs {
				if bug.Store() != c.Name {
					t.Errorf("bound %s of %s: bug %q breaks the %s store", b.ID, c.Name, bug.Name(), bug.Store())
				}
			}
		}
	}
	for id := range breaks {
		if !known[id] {
			t.Errorf("breaks names %q, which no rule table bounds", id)
		}
	}
}
