package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
)

// A child is its parent's run step for step up to its branch, another run
// after it, the same run twice, and its saved schedule (which names its
// branch) replays it.
func TestAChildIsItsParentUpToItsBranch(t *testing.T) {
	ctx := context.Background()
	const seed, at = 3, 40
	p := Params{Steps: 80}
	parent, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	branches := []Branch{{At: at, Seed: 12345}}
	child, err := exploreFrom(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, branches, p, t.TempDir(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(parent.Schedule.Steps[:at], child.Schedule.Steps[:at], sameStep) {
		t.Fatal("the child's first steps are not its parent's")
	}
	if parent.Hash() == child.Hash() {
		t.Fatal("the child after its branch is its parent again")
	}
	again, err := exploreFrom(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, branches, p, t.TempDir(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash() != child.Hash() {
		t.Fatal("the same child twice is two runs")
	}
	saved := savedAndRead(t, child.Schedule)
	if !slices.Equal(saved.Branches, branches) || saved.Name() != "seed 3 > 12345@40" {
		t.Fatalf("the saved schedule names %q, branches %v", saved.Name(), saved.Branches)
	}
	replay, err := Run(ctx, continuitySubject, referenceBackend(bugs.Bug{}), saved, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if replay.Hash() != child.Hash() {
		t.Fatal("the child's saved schedule replays to another trace")
	}
}

func sameStep(a, b Step) bool {
	x, _ := json.Marshal(Schedule{Steps: []Step{a}})
	y, _ := json.Marshal(Schedule{Steps: []Step{b}})
	return string(x) == string(y)
}

// A guided sweep spends exactly its budget, blind seeds first in range
// order and children of the runs that reached something new, and is the
// same sweep whatever its workers: the same runs, the same traces.
func TestAGuidedSweepIsTheSameSweepTwice(t *testing.T) {
	ctx := context.Background()
	seeds := SeedRange{First: 1, Last: 24}.Seeds(Shard{})
	p := Params{Steps: 60}
	sweep := func(workers int) ([]string, reports.Guided) {
		var runs []string
		g, err := GuidedSweep(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seeds, p, workers, t.TempDir(), func(r Result) {
			if r.Failure != nil {
				t.Errorf("%s: %s", r.Schedule.Name(), r.Failure)
			}
			runs = append(runs, r.Schedule.Name()+" "+r.Hash())
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return runs, g
	}
	one, g := sweep(1)
	two, _ := sweep(3)
	if !slices.Equal(one, two) {
		t.Fatalf("one worker and three ran other sweeps:\n%s\n--\n%s", strings.Join(one, "\n"), strings.Join(two, "\n"))
	}
	if len(one) != len(seeds) || g.Blind+g.Children != len(seeds) {
		t.Fatalf("%d runs (%s), want the budget %d", len(one), g, len(seeds))
	}
	if g.Children == 0 || g.Parents == 0 || g.Blind == 0 {
		t.Fatalf("want blind runs and children of parents: %s", g)
	}
	var blind []string
	for _, r := range one {
		if !strings.Contains(r, ">") {
			blind = append(blind, strings.Fields(r)[1])
		}
	}
	for i, s := range blind {
		if want := fmt.Sprint(seeds[i]); s != want {
			t.Fatalf("blind run %d is seed %s, want %s", i, s, want)
		}
	}
	last := g.Growth[len(g.Growth)-1]
	if last.Runs != len(seeds) || g.Growth[0].Milestones == 0 || last.Milestones < g.Growth[0].Milestones {
		t.Fatalf("growth %v", g.Growth)
	}
	if !strings.Contains(g.String(), "guided: 24 runs") {
		t.Fatalf("the sweep's line: %s", g)
	}
}

func TestAnUnknownExploreModeIsNamed(t *testing.T) {
	for _, ok := range []string{"", "blind", "guided"} {
		if _, err := ParseExplore(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if _, err := ParseExplore("smart"); err == nil || !strings.Contains(err.Error(), `explore "smart": want one of blind, guided`) {
		t.Errorf("smart: %v", err)
	}
}

// Every store's model names state features, and a run counts them: the
// features are what a guided sweep steers by past the answers' cells.
func TestEveryStoreNamesStateFeatures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		subj Subject
		b    Launcher
		want string
	}{
		{continuitySubject, referenceBackend(bugs.Bug{}), FeaturePrefix + "records: "},
		{runtimeSubject, InProcess(stores.Reference(), "runtime"), FeaturePrefix + "leases held: "},
		{clientSubject, InProcess(stores.Reference(), "client"), FeaturePrefix + "intents: "},
	} {
		res, err := Explore(ctx, tc.subj, tc.b, 1, Params{Steps: 120}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range res.Reached {
			found = found || strings.HasPrefix(m.Event, tc.want)
		}
		if !found {
			t.Errorf("%s: no milestone of %q", tc.subj.Model.Contract().Name, tc.want)
		}
	}
}
