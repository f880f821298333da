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
		g, err := GuidedSweep(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seeds, p, workers, t.TempDir(), nil, func(r Result) {
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

// A branch's tail lengthens the child: its clients issue Tail more
// operations than its parent's, and a branch where the parent's clients
// stopped still branches (the tail goes on from there).
func TestATailLengthensTheChild(t *testing.T) {
	ctx := context.Background()
	const seed = 5
	p := Params{Steps: 60}
	parent, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	issued := func(r Result) int {
		n := 0
		for _, st := range r.Schedule.Steps[:r.Issued] {
			if st.Kind == StepOp {
				n++
			}
		}
		return n
	}
	if got := issued(parent); got != 60 {
		t.Fatalf("the parent issued %d operations before its step %d, want 60", got, parent.Issued)
	}
	for _, at := range []int{parent.Issued / 2, parent.Issued} {
		child, err := exploreFrom(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, []Branch{{At: at, Seed: 99, Tail: 15}}, p, t.TempDir(), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := issued(child); got != 75 {
			t.Errorf("a child branched at %d with a tail of 15 issued %d operations, want 75", at, got)
		}
		if !slices.EqualFunc(parent.Schedule.Steps[:at], child.Schedule.Steps[:at], sameStep) {
			t.Errorf("a child branched at %d is not its parent before it", at)
		}
		if child.Schedule.Name() != fmt.Sprintf("seed 5 > 99@%d+15", at) {
			t.Errorf("the child is named %q", child.Schedule.Name())
		}
	}
}

// A guided sweep ends with its corpus (its milestones and parents), and a
// sweep started from it counts those milestones as reached and gives its
// parents children from its first generation on, children the first
// sweep did not run; both are the same sweep twice.
func TestAGuidedSweepStartsFromACorpus(t *testing.T) {
	ctx := context.Background()
	p := Params{Steps: 60}
	sweep := func(first int64, from *reports.Corpus) ([]string, reports.Guided) {
		var runs []string
		seeds := SeedRange{First: first, Last: first + 15}.Seeds(Shard{})
		g, err := GuidedSweep(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seeds, p, 2, t.TempDir(), from, func(r Result) {
			if r.Failure != nil {
				t.Errorf("%s: %s", r.Schedule.Name(), r.Failure)
			}
			runs = append(runs, r.Schedule.Name())
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return runs, g
	}
	firstRuns, first := sweep(1, nil)
	c := first.Corpus
	if c == nil || len(c.Milestones) != first.Growth[len(first.Growth)-1].Milestones || len(c.Parents) != first.Parents {
		t.Fatalf("the corpus %+v does not hold the sweep's %s", c, first)
	}
	if !slices.IsSorted(c.Milestones) {
		t.Fatal("the corpus's milestones are not sorted")
	}
	nextRuns, next := sweep(17, c)
	again, _ := sweep(17, c)
	if !slices.Equal(nextRuns, again) {
		t.Fatal("the same sweep from the same corpus ran other runs")
	}
	// Its first generation: blind seed 17, then children of the corpus's
	// parents (seeds 1..16), none a run the first sweep made.
	if nextRuns[0] != "seed 17" || !strings.Contains(nextRuns[1], ">") || strings.HasPrefix(nextRuns[1], "seed 17") {
		t.Fatalf("the sweep from the corpus began %v", nextRuns[:4])
	}
	for _, r := range nextRuns {
		if slices.Contains(firstRuns, r) {
			t.Errorf("%s ran in both sweeps", r)
		}
	}
	if next.Growth[0].Milestones < len(c.Milestones) {
		t.Errorf("the sweep from the corpus counts %d milestones after its first generation, the corpus held %d", next.Growth[0].Milestones, len(c.Milestones))
	}
	for _, m := range c.Milestones {
		if !slices.Contains(next.Corpus.Milestones, m) {
			t.Fatalf("the next corpus lost %q", m)
		}
	}
	children := func(c *reports.Corpus, n int) (sum int) {
		for _, p := range c.Parents[:n] {
			sum += p.Children
		}
		return sum
	}
	if len(next.Corpus.Parents) < len(c.Parents) || children(next.Corpus, len(c.Parents)) <= children(c, len(c.Parents)) {
		t.Errorf("the next corpus's parents (%d children) do not continue the first's (%d)", children(next.Corpus, len(c.Parents)), children(c, len(c.Parents)))
	}
	// Without the corpus the same range is a sweep of its own: blind first.
	plain, _ := sweep(17, nil)
	if slices.Equal(plain, nextRuns) {
		t.Error("the corpus changed nothing")
	}
}

// A guided sweep gives children first to the parent of the rarest state of
// each kind (its family: the feature without its bucket), one of every
// kind before a second of any, then to parents of no state at all; and a
// parent that names no new milestone (a corpus older than New) comes last.
func TestTheRarestStateOfEachKindHasChildrenFirst(t *testing.T) {
	hits := map[string]int{
		// The second queue parent is rarer than the lease parent, and
		// still comes after it: its kind had a child.
		"state: queued batches: 64-127 x1": 1, "state: queued batches: 8-15 x1": 2,
		"state: leases held: 1 x16": 3, "fault busy at claim/before_write x1": 1, "claim:ok x1": 9,
	}
	mk := func(name string, news ...string) *parent {
		return &parent{CorpusParent: reports.CorpusParent{Seed: int64(len(name)), New: news}, room: 1}
	}
	deepQueue := mk("deep queue", "state: queued batches: 64-127 x1", "claim:ok x1")
	queue := mk("queue", "state: queued batches: 8-15 x1")
	lease := mk("lease", "state: leases held: 1 x16")
	fault := mk("fault at a yield point", "fault busy at claim/before_write x1")
	old := mk("old")
	parents := []*parent{old, fault, queue, lease, deepQueue}
	given := map[string]int{}
	var order []*parent
	for pa := pickParent(parents, hits, given); pa != nil; pa = pickParent(parents, hits, given) {
		pa.room--
		order = append(order, pa)
	}
	want := []*parent{deepQueue, lease, queue, fault, old}
	if !slices.Equal(order, want) {
		names := func(ps []*parent) (out []string) {
			for _, p := range ps {
				out = append(out, fmt.Sprint(p.New))
			}
			return out
		}
		t.Fatalf("children went to\n%v\nwant\n%v", names(order), names(want))
	}
	if f := familyOf("state: queued batches: 64-127 x128"); f != "state: queued batches" {
		t.Errorf("family %q", f)
	}
	if f := familyOf("size: attachment of 4 MiB x1"); f != "size: attachment of 4 MiB" {
		t.Errorf("family %q", f)
	}
}

// The kit's corpus is for the shape it was made in: another shape's seeds
// name other runs, so a sweep of another shape gets none; Distil keeps the
// parents a sweep would pick first, with no children yet.
func TestTheKitsCorpusIsForItsShape(t *testing.T) {
	for _, store := range []string{"continuity", "runtime", "client"} {
		c := BuiltinCorpus(store, Params{})
		if c == nil || len(c.Parents) == 0 {
			t.Fatalf("%s: no corpus of the kit's in the default shape", store)
		}
		if BuiltinCorpus(store, Params{Steps: 60}) != nil || BuiltinCorpus(store, Params{Processes: 1, Overlap: true}) != nil {
			t.Errorf("%s: the kit's corpus is given to a sweep of another shape", store)
		}
	}
	c := BuiltinCorpus("runtime", Params{})
	d := Distil(c, 3)
	if len(d.Parents) != 3 || len(d.Milestones) != len(c.Milestones) {
		t.Fatalf("distilled to %d parents, %d milestones", len(d.Parents), len(d.Milestones))
	}
	for i, p := range d.Parents {
		if p.Children != 0 || p.Name() != c.Parents[i].Name() {
			t.Errorf("parent %d: %s with %d children, want %s first (the corpus is in the order a sweep picks)", i, p.Name(), p.Children, c.Parents[i].Name())
		}
	}
}
