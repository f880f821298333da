package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// errKilled is what an operation paused at a yield point is told when its
// process is killed under it.
var errKilled = spec.Errorf(spec.ErrCrashed, "the process was killed at a yield point")

// engine carries out steps against the backend's processes, one operation
// in flight per process, or, when the schedule overlaps them (a backend
// that serves several requests at once), one per client: an operation runs
// on a goroutine of its own, and the engine lets exactly one of them move at
// a time, from one yield point to the next, so that what the backend does
// is a function of the steps.
type engine struct {
	ctx     context.Context
	subj    Subject
	backend Launcher
	sched   Schedule
	path    string
	// work is the run's folder; disk, when not nil, the forgetful file
	// system it is on, which power cuts act on.
	work    string
	disk    *lossyfs.Disk
	clock   *clockwork.FakeClock
	procs   []*proc
	oracle  *oracle
	answers spec.Answers
	res     *Result
	// calls counts the operations sent, for the oracle.
	calls int
	// whole: operations are never paused at yield points.
	whole bool
	// overlap: each client of a process may have an operation in flight
	// (Schedule.Overlap); lanes are then the goroutines the clients'
	// operations run on, by client.
	overlap bool
	lanes   []chan func()
	// at is the step being taken, for the coverage it reaches (cover).
	at int
	// pairs are the interleavings reached so far (interleaved).
	pairs map[string]bool
	// cutAt is the step of the run's last power cut (-1: none yet), and
	// cutStates the crash state each cut left, in order (crashState).
	cutAt     int
	cutStates []string
	// syncArmed: a power cut at a sync is armed on the disk (the disk is
	// asked, after each step, whether it struck); syncCut, once it has.
	syncArmed bool
	// syncFails: a sync of the run was made to fail, which a process's
	// start may meet (start).
	syncFails bool
	syncCut   *syncCut
	// cutting: the processes start again after a power cut, which
	// recovered the WAL for good before the first of them (restartAfterCut).
	cutting bool
	// settledOps are the operations over so far, in the order they
	// ended: what a failure after a crash names (blame.go).
	settledOps []settled
}

// proc is one backend process of the run.
type proc struct {
	n int
	// work runs the process's operations on one goroutine for the whole
	// run: a fresh goroutine per operation would grow its stack again for
	// every one (SQLite's calls run deep).
	work chan func()
	p    Process
	inj  *fault.Injector
	// flights are the operations in flight on it, in the order they were
	// sent: at most one, unless the run overlaps them (one per client).
	flights []*flight
	armed   string        // a crash point armed for its next operation
	pause   time.Duration // a pause before its next operation is sent
	// clock is the process's own: it moves to the run's time when an
	// operation is sent, and stands still while the operation is in
	// flight, as a request's now_ms does over the wire. So a store that
	// reads its clock after a yield point reads the time of the request,
	// in process as over the wire. With several in flight, it is set to
	// the time of the one that moves, each time one moves.
	clock *clockwork.FakeClock
}

// busy reports whether an operation is in flight on p.
func (p *proc) busy() bool { return len(p.flights) > 0 }

// flightOf is client's operation in flight on p, or nil.
func (p *proc) flightOf(client int) *flight {
	for _, f := range p.flights {
		if f.client == client {
			return f
		}
	}
	return nil
}

// land takes f off p's flights: it returned, or was abandoned.
func (p *proc) land(f *flight) {
	p.flights = slices.DeleteFunc(p.flights, func(g *flight) bool { return g == f })
}

// flight is an operation in flight on a process.
type flight struct {
	step   int // the step that sent it
	call   int // its number for the oracle
	client int
	id     string
	op     spec.Op
	sym    spec.Op // op as the schedule has it, references unresolved
	now    int64
	at     time.Time // now, as the process's clock reads it
	place  string    // the yield point it waits at
	yields int       // the yield points it reached
	armed  string
	alone  bool // Step.Alone
	events chan event
	resume chan error
}

