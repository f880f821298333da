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
	for i, cp := range c.Parents {
		cp.Children, cp.Swaps = 0, 0
		pa := &parent{CorpusParent: cp, room: 1}
		if i < c.Favored {
			pa.favored = i + 1
		}
		parents = append(parents, pa)
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
	out.Favored = min(c.Favored, len(out.Parents))
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

// Favor is c with its favored parents first (Corpus.Favored): each parent's
// run in p reaches milestones (its own and its ancestors'), and of the
// parents, greedily, the one whose run reaches the most that no favored one
// before it reaches, each weighed by how rare it is (1/hits), up to
// maxFavored (a weighted set cover, as AFL's favored entries and afl-cmin).
// A guided sweep replays them first, so a backend meets the states the
// reference was driven to in its first runs.
func Favor(ctx context.Context, subj Subject, b Launcher, c *reports.Corpus, p Params, dir string) (*reports.Corpus, error) {
	p.PowerCuts = false
	reach := make([][]string, len(c.Parents))
	for i, cp := range c.Parents {
		res, err := exploreFrom(ctx, subj, b, cp.Seed, cp.Branches, p, dir, nil, "")
		if err != nil {
			return nil, err
		}
		for _, m := range res.Reached {
			reach[i] = append(reach[i], m.key())
		}
	}
	order := favorOrder(reach, c.Hits, maxFavored)
	out := &reports.Corpus{Milestones: c.Milestones, Hits: c.Hits, Made: c.Made, Favored: len(order), Parents: []reports.CorpusParent{}}
	for _, i := range order {
		out.Parents = append(out.Parents, c.Parents[i])
	}
	for i, cp := range c.Parents {
		if !slices.Contains(order, i) {
			out.Parents = append(out.Parents, cp)
		}
	}
	return out, nil
}

// maxFavored is how many parents a corpus favors: a generation's worth.
// With all that cover what any reaches (30 to 36 of 48), the replays held
// the children of the rarest states back by four generations: a bug of a
// state no replay reaches (runtime_claim_exceeds_max_batches) was found no
// sooner than blind (docs/guided.md).
const maxFavored = generation

// favorOrder is the greedy weighted cover of reach (the milestones each
// parent's run reaches) by hits: at most n of them, in order, each the
// one adding the most weight (1/hits of each milestone no earlier one
// reached), the earliest of equals; none that adds nothing.
func favorOrder(reach [][]string, hits map[string]int, n int) []int {
	covered := map[string]bool{}
	var order []int
	for len(order) < n {
		best, bestScore := -1, 0.0
		for i, ms := range reach {
			if slices.Contains(order, i) {
				continue
			}
			score := 0.0
			seen := map[string]bool{}
			for _, m := range ms {
				if !covered[m] && !seen[m] {
					seen[m] = true
					score += 1 / float64(max(hits[m], 1))
				}
			}
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			break
		}
		order = append(order, best)
		for _, m := range reach[best] {
			covered[m] = true
		}
	}
	return order
}
