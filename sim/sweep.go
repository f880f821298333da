package sim

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// DefaultSeeds is the default sweep: the seeds every store's coverage is
// measured on, and the ones CI runs when it names none.
var DefaultSeeds = SeedRange{First: 1, Last: 100}

// SeedRange is an inclusive range of seeds, written A..B (or one seed N).
type SeedRange struct{ First, Last int64 }

// ParseSeeds reads "A..B" or "N".
func ParseSeeds(s string) (SeedRange, error) {
	a, b, ranged := strings.Cut(s, "..")
	first, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	if err != nil {
		return SeedRange{}, fmt.Errorf("seeds %q: want N or A..B", s)
	}
	last := first
	if ranged {
		if last, err = strconv.ParseInt(strings.TrimSpace(b), 10, 64); err != nil {
			return SeedRange{}, fmt.Errorf("seeds %q: want N or A..B", s)
		}
	}
	if last < first {
		return SeedRange{}, fmt.Errorf("seeds %q: the range ends before it starts", s)
	}
	return SeedRange{first, last}, nil
}

func (r SeedRange) String() string {
	if r.First == r.Last {
		return strconv.FormatInt(r.First, 10)
	}
	return fmt.Sprintf("%d..%d", r.First, r.Last)
}

// Shard is the i-th of n parts of a sweep (1 <= i <= n), for CI matrix jobs:
// seed s belongs to shard ((s - first) mod n) + 1.
type Shard struct{ I, N int }

// ParseShard reads "i/n".
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 1 <= i <= n", s)
	}
	return Shard{i, n}, nil
}

// Seeds lists the range's seeds that fall in the shard.
func (r SeedRange) Seeds(sh Shard) []int64 {
	if sh.N == 0 {
		sh = Shard{1, 1}
	}
	var out []int64
	for s := r.First; s <= r.Last; s++ {
		if int((s-r.First)%int64(sh.N))+1 == sh.I {
			out = append(out, s)
		}
	}
	return out
}

// ScratchDir is where runs keep their databases: memory-backed when the
// machine has it (so fsync costs nothing), else the system's temp folder.
func ScratchDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// Sweep runs the schedule of every seed, workers at a time (a sampled share
// of them twice, their traces compared: recheck.go), and calls done
// with each result in seed order (results are held until every earlier seed
// is done, so what done sees does not depend on scheduling). It stops
// starting seeds when ctx ends or stop returns true. With p.PowerCuts it
// mounts one forgetful file system under dir for all its runs that cut the
// power (when the first of them starts), and undoes it before it returns.
func Sweep(ctx context.Context, subj Subject, b Launcher, seeds []int64, p Params, workers int, dir string,
	done func(Result), stop func() bool) error {
	disk := newLazyDisk(p, subj, dir)
	defer disk.close()
	plans := make([]plan, len(seeds))
	for i, s := range seeds {
		plans[i] = plan{seed: s}
	}
	_, err := sweepPlans(ctx, subj, b, plans, p, workers, dir, disk, done, stop)
	return err
}

// plan is a run a sweep makes: seed's, drawn afresh at each of branches.
type plan struct {
	seed     int64
	branches []Branch
}

// sweepPlans runs the plans, workers at a time (the blind ones of a
// sampled share of seeds twice, their traces compared: recheck.go), calls
// done with each result in plan order, and says how many it ran. It stops
// starting plans when ctx ends or stop returns true.
func sweepPlans(ctx context.Context, subj Subject, b Launcher, plans []plan, p Params, workers int, dir string, disk *lazyDisk,
	done func(Result), stop func() bool) (int, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type slot struct {
		res Result
		err error
	}
	results := make([]chan slot, len(plans))
	for i := range results {
		results[i] = make(chan slot, 1)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pl := plans[i]
				d, noPower := disk.forSeed(pl.seed)
				res, err := exploreFrom(ctx, subj, b, pl.seed, pl.branches, p, dir, d, noPower)
				if err == nil && res.Stalled == "" && pl.branches == nil && Rechecked(pl.seed) {
					again, err2 := exploreFrom(ctx, subj, b, pl.seed, nil, p, dir, d, noPower)
					// A second run the kit stalled in says nothing.
					if err2 == nil && again.Stalled == "" {
						res.Rechecked = true
						res.Nondeterminism = diverge(res.Moves, again.Moves)
					}
				}
				results[i] <- slot{res, err}
			}
		}()
	}
	go func() {
		defer close(next)
		for i := range plans {
			if ctx.Err() != nil || (stop != nil && stop()) {
				return
			}
			next <- i
		}
	}()
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	var firstErr error
	ran := 0
	for i := range plans {
		var s slot
		select {
		case s = <-results[i]:
		case <-finished:
			// Every worker is done: plan i ran only if its result is here.
			select {
			case s = <-results[i]:
			default:
				return ran, firstErr
			}
		}
		ran++
		if s.err != nil && firstErr == nil {
			firstErr = s.err
		}
		if s.err == nil {
			done(s.res)
		}
	}
	return ran, firstErr
}

// Coverage adds up the events of many runs.
type Coverage map[string]int

// Add counts a run's events.
func (c Coverage) Add(r Result) {
	for k, v := range r.Coverage {
		c[k] += v
	}
}

// Missing lists the events of want the coverage never reached, sorted.
func (c Coverage) Missing(want []string) []string {
	var out []string
	for _, w := range want {
		if c[w] == 0 {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}