// event is what an operation's goroutine tells the engine: that it reached
// a yield point, or that it returned.
type event struct {
	place string
	done  bool
	res   any
	err   error
}

// newEngine sets a run up in a folder of its own under dir, or on disk
// when it is not nil (and dir is then unused).
func newEngine(ctx context.Context, subj Subject, b Launcher, s Schedule, dir string, disk *lossyfs.Disk) (*engine, func(), error) {
	if disk != nil {
		dir = disk.Dir
	}
	work, err := os.MkdirTemp(dir, "sim-")
	if err != nil {
		return nil, nil, err
	}
	e := &engine{ctx: ctx, subj: subj, backend: b, sched: s, path: filepath.Join(work, s.Store+".db"), work: work, disk: disk,
		clock: clockwork.NewFakeClockAt(Epoch), oracle: newOracle(subj.Model), answers: spec.Answers{},
		res: &Result{Schedule: Schedule{Store: s.Store, Seed: s.Seed, Clients: s.Clients, Processes: s.Processes, Strategy: s.Strategy,
			Capabilities: s.Capabilities, Overlap: s.Overlap, EntryModel: s.EntryModel, Branches: s.Branches},
			Coverage: map[string]int{}}}
	e.cutAt = -1
	e.overlap = s.Overlap
	e.procs = make([]*proc, s.Processes)
	cleanup := func() {
		for _, p := range e.procs {
			if p != nil {
				defer close(p.work)
			}
			if p != nil && p.p != nil {
				if p.busy() {
					e.abandon(p)
					p.p.Kill()
				}
				p.p.Close()
			}
		}
		for _, l := range e.lanes {
			if l != nil {
				close(l)
			}
		}
		os.RemoveAll(work)
	}
	if disk != nil && s.EntryModel != lossyfs.EntriesDurable {
		// Before any process starts: the creation of the database is an
		// entry op like any other.
		if err := disk.SetEntryModel(work, s.EntryModel); err != nil {
			os.RemoveAll(work)
			return nil, nil, err
		}
	}
	for n := range e.procs {
		e.procs[n] = &proc{n: n, work: make(chan func()), clock: clockwork.NewFakeClockAt(Epoch)}
		go func(work chan func()) {
			for fn := range work {
				fn()
			}
		}(e.procs[n].work)
		if err := e.start(e.procs[n]); err != nil {
			e.fail(&Failure{Step: -1, What: fmt.Sprintf("start process %d", n), Backend: err})
			return e, cleanup, nil
		}
	}
	return e, cleanup, nil
}

func (e *engine) start(p *proc) error {
	if p.p != nil && !e.cutting {
		// A process started again: its open may recover the WAL, and
		// with it a commit whose sync failed (oracle.deferred). It
		// recovers for good when no other process keeps the WAL's index.
		e.oracle.recovered(len(e.procs) == 1, false)
	}
	p.clock.Advance(e.clock.Now().Sub(p.clock.Now()))
	bp, err := e.backend.Start(e.ctx, p.n, e.path, p.clock)
	if err != nil && e.syncFails {
		// The start's open synced (recovering a WAL does) and met the
		// sync made to fail: an open that fails on an I/O error is right,
		// and the sync after it succeeds (Linux's behaviour), so the
		// process is started again, once.
		bp, err = e.backend.Start(e.ctx, p.n, e.path, p.clock)
	}
	if err != nil {
		if p.p != nil && e.syncArmed && e.struckAtSync() {
			// The power went at the armed sync under the start (an open
			// that recovers a WAL syncs it): no failure of the backend's.
			// The process stays dead until do ends the cut
			// (strikeAtSync), starting every process again.
			return nil
		}
		return err
	}
	p.p, p.inj = bp, fault.Wrap(bp, e.sched.Store)
	return nil
}

