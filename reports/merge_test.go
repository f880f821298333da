package reports

import (
	"slices"
	"strings"
	"testing"
)

// Whole runs over disjoint seeds merge: the seeds are both ranges, a check
// both ran keeps its worse outcome, a gap stays only where both have it, and
// the counts add up.
func TestMergeOfRunsOverDisjointSeeds(t *testing.T) {
	gap := func(name string, seeds int) Gap {
		return Gap{Store: "s", Kind: GapEvent, Name: name, Why: "none of the {seeds} seeds", Seeds: seeds}
	}
	run := func(seeds string, spec Outcome, gaps ...Gap) Run {
		r := Run{Tool: "storecheck", Backend: "b", Seeds: []LayerSeeds{{Layer: "sim", Seeds: seeds}},
			Checks: []Check{{Store: "s", Layer: "spec", Name: "a rule", Outcome: spec}, {Store: "s", Layer: "sim", Name: "seed " + seeds, Outcome: Passed}},
			Reach:  []Reach{{Store: "s", Layer: "sim", Events: []EventCount{{Event: "x", Count: 1}, {Event: "y", Count: 0}}}},
			Notes:  []string{"a capability note"}}
		for _, g := range gaps {
			r.Gaps = append(r.Gaps, g)
			r.Notes = append(r.Notes, g.Text())
		}
		return r
	}
	got, err := Merge([]Shard{{Dir: "a", Run: run("1..2", Passed, gap("y", 2), gap("z", 2))}, {Dir: "b", Run: run("3..4", Failed, gap("y", 2))}})
	if err != nil {
		t.Fatal(err)
	}
	if got.SeedText() != "seeds 1..2, 3..4" {
		t.Errorf("merged seeds %q", got.SeedText())
	}
	if len(got.Checks) != 3 || got.Checks[0].Outcome != Failed {
		t.Errorf("merged checks %+v: want the spec once, failed, and both seeds", got.Checks)
	}
	want := []string{"a capability note", `s: "y" was not reached: none of the 4 seeds`}
	if !slices.Equal(got.Notes, want) {
		t.Errorf("merged notes %q, want %q", got.Notes, want)
	}
	if got.Reach[0].Events[0].Count != 2 {
		t.Errorf("merged reach %+v", got.Reach)
	}
	if _, err := Merge([]Shard{{Dir: "a", Run: run("1..2", Passed)}, {Dir: "b", Run: Run{Tool: "storecheck", Backend: "other"}}}); err == nil || !strings.Contains(err.Error(), `b checked backend "other"`) {
		t.Errorf("two backends merged: %v", err)
	}
}

// Two shards' guided corpora merge into their union: every milestone
// once, sorted, every parent once, the first shard's first; a shard with
// no corpus adds none, and the inputs are not changed.
func TestMergedCorporaAreTheirUnion(t *testing.T) {
	reach := func(c *Corpus) []Reach {
		return []Reach{{Store: "s", Layer: "sim", Guided: &Guided{Blind: 1, Children: 1, Parents: len(c.Parents), Corpus: c}}}
	}
	a := &Corpus{Milestones: []string{"a x1", "b x1"}, Parents: []CorpusParent{{Seed: 1, First: 3, Last: 9, Issued: 20, Children: 4}}}
	b := &Corpus{Milestones: []string{"b x1", "c x2"}, Parents: []CorpusParent{{Seed: 2, Branches: []Branch{{At: 4, Seed: 7, Tail: 5}}, First: 5, Last: 5, Issued: 25}}}
	got := mergeReach(mergeReach(nil, reach(a)), reach(b))[0].Guided.Corpus
	if !slices.Equal(got.Milestones, []string{"a x1", "b x1", "c x2"}) {
		t.Errorf("merged milestones %q", got.Milestones)
	}
	var names []string
	for _, p := range got.Parents {
		names = append(names, p.Name())
	}
	if !slices.Equal(names, []string{"seed 1", "seed 2 > 7@4+5"}) {
		t.Errorf("merged parents %q", names)
	}
	if len(a.Milestones) != 2 || len(a.Parents) != 1 {
		t.Errorf("the merge changed a shard's corpus: %+v", a)
	}
	again := mergeReach(mergeReach(nil, reach(got)), reach(b))[0].Guided.Corpus
	if len(again.Parents) != 2 || len(again.Milestones) != 3 {
		t.Errorf("a parent or milestone both hold was kept twice: %+v", again)
	}
	blind := []Reach{{Store: "s", Layer: "sim"}}
	if c := mergeReach(mergeReach(nil, reach(a)), blind)[0].Guided.Corpus; len(c.Milestones) != 2 {
		t.Errorf("a blind shard changed the corpus: %+v", c)
	}
}
