package linearizability

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// A share of the histories end with the workload's big draw, and the
// check catches, at the draw's operation, a size bug the same history
// without the draw passes: a resolve_many dropping its last partial chunk
// past 50 identities, a claim's LIMIT 100 before its filter, open_tasks
// taking every open task for a limit of 0 (100). The reference passes the
// same history.
func TestBigDrawsInHistoriesCatchTheSizeBugs(t *testing.T) {
	for _, tc := range []struct {
		store    string
		m        model.Model
		workload func() Workload
		bug      bugs.Bug
		// first is the draw's first operation; culprit the one the check
		// must stop at.
		first, culprit func(spec.Op) bool
	}{
		{"continuity", model.Continuity{}, DefaultContinuityWorkload.New, bugs.ContinuityResolveDropsLastChunk,
			func(op spec.Op) bool { o, ok := op.(c.ResolveMany); return ok && len(o.Identities) > spec.LookupChunk },
			func(op spec.Op) bool {
				o, ok := op.(c.ResolveMany)
				return ok && len(o.Identities) > spec.LookupChunk && len(o.Identities) < spec.MaxBoundParams
			}},
		{"runtime", model.Runtime{}, DefaultRuntimeWorkload.New, bugs.RuntimeClaimScanBeforeFilter,
			func(op spec.Op) bool { o, ok := op.(r.EnqueueQueuedWork); return ok && o.Draft.SessionID == bigSession },
			func(op spec.Op) bool { o, ok := op.(r.ClaimReadyQueuedWork); return ok && o.SessionID == bigSession }},
		{"client", model.Client{}, DefaultClientWorkload.New, bugs.ClientOpenTasksZeroTakesAll,
			func(op spec.Op) bool { o, ok := op.(cli.EnqueueIntent); return ok && strings.HasPrefix(o.OpID, bulk) },
			func(op spec.Op) bool { o, ok := op.(cli.OpenTasks); return ok && o.Limit == 0 }},
	} {
		t.Run(tc.store, func(t *testing.T) {
			t.Parallel()
			for seed := range int64(40) {
				cfg := Config{Seed: seed, Ops: 400}
				h, err := Run(context.Background(), tc.m.Contract(), referenceOpener(t, tc.store, tc.bug), tc.workload(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				at := -1
				for i, e := range h.Entries {
					if tc.first(e.Op) {
						at = i
						break
					}
				}
				if at < 0 || !hasOp(h.Entries[at:], tc.culprit) {
					continue
				}
				t0 := time.Now()
				res, err := Check(tc.m, h, 30*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if res.Verdict != Illegal || len(res.Stuck) == 0 || !tc.culprit(res.Stuck[0].Entry.Op) {
					t.Fatalf("seed %d: %s passes the big draw: %s", seed, tc.bug.Name(), res.Summary())
				}
				took := time.Since(t0)
				before := History{Store: h.Store, Seed: h.Seed, Entries: h.Entries[:at]}
				if res, err := Check(tc.m, before, 30*time.Second); err != nil || res.Verdict != Linearizable {
					t.Fatalf("seed %d: the history before the big draw: %v %s", seed, err, res.Summary())
				}
				ref, err := Run(context.Background(), tc.m.Contract(), referenceOpener(t, tc.store, bugs.Bug{}), tc.workload(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if res, err := Check(tc.m, ref, 30*time.Second); err != nil || res.Verdict != Linearizable {
					t.Fatalf("seed %d: the reference: %v %s", seed, err, res.Summary())
				}
				t.Logf("seed %d: %d operations, the draw's from %d; caught in %v", seed, len(h.Entries), at, took)
				return
			}
			t.Fatalf("no history of seeds 0..39 made the big draw")
		})
	}
}

func hasOp(es []Entry, f func(spec.Op) bool) bool {
	for _, e := range es {
		if f(e.Op) {
			return true
		}
	}
	return false
}