// do carries out step i. It returns false when the run must stop (a
// failure, or a backend that broke).
func (e *engine) do(i int, st Step) bool {
	e.at = i
	e.res.Schedule.Steps = append(e.res.Schedule.Steps, st)
	ok := e.step(i, st)
	if ok && e.syncArmed && e.struckAtSync() {
		return e.strikeAtSync(i, st)
	}
	return ok
}

// cover counts coverage event k, and notes the step at which its count
// reached 1, 2, 4, ... 128: the milestones a guided sweep branches from
// (guide.go), as AFL buckets hit counts.
func (e *engine) cover(k string) {
	e.res.Coverage[k]++
	if c := e.res.Coverage[k]; c&(c-1) == 0 && c <= maxMilestone {
		e.res.Reached = append(e.res.Reached, Milestone{Event: k, Count: c, Step: e.at})
	}
}

func (e *engine) step(i int, st Step) bool {
	switch st.Kind {
	case StepOp:
		return e.send(i, st)
	case StepResume:
		p, f := e.resumed(st)
		if f == nil {
			e.trace(i, p.n, "resume: nothing in flight")
			return true
		}
		return e.advance(i, p, f, nil)
	case StepFault:
		return e.strike(i, st)
	}
	e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: fmt.Errorf("unknown step kind %q", st.Kind)})
	return false
}

// resumed is the process a resume step moves and the operation it moves
// (nil: none in flight): the process's one, or, where operations overlap,
// the step's client's.
func (e *engine) resumed(st Step) (*proc, *flight) {
	if e.overlap {
		p := e.procs[e.sched.ProcessOf(st.Client)]
		return p, p.flightOf(st.Client)
	}
	p := e.procs[st.Process]
	if !p.busy() {
		return p, nil
	}
	return p, p.flights[0]
}

// ahead is the operation that must end before client sends one on p: the
// one p has in flight, or, where operations overlap, the client's own.
func (e *engine) ahead(p *proc, client int) *flight {
	if e.overlap {
		return p.flightOf(client)
	}
	if !p.busy() {
		return nil
	}
	return p.flights[0]
}

// send starts a client's operation on its process, once the operation
// ahead of it (its process's, or where operations overlap its client's
// own) has run to its end.
func (e *engine) send(i int, st Step) bool {
	// An operation issued alone has none other in flight, and none is
	// issued while it is (Step.Alone): so it is judged whole rightly in
	// any replay, a shrunk one too.
	if !e.runOut(i, func(f *flight) bool { return st.Alone || f.alone }) {
		return false
	}
	p := e.procs[e.sched.ProcessOf(st.Client)]
	for f := e.ahead(p, st.Client); f != nil; f = e.ahead(p, st.Client) {
		if !e.advance(i, p, f, nil) {
			return false
		}
	}
	if p.pause > 0 {
		e.clock.Advance(p.pause)
		e.res.SimTime += p.pause
		p.pause = 0
	}
	op := e.answers.Resolve(st.Op)
	p.clock.Advance(e.clock.Now().Sub(p.clock.Now()))
	f := &flight{step: i, call: e.calls, client: st.Client, id: st.ID, op: op, sym: st.Op, now: e.clock.Now().UnixMilli(),
		at: e.clock.Now(), armed: p.armed, alone: st.Alone, events: make(chan event, 1), resume: make(chan error)}
	e.calls++
	p.armed = ""
	if f.armed != "" {
		e.cover(armedAt + f.armed)
		if err := p.p.Arm(f.armed); err != nil {
			e.fail(&Failure{Step: i, What: e.describe(i, st, op), Backend: fmt.Errorf("arm %s: %w", f.armed, err)})
			return false
		}
	}
	p.flights = append(p.flights, f)
	e.oracle.call(f.call, op, f.now, st.Alone)
	e.res.Ops++
	args := describeOp(op)
	if f.armed != "" {
		// The crash note before the arguments: a console cuts a cell's
		// end, never this.
		j, _ := json.Marshal(op)
		args = op.Name() + " " + armedTag(f.armed) + " " + string(j)
	}
	e.traceOf(i, p, f, fmt.Sprintf("client %d: %s", st.Client, args))
	ctx := e.ctx
	if !e.whole {
		ctx = spec.WithYield(ctx, func(place string) error {
			f.events <- event{place: place}
			return <-f.resume
		})
	}
	inj := p.inj
	e.laneOf(p, st.Client) <- func() {
		res, err := inj.Apply(ctx, op)
		f.events <- event{done: true, res: res, err: err}
	}
	return e.await(i, p, f)
}

