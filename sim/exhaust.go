package sim

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/spec"
)

// Exhaustive mode: every crash state of every small workload, enumerated,
// not sampled (CrashMonkey, OSDI 2018, found every bug it studied within
// workloads of at most 3 file operations). A workload is up to Ops
// operations of one client on one process, each one of the first Choices
// draws of the store's own workload generator at its step (so that each
// operation is one a client may issue there: an id it refers to is one an
// earlier operation minted); every operation runs to its end. Then the
// power is cut, once, in every state the crash model allows at that point:
// each unsynced write (lossyfs.Fates) lost, kept, or torn, and each prefix
// of the entry ops not yet durable kept, under each entry model; then the
// processes start again and the workload reads back what it wrote, the
// oracle judging every answer. A cut after a workload's first k operations
// is the cut after the workload of those k alone, so each workload is cut
// at its end only.
//
// A failing sync is a dimension of the enumeration too (issue 27 item 1c):
// each sync of the last operation may fail once (fault.SyncError: EIO, the
// dirty data dropped as Linux drops it, a later sync succeeding without
// it); the operation then runs to its end, and the power is cut there in
// every crash state, as above.
//
// Complete, not sampled: a torn write keeps any subset of its sectors
// (SectorSize), so a write of n sectors has 2^n fates, and a cut's states
// are billions; they are checked by class (crashclass.go: crash states
// that leave files no reader can tell apart, computed from the files'
// bytes with SQLite's WAL read as its recovery reads it, are one class,
// and one adversarial representative of each is run). The summary counts
// both: every state, in how many classes, how many classes were run.
// MaxStates is a safety bound on the classes of one cut (a backend whose
// side files make too many); a region with more than regionCap states
// falls back to prefixes of its torn writes' sectors (the cut says so),
// and one with more than that even so is not reduced (its cut checks the
// old bounded enumeration, fewest writes surviving first). A cut stops at
// its first failing class.

// ExhaustParams bounds an exhaustive check.
type ExhaustParams struct {
	// Ops: workloads of 1 to Ops operations (default DefaultExhaustOps).
	Ops int
	// Choices: the draws of the generator an operation is one of (default
	// 3): there are Choices + Choices^2 + ... + Choices^Ops workloads, less
	// those that draw the same operations.
	Choices int
	// MaxStates is the most classes of crash states one cut checks
	// (default DefaultMaxStates).
	MaxStates int
	// EntryModels are the directory-entry models each workload is cut
	// under (default lossyfs.EntryModels).
	EntryModels []string
	// FailFast stops at the first state a failure is found in.
	FailFast bool
}

// The exhaustive check's defaults: workloads of up to 3 operations, and
// at most 4096 classes of crash states a cut (the reference's cuts have 6
// at most: none is left).
const (
	DefaultExhaustOps = 3
	DefaultMaxStates  = 4096
)

func (p ExhaustParams) withDefaults() ExhaustParams {
	if p.Ops <= 0 {
		p.Ops = DefaultExhaustOps
	}
	if p.Choices <= 0 {
		p.Choices = 3
	}
	if p.MaxStates <= 0 {
		p.MaxStates = DefaultMaxStates
	}
	if len(p.EntryModels) == 0 {
		p.EntryModels = lossyfs.EntryModels
	}
	return p
}

// ExhaustCut is one workload's cut: the crash states it has and how many
// were checked.
type ExhaustCut struct {
	Workload   string // its operations, as the trace names them
	EntryModel string
	// At is how many steps of the workload came before the cut; InFlight,
	// that its last operation had not ended (it waited at a yield point,
	// or at AtSync: "sync 2 of continuity.db-wal").
	At       int
	InFlight bool
	AtSync   string
	// FailedSync, for a cut after a failing sync: "sync 1 of x.db-wal".
	FailedSync string
	// Writes are the unsynced writes the cut gives fates to (file#n and
	// the sectors each covers), Entries the entry ops not yet durable.
	Writes  []string
	Sectors []int
	Entries int
	// States is how many crash states the cut has, Classes in how many
	// classes (crashclass.go), Checked how many classes were run.
	// Reduced is false where the states could not be put in classes
	// (each state its own class, fewest writes surviving first); Prefix,
	// that some torn writes kept prefixes of their sectors only.
	States, Classes *big.Int
	Checked         int
	Reduced, Prefix bool
}

