package sim

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/bugs"
)

// BenchmarkSeed is one seed of the default length (200 operations, 8
// clients, 2 processes) run in process against the reference, with the
// oracle, operations paused at their yield points (Yields) or run whole
// (Whole, the sequential simulator); it reports simulated operations per
// second and simulated time per wall time.
func BenchmarkSeed(b *testing.B) {
	b.Run("Yields", func(b *testing.B) { benchmarkSeed(b, Params{}) })
	b.Run("Whole", func(b *testing.B) { benchmarkSeed(b, Params{Whole: true}) })
}

func benchmarkSeed(b *testing.B, p Params) {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("/dev/shm", "simbench-")
	defer os.RemoveAll(dir)
	var ops int
	var sim time.Duration
	start := time.Now()
	seed := int64(0)
	for b.Loop() {
		res, err := Explore(ctx, continuitySubject, referenceBackend(bugs.Bug{}), seed, p, dir)
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