// laneOf is the goroutine client's operations on p run on: p's own, or,
// where operations overlap, the client's, kept for the whole run as p's is.
func (e *engine) laneOf(p *proc, client int) chan func() {
	if !e.overlap {
		return p.work
	}
	if e.lanes == nil {
		e.lanes = make([]chan func(), max(e.sched.Clients, client+1))
	}
	if e.lanes[client] == nil {
		l := make(chan func())
		go func() {
			for fn := range l {
				fn()
			}
		}()
		e.lanes[client] = l
	}
	return e.lanes[client]
}

// advance lets f, an operation in flight on p, move from its yield point to
// the next (or to its end); stop, when not nil, makes it stop there
// instead. The process's clock reads f's time while it moves.
func (e *engine) advance(i int, p *proc, f *flight, stop error) bool {
	p.clock.Advance(f.at.Sub(p.clock.Now()))
	f.resume <- stop
	return e.await(i, p, f)
}

// stuckAfter is how long an operation that overlaps others on its process
// may take to reach its next yield point before the run calls it stuck:
// the others wait at yield points, which hold no lock, so an operation
// that does not move waits for a lock one of them holds (or hangs).
const stuckAfter = 30 * time.Second

// await waits for f, on p, to reach a yield point or to return.
func (e *engine) await(i int, p *proc, f *flight) bool {
	var ev event
	if e.overlap && len(p.flights) > 1 {
		t := time.NewTimer(stuckAfter)
		select {
		case ev = <-f.events:
			t.Stop()
		case <-t.C:
			return e.stuck(i, p, f)
		}
	} else {
		ev = <-f.events
	}
	e.interleaved(f, f.place)
	if !ev.done {
		f.place = ev.place
		f.yields++
		e.res.Yielded = true
		e.cover("yield at " + ev.place)
		e.traceOf(i, p, f, "  … "+ev.place)
		return true
	}
	p.land(f)
	return e.returned(i, p, f, ev.res, ev.err)
}

// InterleavePrefix marks a milestone of interleaving (interleaved).
const InterleavePrefix = "interleave: "

// interleaved notes, f having moved on from yield point from, each
// operation g in flight beside it that touches one of f's keys
// (model.Touches) and waits at a yield point past its first: g has run a
// transaction (its first yield point comes before its first,
// docs/protocol.md) and has more to do, and f ran one of its own in
// between. The pair "g waits at X while f moves on from Y" is the
// black-box proxy of RFF's reads-from pairs (ASPLOS 2024): a write landing
// between a check and a write. Only its first time is a milestone, for a
// guided sweep (guide.go) to keep the run that reached it and swap the two
// in its children; it is no coverage a report lists. Place names are free
// text (the protocol): they name the pair, nothing reads them.
func (e *engine) interleaved(f *flight, from string) {
	if from == "" {
		return // f moved from its send to its first yield point: it ran nothing
	}
	for _, p := range e.procs {
		for _, g := range p.flights {
			if g == f || g.yields < 2 || !model.Touches(e.subj.Model, g.op, f.op) {
				continue
			}
			k := fmt.Sprintf("%s%s waits, %s moves on from %s", InterleavePrefix, g.place, f.op.Name(), from)
			if e.pairs == nil {
				e.pairs = map[string]bool{}
			}
			if !e.pairs[k] {
				e.pairs[k] = true
				e.res.Reached = append(e.res.Reached, Milestone{Event: k, Count: 1, Step: e.at})
			}
		}
	}
}