// ExhaustResult is what an exhaustive check did.
type ExhaustResult struct {
	Workloads int // distinct workloads
	Cuts      []ExhaustCut
	// States is every cut's crash states, Classes their classes, Checked
	// the classes run, Unchecked those not (over the bound, or after a
	// cut's first failing class).
	States, Classes, Unchecked *big.Int
	Checked                    int
	// Nondeterministic: states whose run reached the cut with other
	// unsynced writes than its workload's first run had (not checked).
	Nondeterministic int
	Elapsed          time.Duration
	// MaxStates is the bound of a cut it ran with.
	MaxStates int
	// Failures are the runs that failed, the first state of each cut that
	// failed (each a schedule Run replays): a cut stops at it, its other
	// states counted as not checked.
	Failures []Result
}

// Summary is one line: how many states, in how many classes, how long.
func (r ExhaustResult) Summary() string {
	torn, failed, prefix := 0, 0, 0
	for _, c := range r.Cuts {
		if len(c.Writes) > 0 || c.Entries > 0 {
			torn++
		}
		if c.FailedSync != "" {
			failed++
		}
		if c.Prefix {
			prefix++
		}
	}
	states, classes, unchecked := orZero(r.States), orZero(r.Classes), orZero(r.Unchecked)
	every := "every one of"
	if unchecked.Sign() > 0 {
		every = "of"
	}
	s := fmt.Sprintf("%d workloads, %d cuts (%d with writes or entry ops not yet durable, %d after a failing sync): %s %s crash states, in %v classes, %d classes checked in %v",
		r.Workloads, len(r.Cuts), torn, failed, every, countOf(states), classes, r.Checked, r.Elapsed.Round(time.Millisecond))
	if unchecked.Sign() > 0 {
		s += fmt.Sprintf(" (%v classes not checked: over the bound of %d a cut, or after a cut's first failing class)", unchecked, r.MaxStates)
	} else {
		s += " (0 unchecked)"
	}
	if prefix > 0 {
		s += fmt.Sprintf(" (%d cuts with torn writes as prefixes of their sectors only)", prefix)
	}
	if r.Nondeterministic > 0 {
		s += fmt.Sprintf(" (%d not reached the same way twice, not checked)", r.Nondeterministic)
	}
	return s + fmt.Sprintf(", %d failing", len(r.Failures))
}

