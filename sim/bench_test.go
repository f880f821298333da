package sim

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/bugs"
)

// BenchmarkSeed is one seed of the default length (200 steps, 8 clients, 2
// processes) run in process against the reference, with the oracle; it
// reports simulated operations per second and simulated time per wall time.
func BenchmarkSeed(b *testing.B) {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("/dev/shm", "simbench-")
	defer os.RemoveAll(dir)
	var ops int
	var sim time.Duration
	start := time.Now()
	seed := int64(0)
	for b.Loop() {
		res, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, Params{}, dir)
		if err != nil || res.Failure != nil {
			b.Fatal(err, res.Failure)
		}
		ops += res.Ops
		sim += res.SimTime
		seed++
	}
	wall := time.Since(start)
	b.ReportMetric(float64(ops)/wall.Seconds(), "ops/s")
	b.ReportMetric(sim.Seconds()/wall.Seconds(), "sim-s/wall-s")
}