// stuck fails the run: f neither returned nor reached a yield point while
// the other operations of its process waited at theirs. It is left where
// it is (its goroutine with it): stopping it would need the lock it waits
// for.
func (e *engine) stuck(i int, p *proc, f *flight) bool {
	p.land(f)
	var waiting []string
	for _, g := range p.flights {
		waiting = append(waiting, fmt.Sprintf("client %d's %s at %s", g.client, g.op.Name(), g.place))
	}
	e.fail(&Failure{Step: i, What: e.describe(f.step, Step{Client: f.client}, f.op), Backend: fmt.Errorf(
		"the operation neither returned nor reached a yield point in %v while the other operations of process %d waited at yield points (%s): "+
			"a yield point must hold no lock, of the database or of the backend's own, and this one waits for one (the backend declares concurrent_requests)",
		stuckAfter, p.n, strings.Join(waiting, ", "))})
	return false
}

// returned judges what an operation answered.
func (e *engine) returned(i int, p *proc, f *flight, res any, err error) bool {
	if e.syncArmed && e.struckAtSync() {
		// The power went at a sync while the operation was in flight:
		// whatever it answered (or however its process died of it), it
		// answered with no power, so it is indefinite.
		e.traceOf(i, p, f, "  → ? (the power went at a sync under it)")
		e.oracle.indefinite(f.call, f.op)
		return true
	}
	if err != nil {
		if bf := failedOf(p.p); bf != nil {
			// The process broke the protocol, went silent or died by no
			// fault of the kit's: the backend failed, and its answers
			// from now on say nothing of the contract.
			e.fail(&Failure{Step: i, What: e.describe(f.step, Step{Client: f.client}, f.op), Backend: bf})
			return false
		}
	}
	contract := e.subj.Model.Contract()
	got, definite := linearizability.Outcome(contract, res, err)
	crashed := spec.KindOf(err) == spec.ErrCrashed
	// An operation left indefinite once a sync of the run was made to
	// fail may have met that sync in its commit: it may also take effect
	// when the store recovers (oracle.deferred), so the oracle takes it
	// before any start below.
	deferred, taken := !definite && e.syncFails && !spec.IsNotSent(err), false
	// The process may have died at the point; either way, a process armed
	// for one operation is started afresh, and the operations it had in
	// flight beside this one end with it. An operation that answered did so
	// before that restart, which may recover a commit whose sync failed
	// (oracle.recovered): its answer is judged first (restartLater), or the
	// oracle would hold it to a state the restart made.
	restart := f.armed != "" || crashed
	restartLater := restart && definite && !spec.IsNotSent(err)
	if restart && !restartLater {
		// The oracle takes a deferred operation before the start.
		taken = deferred
		if !e.restartArmed(i, p, f, deferred) {
			return false
		}
	}
	for _, ev := range e.oracle.events(f.op, f.now, got, definite) {
		e.cover(ev)
	}
	for _, ft := range e.oracle.features(f.now) {
		e.cover(FeaturePrefix + ft)
	}
	if crashed && f.armed != "" {
		e.cover(CrashedAt + f.armed)
		if strings.HasSuffix(f.armed, "/after_commit") {
			e.cover(EventAnswerLost)
		} else {
			e.cover(EventCrashInside)
		}
	}
	if spec.IsNotSent(err) {
		e.traceOf(i, p, f, fmt.Sprintf("  → %s (refused before the backend)", got.Kind))
		e.oracle.dropped(f.call, f.op)
		return true
	}
	if !definite {
		if deferred {
			e.traceOf(i, p, f, fmt.Sprintf("  → ? (%s, after a failed sync: it may also take effect when the store recovers)", got.Kind))
			if !taken {
				e.oracle.deferred(f.call, f.op)
			}
		} else {
			e.traceOf(i, p, f, fmt.Sprintf("  → ? (%s)", got.Kind))
			e.oracle.indefinite(f.call, f.op)
		}
		point := ""
		if crashed && f.armed != "" && !strings.HasSuffix(f.armed, "/after_commit") {
			point = f.armed
		}
		e.settle(i, f, false, false, point)
		return true
	}
	e.traceOf(i, p, f, "  → "+got.String())
	if got.Kind == "" && f.id != "" {
		e.answers[f.id] = got.Result
	}
	before := e.oracle.first()
	met := e.oracle.configs // ret replaces the slice, never its states
	allowed, judged, ok := e.oracle.ret(f.call, f.op, got)
	if !ok && e.oracle.cut {
		// The oracle cut its configurations past its limit, and the ones
		// it dropped may be the very ones that allow this answer: no
		// verdict, and the run stops here.
		e.res.Inconclusive = true
		e.traceOf(i, p, f, fmt.Sprintf("  no verdict: no configuration the oracle kept allows this answer, and it kept only %d of them", e.oracle.limit))
		return false
	}
	if !ok {
		// A writer stepped again in the states the operation met, for a
		// read that shows its values (model.BlameOf).
		again := func(w spec.Op) []model.Branch {
			var out []model.Branch
			for _, c := range met {
				out = append(out, e.subj.Model.Step(c.state, w, f.now)...)
			}
			return out
		}
		blame := e.blame(f.op, judged, allowed, again)
		failure := &Failure{Step: i, What: e.describe(f.step, Step{Client: f.client}, f.op), Op: f.op.Name(), Got: got,
			Allowed: model.Allowed(allowed), Rules: blame.Rules, Why: blame.Why, AfterCrash: e.crashNote(f.op)}
		if judged.String() != got.String() {
			failure.Part = &judged
		}
		if err != nil && got.Kind != "" {
			failure.Message = errorText(err)
		}
		if _, ok := contract.Rule(spec.PowerLossRule(contract.Name)); ok && e.cutAt >= 0 {
			failure.AfterPowerCut, failure.PowerCutStep, failure.CrashState = spec.PowerLossRule(contract.Name), e.cutAt, strings.Join(e.cutStates, "; then ")
			failure.Rules = append(failure.Rules, failure.AfterPowerCut)
		}
		e.fail(failure)
		return false
	}
	e.cover(spec.CellKey(f.op.Name(), spec.AnswerOf(f.op, got.Result, got.Kind)))
	after := e.oracle.first()
	e.settle(i, f, got.Kind == "", before != nil && after != nil && before.Hash() != after.Hash(), "")
	if restartLater {
		return e.restartArmed(i, p, f, false)
	}
	return true
}

