package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
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
	// EventPowerCutAtSync: the power went at a sync (fault.SyncCrash).
	EventPowerCutAtSync = "power cut at a sync"
	// EventPowerCutTorn: a cut kept some of the unsynced writes but not
	// all, or tore one. Only a backend that leaves writes unsynced when it
	// answers reaches it.
	EventPowerCutTorn = "power cut, torn"
	// EventPowerCutUndidEntry: a cut undid a directory entry op (a create,
	// rename, unlink or link not yet durable under the run's entry model).
	EventPowerCutUndidEntry = "power cut undid a directory entry"
)

// entryStream seeds, with the run's seed, the stream its directory-entry
// model is drawn from: a stream of its own, so that no other draw moves.
const entryStream = 0xd1e27

// drawEntryModel is the directory-entry model (lossyfs.EntryModels) the
// run of seed follows on a forgetful file system.
func drawEntryModel(seed int64) string {
	r := rand.New(rand.NewPCG(uint64(seed), entryStream))
	return lossyfs.EntryModels[r.IntN(len(lossyfs.EntryModels))]
}

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
func (e *engine) strikePower(i int, st Step, kept lossyfs.Fates, keepEntries int) bool {
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
	c, err := e.disk.CutEntries(e.work, kept, keepEntries)
	if err != nil {
		e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: err})
		return false
	}
	// A cut disarms a power cut at a sync.
	e.syncArmed = false
	e.cover(EventPowerCut)
	if len(kept) > 0 {
		e.traceKept(i, st.Process, c)
	}
	e.traceUndone(i, st.Process, c)
	e.cutStates = append(e.cutStates, fmt.Sprintf("at step %d %s", i, crashState(e.sched.EntryModel, kept, c)))
	return e.restartAfterCut(i, st)
}

// crashState names the state a cut left: which of the unsynced writes it
// kept, whole or torn (the fates it gave them), and which directory entry
// ops not yet durable it undid, under the run's entry model.
func crashState(entryModel string, fates lossyfs.Fates, c lossyfs.Cut) string {
	n := 0
	for _, k := range c.Unsynced {
		n += k
	}
	var writes string
	switch {
	case n == 0:
		writes = "no write was unsynced"
	case len(fates) == 0:
		writes = fmt.Sprintf("every one of the %d unsynced writes lost", n)
	default:
		s := make([]string, len(fates))
		for j, k := range fates {
			s[j] = k.String()
		}
		writes = fmt.Sprintf("of the %d unsynced writes only %s survive (%d whole, %d torn)", n, strings.Join(s, ", "), c.Kept, c.Torn)
	}
	var names string
	switch {
	case entryModel == lossyfs.EntriesDurable:
		names = "every directory entry op durable at once (no entry model)"
	case len(c.Undone) == 0:
		names = fmt.Sprintf("no directory entry op undone (%s model)", entryModel)
	default:
		names = fmt.Sprintf("undone, as not yet durable under the %s model: %s", entryModel, strings.Join(c.Undone, ", "))
	}
	return writes + "; " + names
}

// traceKept says how many unsynced writes a cut kept.
func (e *engine) traceKept(i, process int, c lossyfs.Cut) {
	n := 0
	for _, k := range c.Unsynced {
		n += k
	}
	e.trace(i, process, fmt.Sprintf("  %d of the %d unsynced writes survive whole, %d torn", c.Kept, n, c.Torn))
	if c.Torn > 0 || (c.Kept > 0 && c.Kept < n) {
		e.cover(EventPowerCutTorn)
	}
}

// traceUndone names the directory entry ops a cut undid (the run's entry
// model's: Schedule.EntryModel).
func (e *engine) traceUndone(i, process int, c lossyfs.Cut) {
	if len(c.Undone) == 0 {
		return
	}
	e.res.Coverage[EventPowerCutUndidEntry]++
	e.trace(i, process, fmt.Sprintf("  the cut undid %d directory entry ops not yet durable (%s model): %s",
		len(c.Undone), e.sched.EntryModel, strings.Join(c.Undone, ", ")))
}

