package sim

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability/model"
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

// BenchmarkRuntimeSeed is BenchmarkSeed for the runtime store, its reads
// judged as the seed runs them (statement by statement) or, for a backend
// that declares atomic_reads, as one step.
func BenchmarkRuntimeSeed(b *testing.B) {
	for _, atomic := range []bool{false, true} {
		name := "Statements"
		if atomic {
			name = "Atomic"
		}
		b.Run(name, func(b *testing.B) {
			subj := runtimeSubject
			subj.Model = model.Runtime{AtomicReads: atomic}
			dir, _ := os.MkdirTemp("/dev/shm", "simbench-")
			defer os.RemoveAll(dir)
			seed := int64(0)
			for b.Loop() {
				res, err := Explore(context.Background(), subj, InProcess(stores.Backend(stores.Options{}), "runtime"), seed, Params{}, dir)
				if err != nil || res.Failure != nil {
					b.Fatal(err, res.Failure)
				}
				seed++
			}
		})
	}
}

// BenchmarkTimeToFirstFailure is how long a sweep of the default seeds
// takes to find each racy bug of the corpus, in process: the sweep starts
// at ten different seeds (1, 101, 201, …, so the figure does not hang on
// one lucky seed) and stops at its first failing seed. It reports the
// median and the worst of the ten times, and the median number of seeds
// run. A sweep that runs 100 seeds without a failure fails the benchmark:
// the default sweep must find every racy bug.
func BenchmarkTimeToFirstFailure(b *testing.B) {
	for _, bug := range []bugs.Bug{bugs.ContinuityUpsertCheckOutsideTx, bugs.ContinuityProcessLock,
		bugs.RuntimeLeaseClaimOutsideTx, bugs.ClientSettleCheckOutsideTx} {
		// The subject as storecheck sim runs it, the store's rival included.
		k, _ := stores.Lookup(bug.Store())
		subj := Subject{Model: k.Model, NewWorkload: k.Workload, Rival: k.Rival}
		b.Run(bug.Name(), func(b *testing.B) {
			ctx := context.Background()
			dir, _ := os.MkdirTemp("/dev/shm", "simbench-")
			defer os.RemoveAll(dir)
			backend := InProcess(stores.Backend(stores.Options{Bug: bug}), bug.Store())
			var times []time.Duration
			var seedsRun []int
			for b.Loop() {
				times, seedsRun = times[:0], seedsRun[:0]
				for start := int64(1); start <= 901; start += 100 {
					began := time.Now()
					n := 0
					for seed := start; ; seed++ {
						if n == 100 {
							b.Fatalf("seeds %d..%d never found %s", start, seed-1, bug.Name())
						}
						n++
						res, err := Explore(ctx, subj, backend, seed, Params{}, dir)
						if err != nil {
							b.Fatal(err)
						}
						if res.Failure != nil {
							break
						}
					}
					times, seedsRun = append(times, time.Since(began)), append(seedsRun, n)
				}
			}
			slices.Sort(times)
			slices.Sort(seedsRun)
			b.ReportMetric(times[len(times)/2].Seconds(), "median-s")
			b.ReportMetric(times[len(times)-1].Seconds(), "worst-s")
			b.ReportMetric(float64(seedsRun[len(seedsRun)/2]), "median-seeds")
		})
	}
}

// BenchmarkPowerLossDisk is what the forgetful file system costs a sweep,
// per store: the same twelve seeds (1..12, of which six cut the power, as
// half the default sweep's do) in process against the reference,
// on a plain folder in memory (disk=plain), on the forgetful file system
// with power cuts off (disk=lossyfs: the same schedules, so the file
// system's own cost), and with power cuts on as storecheck sim runs them
// (disk=lossyfs-cuts: the schedules then cut the power and restart every
// process). It reports the time per seed; compare with benchstat -col /disk.
func BenchmarkPowerLossDisk(b *testing.B) {
	d, why, done := mountDisk(ScratchDir())
	defer done()
	if d == nil {
		b.Skipf("power loss not explored: %s", why)
	}
	for _, k := range stores.All {
		subj := Subject{Model: k.Model, NewWorkload: k.Workload, Rival: k.Rival}
		backend := InProcess(stores.Reference(), k.Name())
		for _, mode := range []struct {
			name string
			disk bool
			p    Params
		}{{"plain", false, Params{}}, {"lossyfs", true, Params{}}, {"lossyfs-cuts", true, Params{PowerCuts: true}}} {
			b.Run("store="+k.Name()+"/disk="+mode.name, func(b *testing.B) {
				ctx := context.Background()
				dir, _ := os.MkdirTemp("/dev/shm", "simbench-")
				defer os.RemoveAll(dir)
				on := d
				if !mode.disk {
					on = nil
				}
				seeds := 0
				for b.Loop() {
					for seed := int64(1); seed <= 12; seed++ {
						res, err := explore(ctx, subj, backend, seed, mode.p, dir, on, "")
						if err != nil || res.Failure != nil {
							b.Fatal(err, res.Failure)
						}
						seeds++
					}
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(seeds), "ms/seed")
			})
		}
	}
}
