package suite

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
)

// RuleLabel is the prefix of the label that names a rule a spec checks.
const RuleLabel = "rule:"

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

// rulesOf are the rule IDs among a spec's labels.
func rulesOf(labels []string) []string {
	var out []string
	for _, l := range labels {
		if id, ok := strings.CutPrefix(l, RuleLabel); ok {
			out = append(out, id)
		}
	}
	return out
}
