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
// Plain and mount are compared within one run: run the benchmark whole,
// -count 1, several times over (go test ./sim -run '^$' -bench
// 'BenchmarkPowerLossDisk/store=.*/disk=(plain|lossyfs)$' -benchtime 12x),
// and take the median of each; -count 4 runs a sub-benchmark four times in
// a row, so a change of the machine's load between plain and mount skews it.
//
// Issue 27 item 6 asks for the mount within 2x of the plain folder, per
// store. Measured 2026-12-04, four rounds, each main's binary then this
// one's, on the 2-core machine under a load average of 5 to 7 (other
// sweeps running; plain times moved by up to 40% from round to round, so
// the ratios are rough), median ms/seed, plain -> mount:
//
//	before the sync's page stores: continuity 28.2 -> 71.5 (2.54x),
//	  runtime 50.5 -> 91.8 (1.82x), client 53.1 -> 107.8 (2.03x)
//	after:  continuity 28.4 -> 62.4 (2.20x), runtime 37.4 -> 80.7 (2.16x),
//	  client 50.0 -> 99.9 (2.00x)
//
// The mount's own times fell 13%, 12% and 7% in the same rounds; on a quiet
// machine (before) the ratios were 2.84x, 2.25x and 2.36x. On a quiet
// machine after, with the client's 501-row big draws in the sweep, three
// rounds run whole: continuity 28.8 -> 69.1 (2.40x), runtime 38.4 -> 82.8
// (2.16x), client 55.9 -> 141.2 (2.53x): the 2x is not met.
//
// Where the time goes: the mount costs a FUSE round trip per request (the
// client's thread sleeps, the server wakes, reads the request, answers,
// the client wakes: two context switches, and on this virtual machine a
// wake-up of the other vCPU each way), 20 to 25us each, of which the
// server's own work is about 13us of CPU (the log of each write: a stat, a
// read of the bytes it replaces, the write, copies; go-fuse's reading and
// answering; Go's scheduler), measured one write at a time. A seed of the
// continuity store makes about 780 requests (9357 over the 12 seeds,
// fault/lossyfs/store.go has them by opcode): 543 WRITEs (two or three per
// WAL frame: SQLite writes a frame's 24-byte header and its page apart,
// and, without the kernel's writeback cache, which the crash model rules
// out, each write is a request, split where a page is not up to date; 93
// for the checkpoints' pages), 37 FSYNCs, and for each connection opened
// (about 25 a seed, each opening the WAL anew: the writer and readers of
// every process start) a stat, an OPEN, an fstat, the fchown SQLite does
// as root and a RELEASE; 34 for the folder syncs (OPENDIR, FSYNCDIR,
// RELEASEDIR). Reads no longer cost: a
// sync hands the kernel the pages it would have read back
// (fault/lossyfs/store.go: READs 1859 -> 96). What is left to try: the
// kernel's no-opendir mode (answering OPENDIR with ENOSYS saves two
// requests a folder sync, 3%, but go-fuse then lists folders empty: it
// needs READDIR served without a handle); fewer connections opened per
// seed is the reference store's choice, not the mount's.
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
