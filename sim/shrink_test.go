package sim

import (
	"context"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
)

// Candidates run side by side shrink to what one at a time gives, byte for
// byte, counting the same runs; a smaller budget stops both at the same
// place.
func TestShrinkingSideBySideIsShrinkingOneAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	backend := referenceBackend(bugs.ContinuityWriteBehind)
	found := 0
	for _, seed := range DefaultSeeds.Seeds(Shard{}) {
		if found == 2 {
			break
		}
		res, err := Explore(ctx, continuitySubject, backend, seed, Params{Processes: 1}, ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure == nil {
			continue
		}
		found++
		for _, budget := range []int{2000, 7} {
			one, err := ShrinkWith(ctx, continuitySubject, backend, res, ScratchDir(), ShrinkOptions{Budget: budget, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			four, err := ShrinkWith(ctx, continuitySubject, backend, res, ScratchDir(), ShrinkOptions{Budget: budget, Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			if one.Hash() != four.Hash() || one.ShrinkRuns != four.ShrinkRuns || len(one.Schedule.Steps) != len(four.Schedule.Steps) {
				t.Errorf("seed %d, budget %d: one at a time %d steps in %d runs, four at a time %d steps in %d runs",
					seed, budget, len(one.Schedule.Steps), one.ShrinkRuns, len(four.Schedule.Steps), four.ShrinkRuns)
			}
			if one.ShrinkRuns > budget || one.ShrinkRuns == 0 {
				t.Errorf("seed %d: %d runs counted, budget %d", seed, one.ShrinkRuns, budget)
			}
			if budget == 2000 && len(one.Schedule.Steps) >= len(res.Schedule.Steps) {
				t.Errorf("seed %d: not shrunk (%d steps)", seed, len(one.Schedule.Steps))
			}
		}
	}
	if found == 0 {
		t.Fatal("the default sweep found the write-behind bug nowhere: the test proves nothing")
	}
}