// restartArmed kills p, whose operation f was armed to crash (or crashed),
// ending the operations in flight beside it, and starts it again; deferred:
// the oracle takes f as deferred once p is dead.
func (e *engine) restartArmed(i int, p *proc, f *flight, deferred bool) bool {
	e.endWith(i, p, "its process crashed under it")
	p.p.Kill()
	if deferred {
		e.oracle.deferred(f.call, f.op)
	}
	if err := e.start(p); err != nil {
		e.fail(&Failure{Step: i, What: e.describe(f.step, Step{}, f.op), Backend: fmt.Errorf("restart: %w", err)})
		return false
	}
	return true
}

// strike injects a fault into the process the step names.
func (e *engine) strike(i int, st Step) bool {
	p := e.procs[st.Process]
	e.trace(i, p.n, st.Fault.String())
	e.cover("fault " + fault.Name(st.Fault))
	// Which yield point the struck process's operations wait at: a fault
	// between the check and the write is another run than one between
	// operations (fault kind x yield point, for a guided sweep).
	for _, f := range p.flights {
		if f.place != "" {
			e.cover("fault " + fault.Name(st.Fault) + " at " + f.place)
		}
	}
	err := st.Fault.Inject(e.ctx, &struck{e: e, i: i, st: st, p: p})
	if errors.Is(err, errStopped) {
		return false
	}
	if err != nil {
		e.fail(&Failure{Step: i, What: fmt.Sprintf("%04d %s", i, st), Backend: err})
		return false
	}
	return true
}

