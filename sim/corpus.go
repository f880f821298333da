package sim

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/storecheck/storecheck/reports"
)

// The kit's corpus: for each store, what a guided sweep of the reference
// reached (its milestones, how many runs reached each) and the parents that
// were first to reach the rarest of them, so that a guided sweep of any
// backend starts from the deep states the reference was driven to, not from
// nothing (a fuzzer's seed corpus: OSS-Fuzz ships one per target). A
// parent's run is named by its seed and branches, and a backend that
// answers as the reference does is driven by it to the same state; one that
// does not still gets runs from those seeds. It is made by
// STORECHECK_UPDATE_CORPUS=1 go test ./conformance -run TestTheKitsCorpus,
// and that test, run without it, fails when the corpus no longer names the
// runs it was made from (the workload generator changed).
//
//go:embed corpus/*.json
var builtin embed.FS

// BuiltinCorpus is the kit's corpus of store, or nil when it has none for
// runs of p's shape (its seeds name other runs in another).
func BuiltinCorpus(store string, p Params) *reports.Corpus {
	c, err := readBuiltin(store)
	if err != nil || c.Made != p.Shape() {
		return nil
	}
	return c
}

func readBuiltin(store string) (*reports.Corpus, error) {
	data, err := builtin.ReadFile("corpus/" + store + ".json")
	if err != nil {
		return nil, err
	}
	var c reports.Corpus
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("the kit's corpus of %s: %v", store, err)
	}
	return &c, nil
}

// Distil is c kept to its n parents a guided sweep would pick first
// (pickParent), each with no children yet: the corpus to ship.
func Distil(c *reports.Corpus, n int) *reports.Corpus {
	out := &reports.Corpus{Milestones: slices.Clone(c.Milestones), Hits: c.Hits, Made: c.Made, Parents: []reports.CorpusParent{}}
	var parents []*parent
	for _, cp := range c.Parents {
		cp.Children = 0
		parents = append(parents, &parent{CorpusParent: cp, room: 1})
	}
	given := map[string]int{}
	for len(out.Parents) < n {
		pa := pickParent(parents, c.Hits, given)
		if pa == nil {
			break
		}
		pa.room = 0
		out.Parents = append(out.Parents, pa.CorpusParent)
	}
	return out
}

// Unreached are the milestones cp was the first to reach that its run, in
// p, does not reach: none, when the corpus still names the runs it was
// made from.
func Unreached(ctx context.Context, subj Subject, b Launcher, cp reports.CorpusParent, p Params, dir string) ([]string, error) {
	p.PowerCuts = false
	res, err := exploreFrom(ctx, subj, b, cp.Seed, cp.Branches, p, dir, nil, "")
	if err != nil {
		return nil, err
	}
	reached := map[string]bool{}
	for _, m := range res.Reached {
		reached[m.key()] = true
	}
	var out []string
	for _, m := range cp.New {
		if !reached[m] {
			out = append(out, m)
		}
	}
	return out, nil
}
