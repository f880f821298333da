package sim

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
)

// Power cuts. A run that may cut the power keeps its database on a
// forgetful file system (fault/lossyfs) the simulator mounts under the
// scratch folder, one mount for a sweep (when its first seed that cuts the
// power starts), each run in a folder of its own on it; a cut loses what
// the backend never synced in that run's folder, kills every process at
// once and starts them again. A seed that draws no cut runs on a plain
// folder: its run is the same. Where the mount cannot be
// made (no FUSE device, no right to mount), runs go on without power cuts
// and their results say why (Result.NoPowerCuts), so a report says power
// loss was not explored; never a failure.
//
// The seed draws power cuts from a random stream of their own, so that a
// run without them (power cuts off, or no FUSE here) is the very run it was
// before power cuts existed, step for step, and a schedule says in its own
// steps whether it cut the power.

// Coverage events of power cuts.
const (
	// EventPowerCut: the power was cut (every process died at once and
	// what was never synced was lost).
	EventPowerCut = "power cut"
	// EventPowerCutTorn: a cut kept a prefix of one file's unsynced
	// writes. Only a backend that leaves writes unsynced when it answers
	// reaches it.
	EventPowerCutTorn = "power cut, torn"
)

// power is the power cuts a seed draws: rate is the share of the run's
// decisions that cut, the sum of the rates the seed picks for the kinds of
// fault that act on a forgetful file system (fault.PowerCut), each from
// its stream of its own.
type power struct {
	rate float64
}

func drawPower(seed int64) *power {
	pw := &power{}
	for _, k := range fault.Kinds() {
		if k.ForgetfulDisk && k.Draw != nil {
			pw.rate += own(k, seed).rate
		}
	}
	return pw
}

// lazyDisk is the forgetful file system the runs of a sweep (or of one
// Explore) under dir cut the power on: mounted when the first run whose
// seed cuts the power starts, so that a sweep whose seeds cut none mounts
// nothing, and undone by close. Why the runs cannot cut the power, when it
// is known before mounting (power cuts off, a backend held to less where
// the seed allows it, no FUSE here), is every run's; a mount that fails
// is the reason of the runs that would have cut.
type lazyDisk struct {
	dir   string
	early string
	once  sync.Once
	d     *lossyfs.Disk
	why   string
	done  func()
}

func newLazyDisk(p Params, subj Subject, dir string) *lazyDisk {
	l := &lazyDisk{dir: dir}
	if !p.PowerCuts {
		l.early = "power cuts are off"
	} else if why := subj.Model.Contract().PowerLossExempt(subj.Capabilities); why != "" {
		l.early = why
	} else if err := lossyfs.Available(); err != nil {
		l.early = err.Error()
	}
	return l
}

// forSeed is the disk seed's run is on (nil: a plain folder under dir),
// and why it cannot cut the power ("" when it can, or draws no cut).
func (l *lazyDisk) forSeed(seed int64) (*lossyfs.Disk, string) {
	if l.early != "" {
		return nil, l.early
	}
	if drawPower(seed).rate == 0 {
		return nil, ""
	}
	l.once.Do(func() { l.d, l.why, l.done = mountDisk(l.dir) })
	return l.d, l.why
}

func (l *lazyDisk) close() {
	if l.done != nil {
		l.done()
	}
}

// mountDisk mounts a forgetful file system under dir.
func mountDisk(dir string) (*lossyfs.Disk, string, func()) {
	d, err := lossyfs.Mount(dir)
	if err != nil {
		return nil, err.Error(), func() {}
	}
	return d, "", func() { d.Unmount() }
}

// cutsPower is the first step of s that cuts the power (a fault whose kind
// acts on a forgetful file system), or -1.
func cutsPower(s Schedule) int {
	return slices.IndexFunc(s.Steps, func(st Step) bool {
		k := fault.KindOf(st.Fault)
		return st.Kind == StepFault && k != nil && k.ForgetfulDisk
	})
}

// ErrNoPowerLoss is what Run and Shrink answer (wrapped, with the step and
// the reason) for a schedule that cuts the power where no forgetful file
// system can be mounted, or for a backend held to survive no power cut.
var ErrNoPowerLoss = errors.New("power loss cannot be simulated here")

// diskFor is the disk a replay of s needs: none when s cuts no power; an
// error saying why when it does and subj's backend is held to survive no
// power cut (spec.PowerLossExempt), or the mount cannot be made here.
func diskFor(subj Subject, s Schedule, dir string) (*lossyfs.Disk, func(), error) {
	at := cutsPower(s)
	if at < 0 {
		return nil, func() {}, nil
	}
	if why := subj.Model.Contract().PowerLossExempt(subj.Capabilities); why != "" {
		return nil, func() {}, fmt.Errorf("step %d cuts the power, and %w for this backend: %s", at, ErrNoPowerLoss, why)
	}
	d, why, done := mountDisk(dir)
	if d == nil {
		return nil, done, fmt.Errorf("step %d cuts the power, and %w: %s", at, ErrNoPowerLoss, why)
	}
	return d, done, nil
}

// strikePower cuts the power of the run's folder: every process dies at
// once (the operations in flight are indefinite), the disk loses what was
// never synced, and every process starts again on what was durable. The
// cut comes first: in process, a killed handle is closed, and SQLite's
// close of its last connection checkpoints the WAL into the database and
// syncs it, which would make unsynced commits durable; after the cut that
// close fails, as it would with no power.
func (e *engine) strikePower(i int, st Step, torn lossyfs.Torn) bool {
	if e.disk == nil {
		e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: fmt.Errorf("the run has no forgetful file system to cut the power of")})
		return false
	}
	// From the cut on, a process may die of it before the kill below (a
	// SIGBUS on its mapped -shm, an exit after EIO): that death is the
	// cut's, not a backend failure.
	for _, p := range e.procs {
		doom(p.p)
	}
	c, err := e.disk.Cut(e.work, torn)
	if err != nil {
		e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: err})
		return false
	}
	e.res.Coverage[EventPowerCut]++
	e.cutAt = i
	if torn.File != "" {
		n := c.Unsynced[torn.File]
		e.trace(i, st.Process, fmt.Sprintf("  torn: %d of the %d unsynced writes of %s survive", c.Kept, n, torn.File))
		if c.Kept > 0 && c.Kept < n {
			e.res.Coverage[EventPowerCutTorn]++
		}
	}
	for _, p := range e.procs {
		if p.flight != nil {
			// Each operation the cut hits ends on the cut's row, in its
			// own column, as abandon judges it.
			if p.flight.yields == 1 {
				e.trace(i, p.n, cutBeforeWrite)
			} else {
				e.trace(i, p.n, cutInFlight)
			}
			e.abandon(p)
		}
		p.p.Kill()
	}
	if err := e.disk.Thaw(e.work); err != nil {
		e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: err})
		return false
	}
	for _, p := range e.procs {
		if err := e.start(p); err != nil {
			e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: fmt.Errorf("restart process %d: %w", p.n, err)})
			return false
		}
	}
	return true
}
