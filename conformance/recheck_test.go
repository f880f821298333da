package conformance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// flakyBackend is the reference, except that an operation whose count since
// the backend was made is a square reaches one more yield point. A seed run
// twice parts: a run of n operations after the first cannot see the squares
// at its 1st and 4th operation both (n+1 and n+4 are never both squares),
// however many operations the first run took. (A period, every 7th, would
// not part when the first run took a multiple of 7.)
type flakyBackend struct {
	adapters.Driver
	applies *atomic.Int64
}

func (f flakyBackend) Open(ctx context.Context, store string, o spec.OpenOptions) (adapters.Target, error) {
	t, err := f.Driver.Open(ctx, store, o)
	if err != nil {
		return nil, err
	}
	return flakyTarget{t, f.applies}, nil
}

type flakyTarget struct {
	adapters.Target
	applies *atomic.Int64
}

func (t flakyTarget) Arm(point string) error { return adapters.Arm(t.Target, point) }

func (t flakyTarget) Apply(ctx context.Context, op spec.Op) (any, error) {
	if n := t.applies.Add(1); isSquare(n) {
		if err := spec.Yield(ctx, "flaky"); err != nil {
			return nil, err
		}
	}
	return t.Target.Apply(ctx, op)
}

func isSquare(n int64) bool {
	r := int64(math.Sqrt(float64(n)))
	for r*r > n {
		r--
	}
	for (r+1)*(r+1) <= n {
		r++
	}
	return r*r == n
}

// A backend whose rechecked seed parts is not held to more than the seed:
// the values it mints are its to choose, so its pass stays a pass and the
// run's notes say which seed does not repeat, at which step and why; the
// reference's rechecked seeds repeat and leave no such note.
func TestABackendThatDoesNotRepeatPassesWithANote(t *testing.T) {
	var seed int64 = 1
	for !sim.Rechecked(seed) {
		seed++
	}
	cfg := Config{Stores: []string{"continuity"}, Layers: []Layer{LayerSim}, Seeds: &SeedRange{First: seed, Last: seed + 1},
		Steps: 40, NoPowerCuts: true, Shrink: -1, Workers: 1, ReportDir: t.TempDir()}
	for _, c := range []struct {
		name    string
		backend Backend
		parts   bool
	}{
		{"the reference", Reference(), false},
		{"a flaky backend", Adapter(flakyBackend{stores.Reference(), &atomic.Int64{}}), true},
	} {
		r, err := Run(context.Background(), c.backend, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, got := range r.Checks {
			if got.Outcome != reports.Passed {
				t.Errorf("%s: %s %s: %s", c.name, got.Name, got.Outcome, got.Message)
			}
		}
		note := slices.IndexFunc(r.Notes, func(n string) bool { return strings.Contains(n, "does not repeat") })
		switch {
		case c.parts && (note < 0 || !strings.Contains(r.Notes[note], fmt.Sprintf("seed %d does not repeat: the seed ran twice and parted at step ", seed)) ||
			!strings.Contains(r.Notes[note], "the backend is nondeterministic")):
			t.Errorf("%s: no note names the seed, the step and the backend: %q", c.name, r.Notes)
		case !c.parts && note >= 0:
			t.Errorf("%s: %s", c.name, r.Notes[note])
		}
		if r.Reach[0].Rechecked != 1 {
			t.Errorf("%s: %d seeds rechecked, want 1", c.name, r.Reach[0].Rechecked)
		}
	}
}

// A kit that draws another step after the same answers is the kit's bug:
// the seed gives no verdict. A failure that does not repeat stays a
// failure, saying its replay may not fail the same way.
func TestAKitThatDoesNotRepeatGivesNoVerdict(t *testing.T) {
	kit := &sim.Divergence{Step: 3, Side: sim.SideKit, Why: "it drew a different step", First: "client 1: a", Second: "client 2: b"}
	backend := &sim.Divergence{Step: 3, Side: sim.SideBackend, Why: "it answered differently", First: "  → ok", Second: "  → busy"}
	c := reports.Check{Outcome: reports.Passed}
	if note := recheckVerdict(&c, sim.Result{Nondeterminism: kit}); c.Outcome != reports.Inconclusive || note != "" ||
		!strings.HasPrefix(c.Message, "nondeterministic, no verdict: ") {
		t.Errorf("the kit parted: %s %q, note %q", c.Outcome, c.Message, note)
	}
	c = reports.Check{Outcome: reports.Failed, Message: "step 3: wrong"}
	if note := recheckVerdict(&c, sim.Result{Nondeterminism: backend, Failure: &sim.Failure{Step: 3}}); c.Outcome != reports.Failed || note != "" ||
		!strings.Contains(c.Message, "the replay may not fail the same way") {
		t.Errorf("a failure that parted: %s %q, note %q", c.Outcome, c.Message, note)
	}
	c = reports.Check{Outcome: reports.Passed}
	if note := recheckVerdict(&c, sim.Result{Nondeterminism: backend}); c.Outcome != reports.Passed || note == "" {
		t.Errorf("a backend's pass that parted: %s, note %q", c.Outcome, note)
	}
}