// syncCut is a power cut at a sync that struck: what the disk lost and
// kept.
type syncCut struct {
	cut   lossyfs.Cut
	fates lossyfs.Fates
}

// struckAtSync reports whether the power cut at a sync armed on the disk
// has struck (asking the disk once per step while it has not).
func (e *engine) struckAtSync() bool {
	if e.syncCut != nil {
		return true
	}
	c, fates, ok, err := e.disk.Struck(e.work)
	if err != nil {
		// Told at the next step's strike, which fails on the same disk.
		return false
	}
	if ok {
		e.syncCut = &syncCut{cut: c, fates: fates}
	}
	return ok
}

// strikeAtSync ends the run's power cut at a sync, which struck during
// step i: every process dies (what is in flight is indefinite), and each
// starts again on what was durable, as after a PowerCut.
func (e *engine) strikeAtSync(i int, st Step) bool {
	sc := e.syncCut
	e.syncArmed, e.syncCut = false, nil
	for _, p := range e.procs {
		doom(p.p)
	}
	e.cover(EventPowerCutAtSync)
	e.trace(i, st.Process, "  the power went at the sync")
	if len(sc.fates) > 0 {
		s := make([]string, len(sc.fates))
		for j, k := range sc.fates {
			s[j] = k.String()
		}
		e.trace(i, st.Process, "  of the unsynced writes only these survive: "+strings.Join(s, ", "))
		e.traceKept(i, st.Process, sc.cut)
	}
	e.traceUndone(i, st.Process, sc.cut)
	e.cutStates = append(e.cutStates, fmt.Sprintf("at step %d (the power went at a sync) %s", i, crashState(e.sched.EntryModel, sc.fates, sc.cut)))
	return e.restartAfterCut(i, st)
}

// restartAfterCut kills every process of the run, whose folder's power was
// cut at step i, gives the power back and starts them again.
func (e *engine) restartAfterCut(i int, st Step) bool {
	e.cutAt = i
	for _, p := range e.procs {
		// Each operation the cut hits ends on the cut's row, in its own
		// column, as abandon judges it.
		for _, f := range p.flights {
			if f.yields == 1 {
				e.traceOf(i, p, f, cutBeforeWrite)
			} else {
				e.traceOf(i, p, f, cutInFlight)
			}
		}
		e.abandon(p)
		p.p.Kill()
	}
	if err := e.disk.Thaw(e.work); err != nil {
		e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: err})
		return false
	}
	// Every process died at once: the first to open recovers the WAL for
	// good (oracle.recovered).
	e.oracle.recovered(true, true)
	e.cutting = true
	defer func() { e.cutting = false }()
	for _, p := range e.procs {
		if err := e.start(p); err != nil {
			e.fail(reopenFailure(i, st, p.n, e.sched.Store, strings.Join(e.cutStates, "; then "), err))
			return false
		}
	}
	return true
}

// reopenFailure is a process that could not start again after the power
// cut of step i. A store that answers its open with an I/O error (SQLite's
// "file is not a database": a header it never synced, torn) cannot open
// what it left durable, which breaks the rule that every acknowledged
// write survives the cut: a verdict on the backend, not a failure of it.
// Any other error (the program died, broke the protocol) is the backend's
// own failure.
func reopenFailure(i int, st Step, process int, store, state string, err error) *Failure {
	what := fmt.Sprintf("%04d %s", i, st)
	if spec.KindOf(err) != spec.ErrIO {
		return &Failure{Step: i, What: what, Backend: fmt.Errorf("restart process %d: %w", process, err)}
	}
	rule := spec.PowerLossRule(store)
	return &Failure{Step: i, What: what + fmt.Sprintf(", then process %d opened again", process),
		Op: "open after the power cut", Got: model.Fail(spec.ErrIO), Message: err.Error(),
		Allowed: []string{"ok (the store opens what it left durable)"}, Rules: []string{rule},
		Why: "the store cannot open the files the cut left, so nothing it acknowledged before it survives", PowerCutStep: i, CrashState: state}
}