// struck is the run as a fault strikes process p at step i: the
// simulator's fault.Env.
type struck struct {
	e  *engine
	i  int
	st Step
	p  *proc
}

// errStopped is a verb's answer when the run stopped under it (a failure,
// already recorded, or no verdict).
var errStopped = errors.New("the run stopped")

func (s *struck) Kill(ctx context.Context) error {
	e, p := s.e, s.p
	e.cover(EventKill)
	// The paused operations stop first (in process they may hold a lock
	// of their own that the kill needs; over the wire the adapter gives
	// up on them at once), then the process dies.
	if p.busy() {
		e.abandon(p)
	}
	p.p.Kill()
	if err := e.start(p); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

func (s *struck) Restart(ctx context.Context) error {
	e, p := s.e, s.p
	for p.busy() {
		if !e.advance(s.i, p, p.flights[0], nil) {
			return errStopped
		}
	}
	p.p.Close()
	if err := e.start(p); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// ArmCrash arms point for the process's next operation, which crashes the
// first time it reaches it (Process.Arm), whatever nth.
func (s *struck) ArmCrash(ctx context.Context, point string, nth int) error {
	s.p.armed = point
	return nil
}

func (s *struck) AdvanceClock(d time.Duration) error {
	s.e.clock.Advance(d)
	s.e.res.SimTime += d
	return nil
}

// Stall holds the process's next operation, whatever its name, for d of
// the run's clock.
func (s *struck) Stall(op string, d time.Duration) error {
	s.p.pause += d
	return nil
}

func (s *struck) Intercept(plan fault.Plan) error {
	s.p.inj.Plan(plan)
	return nil
}

func (s *struck) FailSync(ctx context.Context, file string, nth int) error {
	if s.e.disk == nil {
		return fmt.Errorf("the run has no forgetful file system to fail a sync on")
	}
	s.e.syncFails = true
	return s.e.disk.FailSync(s.e.work, file, nth)
}

func (s *struck) CutPowerAtSync(ctx context.Context, file string, nth int, seed uint64) error {
	if s.e.disk == nil {
		return fmt.Errorf("the run has no forgetful file system to cut the power of")
	}
	if err := s.e.disk.CrashAtSync(s.e.work, file, nth, seed, fault.NoFate); err != nil {
		return err
	}
	s.e.syncArmed = true
	return nil
}

func (s *struck) CutPower(ctx context.Context, kept lossyfs.Fates, keepEntries int) error {
	if !s.e.strikePower(s.i, s.st, kept, keepEntries) {
		return errStopped
	}
	return nil
}

// abandon stops p's paused operations where they are, as a killed process
// would: each is indefinite, unless it was paused at its first yield point.
// A yield point comes before each transaction and each statement outside
// one (spec.Yield), so an operation stopped at its first has written
// nothing: it never took effect, and the oracle need not keep the states in
// which it did (each indefinite operation doubles them).
func (e *engine) abandon(p *proc) {
	for p.busy() {
		e.abandonFlight(p, p.flights[0])
	}
}

// endWith abandons the operations in flight on p, telling each one's end
// in its own column (why: what ended them), where operations overlap: a
// process that dies under several operations ends each of them. Without
// overlap, none is in flight beside the one that crashed.
func (e *engine) endWith(i int, p *proc, why string) {
	for p.busy() {
		f := p.flights[0]
		if f.yields == 1 {
			e.traceOf(i, p, f, "  → never ran: "+why+" at its first yield point")
		} else {
			e.traceOf(i, p, f, "  → ? ("+why+": it may have taken effect)")
		}
		e.abandonFlight(p, f)
	}
}

func (e *engine) abandonFlight(p *proc, f *flight) {
	p.land(f)
	f.resume <- errKilled
	for ev := range f.events {
		if ev.done {
			break
		}
		f.resume <- errKilled
	}
	if f.yields == 1 {
		e.oracle.dropped(f.call, f.op)
		return
	}
	if e.syncFails {
		// Its commit may have met the sync made to fail (returned).
		e.oracle.deferred(f.call, f.op)
		return
	}
	e.oracle.indefinite(f.call, f.op)
}

// runOut runs the operations in flight that which picks to their ends,
// at step i.
func (e *engine) runOut(i int, which func(*flight) bool) bool {
	for _, p := range e.procs {
		for {
			j := slices.IndexFunc(p.flights, which)
			if j < 0 {
				break
			}
			if !e.advance(i, p, p.flights[j], nil) {
				return false
			}
		}
	}
	return true
}

// drain runs every operation still in flight to its end, process by
// process (and where operations overlap, in the order they were sent), as
// steps of the schedule.
func (e *engine) drain(steps func() int) bool {
	for _, p := range e.procs {
		for p.busy() {
			st := Step{Kind: StepResume, Process: p.n}
			if e.overlap {
				st.Client = p.flights[0].client
			}
			if !e.do(steps(), st) {
				return false
			}
		}
	}
	return true
}

func (e *engine) fail(f *Failure) {
	if e.res.Failure != nil || e.res.Stalled != "" {
		return
	}
	if f.Backend != nil && adapters.IsStall(f.Backend) {
		// The kit or the machine stalled, not the backend: no verdict.
		e.res.Inconclusive = true
		e.res.Stalled = fmt.Sprintf("%s: %v", f.What, f.Backend)
		e.trace(f.Step, 0, "  no verdict: "+e.res.Stalled)
		return
	}
	e.res.Failure = f
}

// failedOf is the backend's own failure of process p, if its adapter
// keeps one (a program over the wire does).
func failedOf(p Process) error {
	if fp, ok := p.(interface{ Failed() error }); ok {
		return fp.Failed()
	}
	return nil
}

// doom tells p's adapter that it may die by the kit's doing from now on.
func doom(p Process) {
	if dp, ok := p.(interface{ Doom() }); ok {
		dp.Doom()
	}
}

// trace adds a line of the run: the step, the process, what happened.
func (e *engine) trace(i, process int, text string) {
	e.res.Trace = append(e.res.Trace, fmt.Sprintf("%04d p%d %s", i, process, text))
	e.res.Moves = append(e.res.Moves, Move{Step: i, Process: process, Client: -1, Text: text})
}

// traceOf adds a line of operation f's, on p: where operations overlap
// inside a process, it names the caller too ("p0.c3": client 3, on
// process 0).
func (e *engine) traceOf(i int, p *proc, f *flight, text string) {
	who := fmt.Sprintf("p%d", p.n)
	if e.overlap {
		who = fmt.Sprintf("p%d.c%d", p.n, f.client)
	}
	e.res.Trace = append(e.res.Trace, fmt.Sprintf("%04d %s %s", i, who, text))
	e.res.Moves = append(e.res.Moves, Move{Step: i, Process: p.n, Client: f.client, Text: text})
}

func (e *engine) describe(i int, st Step, op spec.Op) string {
	return fmt.Sprintf("%04d client %d: %s", i, st.Client, describeOp(op))
}

// describeOp is op as a trace shows it: its arguments as JSON, clipped
// to describeMax bytes (a big draw's arguments run to MiB).
func describeOp(op spec.Op) string {
	args, _ := json.Marshal(op)
	if len(args) > describeMax {
		return fmt.Sprintf("%s %s… (%d bytes in all)", op.Name(), args[:describeMax], len(args))
	}
	return op.Name() + " " + string(args)
}

const describeMax = 4096

func outcomeName(o model.Outcome) string {
	if o.Kind != "" {
		return string(o.Kind)
	}
	return "ok"
}
