package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/reports"
)

// The favored parents are a greedy cover weighed by rarity: first the run
// reaching the rare milestone, though another reaches more common ones;
// then the one adding the most; none that adds nothing; at most n.
func TestTheFavoredCoverTheRarestFirst(t *testing.T) {
	hits := map[string]int{"a x1": 100, "b x1": 100, "c x1": 100, "rare x1": 1, "d x1": 20}
	reach := [][]string{
		{"a x1", "b x1", "c x1"},
		{"rare x1", "a x1"},
		{"rare x1"},
		{"d x1", "a x1"},
	}
	if got, want := favorOrder(reach, hits, 10), []int{1, 3, 0}; !slices.Equal(got, want) {
		t.Fatalf("favored %v, want %v", got, want)
	}
	if got := favorOrder(reach, hits, 1); !slices.Equal(got, []int{1}) {
		t.Fatalf("favored %v at most 1, want [1]", got)
	}
}

// A guided sweep from a corpus with favored parents replays them first,
// in order, each whole with a tail (branched where its clients stopped),
// a quarter of the generation blind; then children as before.
func TestAGuidedSweepReplaysTheFavoredFirst(t *testing.T) {
	ctx := context.Background()
	p := Params{Steps: 60}
	var made *reports.Corpus
	sweep := func(first int64, n int, from *reports.Corpus) []string {
		var runs []string
		seeds := SeedRange{First: first, Last: first + int64(n) - 1}.Seeds(Shard{})
		g, err := GuidedSweep(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seeds, p, 2, t.TempDir(), from, func(r Result) {
			runs = append(runs, r.Schedule.Name())
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if from == nil {
			made = g.Corpus
		}
		return runs
	}
	sweep(1, 16, nil)
	c := *made
	c.Parents = slices.Clone(c.Parents)
	slices.Reverse(c.Parents) // favored: the last two parents, first
	c.Favored = 2
	runs := sweep(101, 8, &c)
	for i, pa := range c.Parents[:2] {
		want := fmt.Sprintf("%s > ", pa.Name())
		if !strings.HasPrefix(runs[i], want) || !strings.HasSuffix(runs[i], fmt.Sprintf("@%d+%d", pa.Issued, p.Steps/4)) {
			t.Errorf("run %d is %q, want the replay of favored parent %s whole with its tail (@%d+%d)", i+1, runs[i], pa.Name(), pa.Issued, p.Steps/4)
		}
	}
	if runs[3] != "seed 101" || strings.Contains(runs[2], "seed 101") {
		t.Errorf("the first generation %v: want the blind seed 101 fourth", runs)
	}
	c.Favored = 0
	if plain := sweep(101, 8, &c); plain[0] != "seed 101" {
		t.Errorf("without favored parents the sweep began %v, want blind seed 101", plain[:2])
	}
}
