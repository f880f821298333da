package sim

import (
	"context"
	"slices"

	"github.com/storecheck/storecheck/fault"
)

// Shrink reduces a failing schedule to a small one that still fails the same
// way (the same Failure.Signature): fewer steps (operations, switches at
// yield points, faults), fewer clients and processes, smaller clock jumps. It tries at most budget runs and
// returns the smallest failing schedule it found with its result.
func Shrink(ctx context.Context, subj Subject, b Launcher, failing Result, dir string, budget int) (Result, error) {
	d, unmount, err := diskFor(subj, failing.Schedule, dir)
	defer unmount()
	if err != nil {
		return failing, err
	}
	sig := failing.Failure.Signature()
	best := failing
	runs := 0
	// try runs a candidate and keeps it when it fails the same way.
	try := func(s Schedule) (bool, error) {
		if runs >= budget {
			return false, nil
		}
		runs++
		res, err := run(ctx, subj, b, s, dir, d)
		if err != nil {
			return false, err
		}
		if res.Failure != nil && res.Failure.Signature() == sig {
			// Nothing after the failure matters.
			res.Schedule.Steps = res.Schedule.Steps[:res.Failure.Step+1]
			best = res
			return true, nil
		}
		return false, nil
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
			for i := 0; i+n <= len(best.Schedule.Steps); {
				steps := slices.Concat(best.Schedule.Steps[:i], best.Schedule.Steps[i+n:])
				ok, err := try(with(steps))
				if err != nil {
					return best, err
				}
				if ok {
					progress = true
				} else {
					i += n
				}
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
