package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// The kit's corpus (sim.BuiltinCorpus) is made by a guided sweep of the
// reference from nothing, distilled to the parents a sweep picks first:
//
//	STORECHECK_UPDATE_CORPUS=1 go test ./conformance -run TestTheKitsCorpus
const (
	corpusSeeds   = 400 // runs of the sweep that makes it, a store
	corpusParents = 48  // parents it keeps
	corpusFirst   = 1_000_001
)

// Every store has the kit's corpus, made in the shape of the default sweep
// of the reference, and its rarest parents still reach, replayed, what they
// were the first to reach: a corpus whose seeds name other runs (the
// workload generator changed since it was made) fails here, not silently
// in every guided sweep.
func TestTheKitsCorpus(t *testing.T) {
	ctx := context.Background()
	if os.Getenv("STORECHECK_UPDATE_CORPUS") != "" {
		makeTheKitsCorpus(t)
	}
	s, err := Reference().open(ctx, Config{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for _, name := range stores.Names() {
		reg, _ := stores.Lookup(name)
		caps := s.caps(name)
		p, _ := processesFor(sim.Params{}, caps, name)
		c := sim.BuiltinCorpus(name, p)
		if c == nil {
			t.Errorf("%s: no corpus of the kit's for %q: STORECHECK_UPDATE_CORPUS=1 go test ./conformance -run TestTheKitsCorpus", name, p.Shape())
			continue
		}
		if len(c.Parents) == 0 || len(c.Milestones) == 0 || len(c.Hits) == 0 {
			t.Errorf("%s: the kit's corpus is empty: %d parents, %d milestones", name, len(c.Parents), len(c.Milestones))
			continue
		}
		subj := storeOf(reg).Subject(caps)
		for _, cp := range c.Parents[:3] {
			missing, err := sim.Unreached(ctx, subj, s.simBackend(name), cp, p, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if len(missing) > 0 {
				t.Errorf("%s: the kit's corpus is stale: %s no longer reaches %s; STORECHECK_UPDATE_CORPUS=1 go test ./conformance -run TestTheKitsCorpus",
					name, cp.Name(), strings.Join(missing, ", "))
			}
		}
		// A parent named by another seed is another run: the check can fail.
		other := c.Parents[0]
		other.Seed++
		if missing, err := sim.Unreached(ctx, subj, s.simBackend(name), other, p, t.TempDir()); err != nil || len(missing) == 0 {
			t.Errorf("%s: %s, not the corpus's run, reached all it names (%v)", name, other.Name(), err)
		}
	}
}

// makeTheKitsCorpus sweeps the reference guided from nothing, each store
// in its default shape with no power cut, and writes each store's corpus,
// distilled, into sim/corpus.
func makeTheKitsCorpus(t *testing.T) {
	for _, name := range stores.Names() {
		cfg := Config{Stores: []string{name}, Layers: []Layer{LayerSim}, Seeds: &SeedRange{First: corpusFirst, Last: corpusFirst + corpusSeeds - 1},
			NoPowerCuts: true, Explore: sim.ExploreGuided, Corpus: NoCorpus, Shrink: -1, ReportDir: t.TempDir()}
		r, err := Run(context.Background(), Reference(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Failed() {
			t.Fatalf("%s: the reference failed the sweep that makes the corpus", name)
		}
		if len(r.Reach) != 1 || r.Reach[0].Guided == nil || r.Reach[0].Guided.Corpus == nil {
			t.Fatalf("%s: the sweep kept no corpus: %+v", name, r.Reach)
		}
		made := r.Reach[0].Guided.Corpus
		c, err := favor(sim.Distil(made, corpusParents), name, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.MarshalIndent(c, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "sim", "corpus", name+".json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d milestones, %d of %d parents kept", name, len(c.Milestones), len(c.Parents), len(made.Parents))
	}
	t.Fatal("the kit's corpus was made: build again (it is embedded) and run the test without STORECHECK_UPDATE_CORPUS")
}

// favor is c with its favored parents first (sim.Favor), their runs on
// the reference in the default shape.
func favor(c *reports.Corpus, name, dir string) (*reports.Corpus, error) {
	ctx := context.Background()
	s, err := Reference().open(ctx, Config{}.WithDefaults())
	if err != nil {
		return nil, err
	}
	defer s.close()
	reg, _ := stores.Lookup(name)
	caps := s.caps(name)
	p, _ := processesFor(sim.Params{}, caps, name)
	return sim.Favor(ctx, storeOf(reg).Subject(caps), s.simBackend(name), c, p, dir)
}

// A guided sweep in the default shape starts from the kit's corpus, its
// first runs the replays of the corpus's favored parents (a quarter of the
// generation blind), and says so; with the corpus none it starts from
// nothing, its first generation blind.
func TestAGuidedSweepStartsFromTheKitsCorpus(t *testing.T) {
	sweep := func(corpus string) reports.Run {
		cfg := Config{Stores: []string{"continuity"}, Layers: []Layer{LayerSim}, Seeds: &SeedRange{First: 1, Last: 4},
			NoPowerCuts: true, Shrink: -1, Explore: sim.ExploreGuided, Corpus: corpus, ReportDir: t.TempDir()}
		r, err := Run(context.Background(), Reference(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	kit := sweep("")
	g := kit.Reach[0].Guided
	if g.From != "the kit's corpus" || g.Children != 3 || !strings.Contains(kit.Reach[0].Summary(), "started from the kit's corpus") {
		t.Errorf("a default guided sweep: from %q, %d children: %s", g.From, g.Children, kit.Reach[0].Summary())
	}
	c := sim.BuiltinCorpus("continuity", sim.Params{})
	if len(kit.Checks) != 4 || c.Favored == 0 || !strings.HasPrefix(kit.Checks[0].Name, c.Parents[0].Name()+" > ") || kit.Checks[3].Name != "seed 1" {
		t.Errorf("a default guided sweep ran %v, want the replay of %s first and blind seed 1 fourth", kit.Checks, c.Parents[0].Name())
	}
	nothing := sweep(NoCorpus)
	if g := nothing.Reach[0].Guided; g.From != "" || g.Children != 0 || strings.Contains(nothing.Reach[0].Summary(), "started from") {
		t.Errorf("a guided sweep from nothing: from %q, %d children", g.From, g.Children)
	}
}
