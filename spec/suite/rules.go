package suite

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/storecheck/storecheck/spec"
)

// RuleLabel is the prefix of the label that names a rule a spec checks.
const RuleLabel = "rule:"

// BoundLabel is the prefix of the label that names a side of a bound a
// spec checks: "bound:<bound ID>:<side>".
const BoundLabel = "bound:"

// Rules labels a spec with the rules of the contract's table it checks
// (spec.Rule IDs). Every spec names at least one rule, and every rule has a
// spec; a test holds both.
func Rules(ids ...string) Labels {
	out := make(Labels, len(ids))
	for i, id := range ids {
		out[i] = RuleLabel + id
	}
	return out
}

// Bound labels a spec with the sides of a bound it checks (a spec.Bound ID,
// "<rule ID>#<name>": the count the seed gives one below the bound, at it
// or one above it), and with the bound's rule. Every side of every bound
// has a spec, or the bound says why the side cannot exist; a test holds it.
func Bound(id string, sides ...spec.Side) Labels {
	rule, _, _ := strings.Cut(id, "#")
	out := Labels{RuleLabel + rule}
	for _, s := range sides {
		out = append(out, BoundLabel+id+":"+string(s))
	}
	return out
}

// rulesOf are the rule IDs among a spec's labels, each once.
func rulesOf(labels []string) []string {
	var out []string
	for _, l := range labels {
		if id, ok := strings.CutPrefix(l, RuleLabel); ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// boundSide is a side of a bound a spec checks.
type boundSide struct {
	id   string
	side spec.Side
}

// boundsOf are the sides of bounds among a spec's labels.
func boundsOf(labels []string) []boundSide {
	var out []boundSide
	for _, l := range labels {
		if rest, ok := strings.CutPrefix(l, BoundLabel); ok {
			i := strings.LastIndex(rest, ":")
			if i < 0 {
				out = append(out, boundSide{id: rest})
				continue
			}
			out = append(out, boundSide{id: rest[:i], side: spec.Side(rest[i+1:])})
		}
	}
	return out
}