// Exhaust checks every crash state of every small workload of subj on b,
// on a forgetful file system mounted under dir (a *lossyfs.Unavailable
// error where none can be). The wall clock times it, for the report only:
// no run reads it.
func Exhaust(ctx context.Context, subj Subject, b Launcher, p ExhaustParams, dir string) (ExhaustResult, error) {
	p = p.withDefaults()
	start := time.Now()
	d, err := lossyfs.Mount(dir)
	if err != nil {
		return ExhaustResult{}, err
	}
	defer d.Unmount()
	x := &exhauster{subj: subj, b: b, d: d, p: p}
	ws := x.workloads()
	res := ExhaustResult{Workloads: len(ws), MaxStates: p.MaxStates, States: new(big.Int), Classes: new(big.Int), Unchecked: new(big.Int)}
	for _, model := range p.EntryModels {
		for _, w := range ws {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if err := x.cut(ctx, w, model, &res); err != nil {
				return res, err
			}
			if p.FailFast && len(res.Failures) > 0 {
				res.Elapsed = time.Since(start)
				return res, nil
			}
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func orZero(b *big.Int) *big.Int {
	if b == nil {
		return new(big.Int)
	}
	return b
}

// countOf writes a count of states: in full, and as a power of ten past
// a dozen digits.
func countOf(b *big.Int) string {
	t := b.String()
	if len(t) <= 12 {
		return t
	}
	return fmt.Sprintf("%s (%s.%se%d)", t, t[:1], t[1:3], len(t)-1)
}

type exhauster struct {
	subj Subject
	b    Launcher
	d    *lossyfs.Disk
	p    ExhaustParams
	// last is the steps of the probe's run before its last operation.
	last []Step
}

// maxSyncs bounds the syncs of one file an operation is cut at.
const maxSyncs = 8

// syncPoints are the crash points at each sync of the files of w's run
// inside its last operation: for each file, its 1st, 2nd, ... sync, until
// the operation ends before it. Each is found by a run that arms the cut
// (every write lost) unseen by the engine, and reads what the disk had
// unsynced when it struck.
func (x *exhauster) syncPoints(ctx context.Context, w exWorkload, model string, files []string) ([]crashPoint, error) {
	before := x.last
	op := Step{Kind: StepOp, ID: spec.OpID(0, len(w.ops)-1), Client: 0, Op: w.ops[len(w.ops)-1]}
	var out []crashPoint
	for _, file := range files {
		for n := 1; n <= maxSyncs; n++ {
			pt, struck, err := x.probeSync(ctx, model, before, op, file, n)
			if err != nil {
				return out, err
			}
			if !struck {
				break
			}
			out = append(out, pt)
		}
	}
	return out, nil
}

// probeSync runs before, arms the cut at the nth sync of file, and runs op
// step by step until it strikes or op ends.
func (x *exhauster) probeSync(ctx context.Context, model string, before []Step, op Step, file string, n int) (crashPoint, bool, error) {
	e, cleanup, err := newEngine(ctx, x.subj, x.b, x.schedule(model), "", x.d)
	if err != nil {
		return crashPoint{}, false, err
	}
	defer cleanup()
	step := 0
	next := func() int { step++; return step - 1 }
	for _, st := range before {
		if !e.do(next(), st) {
			return crashPoint{}, false, nil
		}
	}
	if err := x.d.ProbeAtSync(e.work, file, n); err != nil {
		return crashPoint{}, false, err
	}
	struck := func() (crashPoint, bool, error) {
		c, _, ok, err := x.d.Struck(e.work)
		if err != nil || !ok {
			return crashPoint{}, false, err
		}
		pt := crashPoint{steps: before, inFlight: true, unsynced: c.Pending, logs: c.Logs, entries: len(c.Undone), entryOps: c.Undone,
			sync: &fault.SyncCut{File: file, Nth: n}, op: op}
		return pt, true, x.d.Thaw(e.work)
	}
	ok := e.do(next(), op)
	for {
		if pt, hit, err := struck(); hit || err != nil {
			return pt, hit, err
		}
		if !ok || !e.procs[0].busy() {
			return crashPoint{}, false, nil
		}
		ok = e.do(next(), Step{Kind: StepResume, Process: 0})
	}
}

// exWorkload is a workload: its operations, and what reads them back.
type exWorkload struct {
	ops, observe []spec.Op
	name         string
}

// workloads are the distinct workloads of 1 to Ops operations, each
// operation one of the first Choices draws of a fresh generator at its
// step, shortest first.
func (x *exhauster) workloads() []exWorkload {
	var out []exWorkload
	seen := map[string]bool{}
	var walk func(choices []int)
	walk = func(choices []int) {
		if len(choices) > 0 {
			w := x.workloadOf(choices)
			if !seen[w.name] {
				seen[w.name] = true
				out = append(out, w)
			}
		}
		if len(choices) == x.p.Ops {
			return
		}
		for c := range x.p.Choices {
			walk(append(slices.Clone(choices), c))
		}
	}
	walk(nil)
	slices.SortStableFunc(out, func(a, b exWorkload) int { return len(a.ops) - len(b.ops) })
	return out
}

// workloadOf draws a workload's operations afresh, the i-th from the
// choices[i]-th stream, and what reads them back.
func (x *exhauster) workloadOf(choices []int) exWorkload {
	wl := x.subj.NewWorkload()
	var w exWorkload
	names := make([]string, len(choices))
	for i, c := range choices {
		r := rand.New(rand.NewPCG(uint64(c)+1, uint64(i)+1))
		op := linearizability.NextOp(wl, r, 0, i, Epoch.UnixMilli())
		w.ops = append(w.ops, op)
		names[i] = describeOp(op)
	}
	if o, ok := wl.(Observer); ok {
		w.observe = o.Observe()
	}
	w.name = strings.Join(names, "; ")
	return w
}

// schedule is the schedule a run of the workload starts from.
func (x *exhauster) schedule(model string) Schedule {
	return Schedule{Store: x.subj.Model.Contract().Name, Clients: 1, Processes: 1, Strategy: "exhaustive",
		Capabilities: x.subj.Capabilities, EntryModel: model}
}

// crashPoint is where a workload's power may go: after its first steps
// (its operations, and the resumes that move them from one yield point to
// the next), with what the disk then has not made durable.
type crashPoint struct {
	steps    []Step
	inFlight bool // its last operation has not ended
	unsynced map[string][]int
	// logs are the folder's files' logs there (lossyfs.FileLog), for its
	// classes.
	logs    map[string]lossyfs.FileLog
	entries int
	// entryOps are the entry ops not yet durable ("unlink x"), for its
	// classes.
	entryOps []string
	// failed, for a point after a failing sync: the fault.
	failed *fault.SyncError
	// sync, for a point at the nth sync of file inside the last
	// operation (steps then end before that operation): the fault that
	// cuts there, its outcome filled in per state.
	sync *fault.SyncCut
	op   Step
}

// probe runs w's operations on a fresh engine, each to its end, and
// answers its crash points: at each yield point its last operation stops
// at, and after it ended (a point inside an earlier operation is one of
// the shorter workload's). failed is the run, when it failed with no cut.
func (x *exhauster) probe(ctx context.Context, w exWorkload, model string) (points []crashPoint, failed *Result, err error) {
	e, cleanup, err := newEngine(ctx, x.subj, x.b, x.schedule(model), "", x.d)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	if e.res.Failure != nil {
		return nil, e.res, nil
	}
	step := 0
	next := func() int { step++; return step - 1 }
	point := func(inFlight bool) error {
		u, err := x.d.Unsynced(e.work)
		if err != nil {
			return err
		}
		pending, err := x.d.Entries(e.work)
		if err != nil {
			return err
		}
		var logs map[string]lossyfs.FileLog
		if len(writesOf(u)) > 0 {
			if logs, err = x.d.Logs(e.work); err != nil {
				return err
			}
		}
		points = append(points, crashPoint{steps: slices.Clone(e.res.Schedule.Steps), inFlight: inFlight, unsynced: u, logs: logs, entries: len(pending), entryOps: pending})
		return nil
	}
	for i, op := range w.ops {
		if i == len(w.ops)-1 {
			x.last = slices.Clone(e.res.Schedule.Steps)
		}
		if !e.do(next(), Step{Kind: StepOp, ID: spec.OpID(0, i), Client: 0, Op: op}) {
			return nil, e.res, nil
		}
		for e.procs[0].busy() {
			if i == len(w.ops)-1 {
				if err := point(true); err != nil {
					return nil, nil, err
				}
			}
			if !e.do(next(), Step{Kind: StepResume, Process: 0}) {
				return nil, e.res, nil
			}
		}
	}
	if e.res.Failure != nil {
		return nil, e.res, nil
	}
	return points, nil, point(false)
}

// fateWrite is an unsynced write a cut gives a fate to.
type fateWrite struct {
	file    string
	n       int
	sectors int
}

// writesOf are the unsynced writes of u that a cut gives fates to, in the
// order of their files' names: not those of NoFate's files, of files no
// longer named, or dropped by a failed sync.
func writesOf(u map[string][]int) []fateWrite {
	var out []fateWrite
	for _, f := range fault.FatedFiles(u) {
		for i, s := range u[f] {
			if s >= 0 {
				out = append(out, fateWrite{file: f, n: i + 1, sectors: s})
			}
		}
	}
	return out
}

// fates is how many fates write w may have: lost, kept, or torn keeping
// each proper prefix of its sectors.
func (w fateWrite) fates() int { return 2 + max(w.sectors-1, 0) }

// stateCountCap caps a count of crash states: no cut is checked that far.
const stateCountCap = 1_000_000_000

// crashStateCount is how many crash states writes and entries pending
// entry ops make (stateCountCap at most).
func crashStateCount(writes []fateWrite, entries int) int {
	n := entries + 1
	for _, w := range writes {
		if n *= w.fates(); n >= stateCountCap {
			return stateCountCap
		}
	}
	return n
}

// crashStates calls fn with the crash states of writes and entries, the
// fewest writes surviving first (every write lost, then each one alone,
// ...), each with every prefix of the entry ops kept, until fn answers
// false or max states were given; it answers how many it gave.
func crashStates(writes []fateWrite, entries, limit int, fn func(lossyfs.Fates, int) bool) int {
	given := 0
	emit := func(f lossyfs.Fates) bool {
		for keep := 0; keep <= entries; keep++ {
			if given >= limit {
				return false
			}
			given++
			if !fn(f, keep) {
				return false
			}
		}
		return true
	}
	// survive lists the surviving writes by index, increasing; each gets
	// a fate from 0 (kept whole) to sectors-1 (torn: that many kept).
	var surviving func(from, k int, chosen []int) bool
	surviving = func(from, k int, chosen []int) bool {
		if k == 0 {
			return assign(writes, chosen, 0, nil, emit)
		}
		for i := from; i <= len(writes)-k; i++ {
			if !surviving(i+1, k-1, append(chosen, i)) {
				return false
			}
		}
		return true
	}
	for k := 0; k <= len(writes); k++ {
		if !surviving(0, k, nil) {
			break
		}
	}
	return given
}

// assign gives each chosen write, from the j-th on, each fate but lost.
func assign(writes []fateWrite, chosen []int, j int, f lossyfs.Fates, emit func(lossyfs.Fates) bool) bool {
	if j == len(chosen) {
		return emit(slices.Clone(f))
	}
	w := writes[chosen[j]]
	for fate := range w.fates() - 1 {
		k := lossyfs.Kept{File: w.file, N: w.n}
		for s := range fate {
			k.Sectors = append(k.Sectors, s)
		}
		if !assign(writes, chosen, j+1, append(f, k), emit) {
			return false
		}
	}
	return true
}

// cut enumerates the crash states of each of w's crash points under
// model: its yield points, its syncs, its end, and its end after each of
// its last operation's syncs failed.
func (x *exhauster) cut(ctx context.Context, w exWorkload, model string, res *ExhaustResult) error {
	points, failed, err := x.probe(ctx, w, model)
	if err != nil {
		return err
	}
	if failed != nil {
		// The workload fails with no cut at all: one failure, no states.
		res.Failures = append(res.Failures, *failed)
		return nil
	}
	syncs, err := x.syncPoints(ctx, w, model, fault.FatedFiles(points[len(points)-1].unsynced))
	if err != nil {
		return err
	}
	all := append(points, syncs...)
	for _, sp := range syncs {
		pt, failed, err := x.probeFailedSync(ctx, w, model, *sp.sync)
		if err != nil {
			return err
		}
		if failed != nil {
			res.Failures = append(res.Failures, *failed)
			if x.p.FailFast {
				return nil
			}
			continue
		}
		all = append(all, pt)
	}
	for _, pt := range all {
		c := ExhaustCut{Workload: w.name, EntryModel: model, At: len(pt.steps), InFlight: pt.inFlight, Entries: pt.entries}
		if pt.sync != nil {
			c.AtSync = fmt.Sprintf("sync %d of %s", pt.sync.Nth, pt.sync.File)
		}
		if pt.failed != nil {
			c.FailedSync = fmt.Sprintf("sync %d of %s", pt.failed.Nth, pt.failed.File)
		}
		if err := x.states(ctx, w, model, pt, c, res); err != nil {
			return err
		}
		if x.p.FailFast && len(res.Failures) > 0 {
			return nil
		}
	}
	return nil
}

// probeFailedSync runs w with the sync at sp failing (armed before its
// last operation, as sp's cut was): the operation runs to its end, and
// the point is there. failed is the run, when it failed with no cut.
func (x *exhauster) probeFailedSync(ctx context.Context, w exWorkload, model string, sp fault.SyncCut) (crashPoint, *Result, error) {
	e, cleanup, err := newEngine(ctx, x.subj, x.b, x.schedule(model), "", x.d)
	if err != nil {
		return crashPoint{}, nil, err
	}
	defer cleanup()
	step := 0
	next := func() int { step++; return step - 1 }
	for _, st := range x.last {
		if !e.do(next(), st) {
			return crashPoint{}, e.res, nil
		}
	}
	f := fault.SyncError{File: sp.File, Nth: sp.Nth}
	op := Step{Kind: StepOp, ID: spec.OpID(0, len(w.ops)-1), Client: 0, Op: w.ops[len(w.ops)-1]}
	if !e.do(next(), Step{Kind: StepFault, Fault: f}) || !e.do(next(), op) || !e.drain(next) || e.res.Failure != nil {
		return crashPoint{}, e.res, nil
	}
	u, err := x.d.Unsynced(e.work)
	if err != nil {
		return crashPoint{}, nil, err
	}
	pending, err := x.d.Entries(e.work)
	if err != nil {
		return crashPoint{}, nil, err
	}
	logs, err := x.d.Logs(e.work)
	if err != nil {
		return crashPoint{}, nil, err
	}
	return crashPoint{steps: slices.Clone(e.res.Schedule.Steps), unsynced: u, logs: logs, entries: len(pending), entryOps: pending, failed: &f}, nil, nil
}

// states runs a representative of every class of crash states of the cut
// c at pt (crashclass.go), at most MaxStates; where the states cannot be
// put in classes, every state its own, fewest writes surviving first.
func (x *exhauster) states(ctx context.Context, w exWorkload, model string, pt crashPoint, c ExhaustCut, res *ExhaustResult) error {
	writes := writesOf(pt.unsynced)
	for _, wr := range writes {
		c.Writes = append(c.Writes, fmt.Sprintf("%s#%d", wr.file, wr.n))
		c.Sectors = append(c.Sectors, wr.sectors)
	}
	var runErr error
	run := func(f lossyfs.Fates, keep int) bool {
		r, same, err := x.state(ctx, w, model, pt, f, keep)
		if err != nil {
			runErr = err
			return false
		}
		if !same {
			res.Nondeterministic++
			return true
		}
		res.Checked++
		if r.Failure != nil {
			// The cut fails: its other classes are not needed to say so.
			res.Failures = append(res.Failures, r)
			return false
		}
		return true
	}
	cc, err := classesOf(pt.logs, writes, pt.entryOps)
	if err == nil {
		c.Reduced, c.Prefix = true, cc.Prefix
		c.States, c.Classes = cc.States, cc.Classes
		c.Checked = cc.each(x.p.MaxStates, run)
	} else {
		// Not reduced: each state its own class.
		n := crashStateCount(writes, c.Entries)
		c.States, c.Classes = big.NewInt(int64(n)), big.NewInt(int64(n))
		c.Prefix = true
		c.Checked = crashStates(writes, c.Entries, x.p.MaxStates, run)
	}
	res.States.Add(res.States, c.States)
	res.Classes.Add(res.Classes, c.Classes)
	res.Unchecked.Add(res.Unchecked, new(big.Int).Sub(c.Classes, big.NewInt(int64(c.Checked))))
	res.Cuts = append(res.Cuts, c)
	return runErr
}

// state runs one crash state: pt's steps again on a fresh engine, the cut
// with fates and keep, then the read back. same is false when the run
// reached the cut with other unsynced writes than pt.
func (x *exhauster) state(ctx context.Context, w exWorkload, model string, pt crashPoint, fates lossyfs.Fates, keep int) (Result, bool, error) {
	e, cleanup, err := newEngine(ctx, x.subj, x.b, x.schedule(model), "", x.d)
	if err != nil {
		return Result{}, false, err
	}
	defer cleanup()
	if e.res.Failure != nil {
		return *e.res, true, nil
	}
	step := 0
	next := func() int { step++; return step - 1 }
	for _, st := range pt.steps {
		if !e.do(next(), st) {
			return *e.res, true, nil
		}
	}
	if pt.sync != nil {
		// The cut at the sync, with this state's outcome, then the
		// operation it strikes in.
		f := *pt.sync
		f.Kept, f.KeepEntries = fates, keep
		if !e.do(next(), Step{Kind: StepFault, Fault: f}) || !e.do(next(), pt.op) || !e.drain(next) {
			return *e.res, true, nil
		}
		if e.res.Coverage[EventPowerCutAtSync] == 0 {
			return *e.res, false, nil // the operation took another path
		}
	} else {
		now, err := x.d.Unsynced(e.work)
		if err != nil {
			return Result{}, false, err
		}
		if !slices.Equal(writesOf(now), writesOf(pt.unsynced)) {
			return *e.res, false, nil
		}
		if !e.do(next(), Step{Kind: StepFault, Fault: fault.PowerCut{Kept: fates, KeepEntries: keep}}) || !e.drain(next) {
			return *e.res, true, nil
		}
	}
	for j, op := range w.observe {
		st := Step{Kind: StepOp, ID: spec.OpID(0, len(w.ops)+j), Client: 0, Op: op}
		if !e.do(next(), st) || !e.drain(next) {
			break
		}
	}
	return *e.res, true, nil
}
