package sim

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"github.com/storecheck/storecheck/fault"
)

// Shrink reduces a failing schedule to a small one that still fails the same
// way (the same Failure.Signature): fewer steps (operations, switches at
// yield points, faults), fewer clients and processes, smaller clock jumps. It tries at most budget runs and
// returns the smallest failing schedule it found with its result. It is
// ShrinkWith one candidate at a time.
func Shrink(ctx context.Context, subj Subject, b Launcher, failing Result, dir string, budget int) (Result, error) {
	return ShrinkWith(ctx, subj, b, failing, dir, ShrinkOptions{Budget: budget, Workers: 1})
}

// ShrinkOptions are how a shrink spends its runs.
type ShrinkOptions struct {
	// Budget is the most runs the shrink counts.
	Budget int
	// Workers is how many candidates of the removal of steps run at once
	// (0: one per CPU). Over the wire most of a run is the backend's
	// processes starting and its file system's round trips, not the kit's
	// CPU, so candidates run side by side shrink faster even on few
	// cores. The result is the one a single worker gives, byte for byte:
	// the first candidate in order that fails the same way wins, as it
	// would one at a time, and what ran beside it after it is not counted.
	Workers int
}

// ShrinkWith is Shrink with its options. The result's ShrinkRuns is how many
// runs it counted.
func ShrinkWith(ctx context.Context, subj Subject, b Launcher, failing Result, dir string, o ShrinkOptions) (out Result, err error) {
	budget, workers := o.Budget, o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	d, unmount, err := diskFor(subj, failing.Schedule, dir)
	defer unmount()
	if err != nil {
		return failing, err
	}
	sig := failing.Failure.Signature()
	best := failing
	runs := 0
	defer func() { out.ShrinkRuns = runs }()
	same := func(res Result) bool { return res.Failure != nil && res.Failure.Signature() == sig }
	keep := func(res Result) {
		// Nothing after the failure matters.
		res.Schedule.Steps = res.Schedule.Steps[:res.Failure.Step+1]
		best = res
	}
	// tryFirst runs candidates side by side, workers at a time, and keeps
	// the first in order that fails the same way: it answers its index
	// (-1: none did), counting the runs one at a time would have made.
	tryFirst := func(cands []Schedule) (int, error) {
		for lo := 0; lo < len(cands); lo += workers {
			hi := min(lo+workers, len(cands), lo+budget-runs)
			if hi <= lo {
				return -1, nil
			}
			results := make([]Result, hi-lo)
			errs := make([]error, hi-lo)
			var wg sync.WaitGroup
			for j := lo; j < hi; j++ {
				wg.Add(1)
				go func(j int) {
					defer wg.Done()
					results[j-lo], errs[j-lo] = run(ctx, subj, b, cands[j], dir, d)
				}(j)
			}
			wg.Wait()
			for j := lo; j < hi; j++ {
				runs++
				if errs[j-lo] != nil {
					return -1, errs[j-lo]
				}
				if same(results[j-lo]) {
					keep(results[j-lo])
					return j, nil
				}
			}
		}
		return -1, nil
	}
	// try runs one candidate and keeps it when it fails the same way.
	try := func(s Schedule) (bool, error) {
		j, err := tryFirst([]Schedule{s})
		return j == 0, err
	}
	with := func(steps []Step) Schedule {
		s := best.Schedule
		s.Steps = steps
		return s
	}
	if _, err := try(with(best.Schedule.Steps[:best.Failure.Step+1])); err != nil {
		return best, err
	}
	for progress := true; progress && runs < budget; {
		progress = false
		// Remove chunks of steps, halving the chunk size.
		for n := len(best.Schedule.Steps) / 2; n >= 1; n /= 2 {
			for i := 0; i+n <= len(best.Schedule.Steps) && runs < budget; {
				// The candidates one at a time would try from i on, until
				// one fails the same way: chunk i removed, chunk i+n, ...
				var cands []Schedule
				for k := i; k+n <= len(best.Schedule.Steps); k += n {
					cands = append(cands, with(slices.Concat(best.Schedule.Steps[:k], best.Schedule.Steps[k+n:])))
				}
				j, err := tryFirst(cands)
				if err != nil {
					return best, err
				}
				if j < 0 {
					break
				}
				progress = true
				i += j * n
			}
		}
		// Smaller faults (shorter jumps and pauses, cuts less torn), as
		// each fault's kind shrinks it.
		for i := 0; i < len(best.Schedule.Steps); i++ {
			for {
				st := best.Schedule.Steps[i]
				smaller, ok := fault.Smaller(st.Fault)
				if st.Kind != StepFault || !ok {
					break
				}
				steps := slices.Clone(best.Schedule.Steps)
				steps[i].Fault = smaller
				kept, err := try(with(steps))
				if err != nil {
					return best, err
				}
				if !kept {
					break
				}
				progress = true
			}
		}
		// Fewer clients and processes: fold client c onto c mod k.
		for k := 1; k < best.Schedule.Clients; k++ {
			s := with(slices.Clone(best.Schedule.Steps))
			s.Clients, s.Processes = k, min(s.Processes, k)
			for i := range s.Steps {
				s.Steps[i].Client %= k
				s.Steps[i].Process %= s.Processes
			}
			if ok, err := try(s); err != nil {
				return best, err
			} else if ok {
				progress = true
				break
			}
		}
		if best.Schedule.Processes > 1 {
			s := with(slices.Clone(best.Schedule.Steps))
			s.Processes = 1
			for i := range s.Steps {
				s.Steps[i].Process = 0
			}
			if ok, err := try(s); err != nil {
				return best, err
			} else if ok {
				progress = true
			}
		}
	}
	return best, nil
}
