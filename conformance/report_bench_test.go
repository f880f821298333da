package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
)

// BenchmarkAFailingLinearizeReport measures a failing linearizability check
// and its report apart, on histories of a racy bug of each modelled store:
// the check (porcupine, and the stuck parts read from it), and the report
// (the explanation in words, the saved history, the visualization). A
// failing linearize must report within 1.5x of its check time: compare
// check and report of one size in one run (-benchtime 3x is enough).
func BenchmarkAFailingLinearizeReport(b *testing.B) {
	for _, tc := range []struct {
		bug          string
		clients, ops int
		seed         int64
	}{
		{"runtime_lease_claim_outside_tx", 8, 2000, 2},
		{"runtime_lease_claim_outside_tx", 16, 8000, 2},
		{"client_settle_check_outside_tx", 8, 2000, 2},
		{"client_settle_check_outside_tx", 12, 4000, 2},
	} {
		bug, _ := bugs.ByName(tc.bug)
		s, _ := stores.Lookup(bug.Store())
		name := fmt.Sprintf("%s/c%d-o%d", tc.bug, tc.clients, tc.ops)
		var hist linearizability.History
		var m model.Model
		setup := func(b *testing.B) {
			if hist.Entries != nil {
				return
			}
			backend := stores.Backend(stores.Options{Bug: bug})
			open, handles := newRunner(b, Adapter(backend), Config{}).s.opener(s.Name(), b.TempDir())
			rc := linearizability.Config{Seed: tc.seed, Clients: tc.clients, Ops: tc.ops, Handles: handles}.WithDefaults()
			var err error
			if hist, err = linearizability.Run(context.Background(), s.Contract, open, s.Workload(), rc); err != nil {
				b.Fatal(err)
			}
			hist.Capabilities = backend.Info().Capabilities.Capabilities
			m = model.For(s.Model, hist.Capabilities)
		}
		check := func(b *testing.B) linearizability.Result {
			res, err := linearizability.Check(m, hist, 2*time.Minute)
			if err != nil || res.Verdict != linearizability.Illegal {
				b.Fatalf("%s: %s, %v", name, res.Verdict, err)
			}
			return res
		}
		b.Run(name+"/check", func(b *testing.B) {
			setup(b)
			for b.Loop() {
				check(b)
			}
		})
		b.Run(name+"/report", func(b *testing.B) {
			setup(b)
			res := check(b)
			dir := b.TempDir()
			for b.Loop() {
				_ = res.Headline() + res.Explain(s.Contract) + res.Excerpt(40)
				if _, err := linearizability.WriteFailure(dir, hist, res, s.Contract, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
