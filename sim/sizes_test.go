package sim

import (
	"context"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability/model"
)

// The default sweep's big draws reach every size a store's events name
// (model.*Sizes), and the run that reaches each size catches the
// deliberate bug that breaks there (internal/bugs): a chunked lookup that
// drops its last partial chunk, a claim's LIMIT 100 before its filter,
// attempts kept in 8 or 16 bits, reads past their limits. A run without a big draw is the run it was: the
// draw has a stream of its own.
func TestBigDrawsReachEverySizeAndCatchItsBug(t *testing.T) {
	for _, tc := range []struct {
		subj  Subject
		store string
		sizes []string
		bug   map[string]bugs.Bug
	}{
		{continuitySubject, "continuity", model.ContinuitySizes, map[string]bugs.Bug{
			model.EventSizeResolveChunk: bugs.ContinuityResolveDropsLastChunk, model.EventSizeResolveParams: bugs.ContinuityResolveDropsLastChunk}},
		{runtimeSubject, "runtime", model.RuntimeSizes, map[string]bugs.Bug{model.EventSizeClaimPastScan: bugs.RuntimeClaimScanBeforeFilter}},
		{clientSubject, "client", model.ClientSizes, map[string]bugs.Bug{model.EventSizeAttempts8: bugs.ClientAttemptsEightBits, model.EventSizeAttempts16: bugs.ClientAttemptsSixteenBits,
			model.EventSizeDueDefault: bugs.ClientDueZeroTakesAll, model.EventSizeDueCap: bugs.ClientDueLimitUncapped,
			model.EventSizeFlushBatch: bugs.ClientFlushReadsWholeQueue, model.EventSizeOpenDefault: bugs.ClientOpenTasksZeroTakesAll,
			model.EventSizeOpenCap: bugs.ClientOpenTasksUncapped}},
	} {
		t.Run(tc.store, func(t *testing.T) {
			t.Parallel()
			reached := map[string]int64{}
			for _, seed := range DefaultSeeds.Seeds(Shard{}) {
				if len(reached) == len(tc.sizes) {
					break
				}
				if drawBig(seed, tc.subj.NewWorkload(), DefaultParams().Steps, drawPower(seed).rate != 0) == nil {
					continue
				}
				res, err := Explore(context.Background(), tc.subj, InProcess(stores.Reference(), tc.store), seed, Params{}, t.TempDir())
				if err != nil || res.Failure != nil {
					t.Fatalf("seed %d: the reference failed: %v %v", seed, err, res.Failure)
				}
				for _, e := range tc.sizes {
					if _, ok := reached[e]; !ok && res.Coverage[e] > 0 {
						reached[e] = seed
					}
				}
			}
			for _, e := range tc.sizes {
				seed, ok := reached[e]
				if !ok {
					t.Errorf("the default sweep never reached %q", e)
					continue
				}
				b, ok := tc.bug[e]
				if !ok {
					continue
				}
				res, err := Explore(context.Background(), tc.subj, InProcess(stores.Backend(stores.Options{Bug: b}), tc.store), seed, Params{}, t.TempDir())
				if err != nil || res.Failure == nil {
					t.Errorf("seed %d reaches %q, but passes %s (%v)", seed, e, b.Name(), err)
				}
			}
			t.Logf("%v", reached)
		})
	}
}
