package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/sim"
)

// BenchmarkSimOverTheWire is one seed of the continuity store (200
// operations, 2 processes) through the exec adapter against the served
// reference, one process per simulated process: operations paused at every
// yield point (Yields), and run whole (Whole). It reports simulated
// operations per second; compare the two in one run.
func BenchmarkSimOverTheWire(b *testing.B) {
	st, _ := stores.Lookup("continuity")
	backend := sim.Exec(servedOptions(bugs.Bug{}), st.Name())
	for _, v := range []struct {
		name  string
		whole bool
	}{{"Yields", false}, {"Whole", true}} {
		b.Run(v.name, func(b *testing.B) {
			ops, seed := 0, int64(0)
			start := time.Now()
			for b.Loop() {
				res, err := sim.Explore(context.Background(), subject(st), backend, seed, sim.Params{Whole: v.whole}, sim.ScratchDir())
				if err != nil || res.Failure != nil {
					b.Fatal(err, res.Failure)
				}
				ops += res.Ops
				seed++
			}
			b.ReportMetric(float64(ops)/time.Since(start).Seconds(), "ops/s")
		})
	}
}
