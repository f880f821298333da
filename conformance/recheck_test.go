package conformance

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// flakyBackend is the reference, except that every seventh operation since
// it was made reaches one more yield point: a seed run twice parts.
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
	if t.applies.Add(1)%7 == 0 {
		if err := spec.Yield(ctx, "flaky"); err != nil {
			return nil, err
		}
	}
	return t.Target.Apply(ctx, op)
}

// A seed whose two runs part is inconclusive, saying so and naming the
// backend and the step; the reference's rechecked seeds pass.
func TestANondeterministicRunIsNoPass(t *testing.T) {
	var seed int64 = 1
	for !sim.Rechecked(seed) {
		seed++
	}
	cfg := Config{Stores: []string{"continuity"}, Layers: []Layer{LayerSim}, Seeds: &SeedRange{First: seed, Last: seed + 1},
		Steps: 40, NoPowerCuts: true, Shrink: -1}
	for _, c := range []struct {
		name    string
		backend Backend
		want    reports.Outcome
	}{
		{"the reference", Reference(), reports.Passed},
		{"a flaky backend", Adapter(flakyBackend{stores.Reference(), &atomic.Int64{}}), reports.Inconclusive},
	} {
		r, err := Run(context.Background(), c.backend, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := r.Checks[0]
		if got.Outcome != c.want {
			t.Errorf("%s: seed %d %s: %s", c.name, seed, got.Outcome, got.Message)
		}
		if c.want == reports.Inconclusive && (!strings.Contains(got.Message, "nondeterministic, no verdict: the seed ran twice and parted at step ") ||
			!strings.Contains(got.Message, "the backend is nondeterministic")) {
			t.Errorf("%s: the message does not name the step and the backend: %s", c.name, got.Message)
		}
		if r.Reach[0].Rechecked != 1 {
			t.Errorf("%s: %d seeds rechecked, want 1", c.name, r.Reach[0].Rechecked)
		}
	}
}
