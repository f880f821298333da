package sim

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// Subject is what the simulator knows of one store.
type Subject struct {
	Model model.Model
	// NewWorkload makes the workload of one run (workloads remember what
	// each client did).
	NewWorkload func() linearizability.Workload
	// RareEvents are the coverage events the default sweep must reach.
	RareEvents []string
	// Rival, when set, is an operation that contends with op (the same
	// identity under another fence, the same lease for another owner), or
	// nil: while one operation waits at a yield point in the middle of its
	// work, another process may issue its rival, so that races between a
	// check and a write are tried where they matter.
	Rival func(op spec.Op, r *rand.Rand) spec.Op
	// Capabilities are the backend's declared choices Model was configured
	// with (model.For); a schedule records them, so that a replay judges by
	// the same model.
	Capabilities spec.Capabilities
}

// Deadliner is a workload whose operations set deadlines (a lease's or a
// claim's expiry): the clock jumps are biased to land on, just before and
// just after them.
type Deadliner interface {
	Deadlines(op spec.Op, nowMS int64) []int64
}

// Observer is a workload that can read back everything its clients wrote:
// the operations a run issues once every operation in flight has ended, so
// that a lost write shows even when no later operation happened to read it.
type Observer interface {
	Observe() []spec.Op
}

// Params sizes a run.
type Params struct {
	// Steps is how many operations the clients issue (default 200), before
	// the operations in flight are run to their ends and the state is read
	// back.
	Steps int
	// Clients and Processes: default 8 clients over 2 processes.
	Clients, Processes int
	// Whole runs every operation whole, never pausing it at a yield point:
	// operations then interleave only between one another (the simulator
	// as a backend without yield points gets it).
	Whole bool
	// Overlap keeps several operations in flight on one process, one per
	// client and at most Callers at once (default 2), for a backend that
	// serves several requests at once (capability concurrent_requests):
	// races between two callers of one process are then explored, as
	// races between processes are.
	Overlap bool
	Callers int
	// PowerCuts lets the seed cut the power (fault.PowerCut): the runs keep
	// their databases on a forgetful file system mounted under their
	// folder, when the machine allows (FUSE); else they run without, and
	// say why (Result.NoPowerCuts).
	PowerCuts bool
	// EntriesDurable keeps every directory entry op durable at once on
	// the forgetful file system (no entry model: the crash model before
	// issue 27); else each run follows one its seed draws
	// (Schedule.EntryModel).
	EntriesDurable bool
}

func (p Params) withDefaults() Params {
	if p.Steps <= 0 {
		p.Steps = 200
	}
	if p.Clients <= 0 {
		p.Clients = 8
	}
	if p.Processes <= 0 {
		p.Processes = 2
	}
	if p.Callers <= 0 {
		p.Callers = 2
	}
	return p
}

// Shape names what a run's seed means in p: its steps, clients and
// processes, and whether operations overlap in a process. A corpus made in
// one shape names other runs in another.
func (p Params) Shape() string {
	p = p.withDefaults()
	s := fmt.Sprintf("%d steps, %d clients, %d processes", p.Steps, p.Clients, p.Processes)
	if p.Whole {
		s += ", whole operations"
	}
	if p.Overlap {
		s += fmt.Sprintf(", %d callers a process", p.Callers)
	}
	return s
}

// Swarm is a run's mix of faults and its scheduling strategy, drawn from its
// seed, so that a sweep of seeds covers very different runs: some calm, some
// crashing constantly, some spending their time on clock boundaries, some
// preempting operations deep inside, some at their edges only.
type Swarm struct {
	// Rates are, by the fault's name, the share of decisions at which each
	// kind of fault drawn from the run's stream strikes (each picked from
	// its fault.Draw.Rates).
	Rates map[string]float64
	// BoundaryRate is the share of jumps that land on a deadline (exactly,
	// 1ms before or 1ms after).
	BoundaryRate float64
	// MaxJumpMS is the longest a clock jump or a pause may be.
	MaxJumpMS int64
	// Depth is the PCT depth (Burckhardt et al., ASPLOS 2010): d-1
	// priority change points; 0 picks who moves uniformly at random.
	Depth int
	// RivalRate is the share of operations issued while another process's
	// operation waits at a yield point that are its rival (Subject.Rival).
	RivalRate float64
}

// DrawSwarm draws the fault mix and the strategy from r: the rates of the
// kinds of fault, in rank order, then the rest.
func DrawSwarm(r *rand.Rand) Swarm {
	sw := Swarm{Rates: map[string]float64{}}
	for _, knob := range swarmKnobs() {
		knob(&sw, r)
	}
	return sw
}

// swarmKnobs draw a swarm, each one of its choices: DrawSwarm draws them
// all, in this order; a guided sweep's child draws one of them afresh
// (mutate).
func swarmKnobs() []func(*Swarm, *rand.Rand) {
	pick := func(r *rand.Rand, choices ...float64) float64 { return choices[r.IntN(len(choices))] }
	var out []func(*Swarm, *rand.Rand)
	for _, k := range fault.Kinds() {
		if k.Draw != nil && k.Draw.Stream == 0 {
			out = append(out, func(sw *Swarm, r *rand.Rand) { sw.Rates[k.Name] = pick(r, k.Draw.Rates...) })
		}
	}
	return append(out,
		func(sw *Swarm, r *rand.Rand) { sw.BoundaryRate = pick(r, 0.2, 0.5, 0.8) },
		func(sw *Swarm, r *rand.Rand) { sw.MaxJumpMS = int64(pick(r, 100, 2_000, 30_000)) },
		func(sw *Swarm, r *rand.Rand) { sw.Depth = int(pick(r, 0, 1, 2, 2, 3, 3, 4)) },
		func(sw *Swarm, r *rand.Rand) { sw.RivalRate = pick(r, 0, 0.25, 0.5) })
}

// mutate is the swarm with one of its choices drawn afresh from r.
func (s Swarm) mutate(r *rand.Rand) Swarm {
	s.Rates = maps.Clone(s.Rates)
	knobs := swarmKnobs()
	knobs[r.IntN(len(knobs))](&s, r)
	return s
}

// Strategy names how the run chose who moves next.
func (s Swarm) Strategy() string {
	if s.Depth == 0 {
		return "random"
	}
	return fmt.Sprintf("pct depth %d", s.Depth)
}

// Explore is the run of seed: the seed decides, as the run goes, which
// client issues what, which process moves at each yield point (PCT, or
// uniformly, as the swarm says), and which fault strikes when. Every
// decision is a step of the result's schedule, so Run replays it exactly.
// When the clients have issued p.Steps operations, the operations in flight
// run to their ends and the workload reads back what it wrote.
//
// With p.PowerCuts the seed also cuts the power, on a forgetful file system
// mounted under dir for the run (Sweep mounts one for all its runs).
func Explore(ctx context.Context, subj Subject, b Launcher, seed int64, p Params, dir string) (Result, error) {
	l := newLazyDisk(p, subj, dir)
	defer l.close()
	d, why := l.forSeed(seed)
	return explore(ctx, subj, b, seed, p, dir, d, why)
}

// explore is Explore on disk (nil: under dir, cutting no power, for the
// reason noPower). A seed whose power stream cuts no power runs under dir
// even when it is given a disk: its run is the same step for step, and a
// plain folder is faster than any FUSE mount.
func explore(ctx context.Context, subj Subject, b Launcher, seed int64, p Params, dir string, d *lossyfs.Disk, noPower string) (Result, error) {
	return exploreFrom(ctx, subj, b, seed, nil, p, dir, d, noPower)
}

// exploreFrom is explore, its random streams drawn afresh at each of
// branches (a guided sweep's child, guide.go), and its clients issuing the
// branch's Tail more operations: up to the first branch the run is seed's,
// step for step.
func exploreFrom(ctx context.Context, subj Subject, b Launcher, seed int64, branches []Branch, p Params, dir string, d *lossyfs.Disk, noPower string) (Result, error) {
	if p.PowerCuts && drawPower(seed).rate == 0 {
		d = nil
	}
	p = p.withDefaults()
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	swarm := DrawSwarm(r)
	s := Schedule{Store: subj.Model.Contract().Name, Seed: seed, Clients: p.Clients, Processes: p.Processes, Strategy: swarm.Strategy(),
		Capabilities: subj.Capabilities, Overlap: p.Overlap, Branches: branches}
	if d != nil && !p.EntriesDurable {
		s.EntryModel = drawEntryModel(seed)
	}
	e, cleanup, err := newEngine(ctx, subj, b, s, dir, d)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	e.res.NoPowerCuts = noPower
	e.whole = p.Whole
	points := b.CrashPoints()
	e.res.CrashPoints = len(points) > 0
	if e.res.Failure != nil {
		return *e.res, nil
	}
	x := &explorer{r: r, swarm: swarm, workload: subj.NewWorkload(), rival: subj.Rival, p: p, points: points,
		clients: make([]*rand.Rand, p.Clients), counts: make([]int, p.Clients)}
	x.draws = drawsOf(seed, r, swarm, p.PowerCuts)
	for i := range x.clients {
		x.clients[i] = rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
	}
	x.deadliner, _ = x.workload.(Deadliner)
	// A seed that cuts the power writes through the forgetful file system,
	// where a big draw's MiB and hundred transactions cost several runs:
	// it makes one at half the rate, with power cuts off too (so that a
	// seed whose power stream strikes nowhere runs as without it).
	x.big = drawBig(seed, x.workload, p.Steps, drawPower(seed).rate != 0)
	// A thread of the scheduler is a process, or where operations overlap
	// inside one, a client.
	threads := p.Processes
	if p.Overlap {
		threads = p.Clients
	}
	x.sched = newScheduler(rand.New(rand.NewPCG(uint64(seed), 0x9c7)), threads, swarm.Depth, p.Steps*3)
	step := 0
	next := func() int { step++; return step - 1 }
	for issued, limit := 0, p.Steps; ; {
		if err := ctx.Err(); err != nil {
			return *e.res, err
		}
		// A branch at the step the clients would stop at still branches
		// (its tail goes on from there).
		for len(branches) > 0 && step >= branches[0].At {
			switch b := branches[0]; {
			case b.Flip:
				x.sched.flip()
			case b.Sched:
				x.sched = newScheduler(rand.New(rand.NewPCG(uint64(b.Seed), 0x9c7)), threads, x.swarm.Depth, p.Steps*3)
			default:
				x.branch(b.Seed, threads)
			}
			// A longer tail: the child issues more than its parent did.
			limit += branches[0].Tail
			branches = branches[1:]
			// The branch may have drawn the scheduler's depth afresh.
			if st := x.swarm.Strategy(); !strings.HasSuffix(e.res.Schedule.Strategy, st) {
				e.res.Schedule.Strategy += ", then " + st
			}
		}
		if issued >= limit {
			break
		}
		if x.big != nil && issued == x.big.at {
			if !x.issueBig(e, next) {
				return *e.res, nil
			}
		}
		steps, isOp := x.next(e)
		if isOp {
			issued++
		}
		for _, st := range steps {
			if !e.do(next(), st) {
				return *e.res, nil
			}
		}
	}
	e.res.Issued = step
	if !e.drain(next) {
		return *e.res, nil
	}
	if o, ok := x.workload.(Observer); ok {
		for _, op := range o.Observe() {
			c := 0
			st := Step{Kind: StepOp, ID: spec.OpID(c, x.counts[c]), Client: c, Op: op}
			x.counts[c]++
			if !e.do(next(), st) || !e.drain(next) {
				return *e.res, nil
			}
		}
	}
	return *e.res, nil
}

// explorer decides a run's steps from its seed.
type explorer struct {
	r         *rand.Rand
	swarm     Swarm
	workload  linearizability.Workload
	rival     func(spec.Op, *rand.Rand) spec.Op
	deadliner Deadliner
	p         Params
	points    []string
	clients   []*rand.Rand
	counts    []int
	deadlines []int64
	sched     *scheduler
	draws     []*drawn
	big       *bigDraw
}

// BigRate is the share of runs that make their workload's big draw
// (linearizability.Sizer): list arguments, values and tables past the
// sizes an implementation breaks at.
const BigRate = 0.15

// bigDraw is a run's big draw: made when the clients have issued at
// operations, from a stream of its own, so that the run's other draws are
// those of a run without it. A workload may decline one (no operations).
type bigDraw struct {
	sizer     linearizability.Sizer
	r         *rand.Rand
	at        int
	forgetful bool
}

// drawBig is seed's big draw, nil for a run without one (or a workload
// without big draws); forgetful, of a seed that may cut the power.
func drawBig(seed int64, w linearizability.Workload, steps int, forgetful bool) *bigDraw {
	sz, ok := w.(linearizability.Sizer)
	if !ok {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0xb16))
	rate := BigRate
	if forgetful {
		rate /= 2
	}
	if r.Float64() >= rate {
		return nil
	}
	// Late in the run: the tables it grows weigh on few operations after.
	return &bigDraw{sizer: sz, r: r, at: steps*3/4 + r.IntN(max(steps/4, 1)), forgetful: forgetful}
}

// issueBig makes the big draw: the operations in flight are run to their
// ends, then the draw's client issues its operations one at a time, each
// run to its end (they are few, but long: no other client comes between).
func (x *explorer) issueBig(e *engine, next func() int) bool {
	b := x.big
	x.big = nil
	if !e.drain(next) {
		return false
	}
	at := e.clock.Now().UnixMilli()
	c, n := b.sizer.Big(b.r, at, b.forgetful)
	if c < 0 || c >= len(x.counts) {
		return true // a client the run does not have
	}
	for range n {
		op := linearizability.NextOp(x.workload, b.r, c, x.counts[c], at)
		st := Step{Kind: StepOp, ID: spec.OpID(c, x.counts[c]), Client: c, Op: op, Alone: true}
		x.counts[c]++
		if x.deadliner != nil {
			x.deadlines = append(x.deadlines, x.deadliner.Deadlines(op, at)...)
		}
		if !e.do(next(), st) || !e.drain(next) {
			return false
		}
	}
	return true
}

// branch draws the run's choices from here on from seed: the streams of
// the run, of its clients, of its faults and of its scheduler, and one of
// the swarm's choices afresh. What the run has done stays: the workload,
// the deadlines it set, the operations in flight.
func (x *explorer) branch(seed int64, threads int) {
	x.r = rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	x.swarm = x.swarm.mutate(x.r)
	for i := range x.clients {
		x.clients[i] = rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
	}
	x.draws = drawsOf(seed, x.r, x.swarm, x.p.PowerCuts)
	x.sched = newScheduler(rand.New(rand.NewPCG(uint64(seed), 0x9c7)), threads, x.swarm.Depth, x.p.Steps*3)
}

// drawn is a kind of fault as a run draws it: from the run's stream, or
// from one of its own, at the rate the seed picked.
type drawn struct {
	kind *fault.Kind
	r    *rand.Rand
	rate float64
}

// own is the kind drawn from its stream of its own, at the rate the seed
// picks from that stream.
func own(k *fault.Kind, seed int64) *drawn {
	r := rand.New(rand.NewPCG(uint64(seed), k.Draw.Stream))
	return &drawn{kind: k, r: r, rate: k.Draw.Rates[r.IntN(len(k.Draw.Rates))]}
}

// drawsOf is how a run of seed draws each kind of fault, in rank order:
// those of its stream r at the rates of the swarm, the others from their
// own; those that act on a forgetful file system only with power cuts on.
func drawsOf(seed int64, r *rand.Rand, sw Swarm, powerCuts bool) []*drawn {
	var out []*drawn
	for _, k := range fault.Kinds() {
		switch {
		case k.Draw == nil || (k.ForgetfulDisk && !powerCuts):
		case k.Draw.Stream != 0:
			out = append(out, own(k, seed))
		default:
			out = append(out, &drawn{kind: k, r: r, rate: sw.Rates[k.Name]})
		}
	}
	return out
}

// ready is whether the kind can strike at d, in e.
func (k *drawn) ready(e *engine, d *fault.Drawing) bool {
	return (!k.kind.ForgetfulDisk || e.disk != nil) && (k.kind.Draw.Ready == nil || k.kind.Draw.Ready(d))
}

// step is the kind's fault drawn at d, as a step.
func (k *drawn) step(d fault.Drawing) Step {
	d.R = k.r
	f, process := k.kind.Draw.Make(&d)
	return Step{Kind: StepFault, Process: process, Fault: f}
}

// next is the run's next steps, and whether they issue an operation.
func (x *explorer) next(e *engine) ([]Step, bool) {
	sw := x.swarm
	now := e.clock.Now().UnixMilli() - Epoch.UnixMilli()
	d := fault.Drawing{Processes: x.p.Processes, NowMS: now, Deadlines: func() []int64 { return x.deadlinesAfter(now) },
		BoundaryRate: sw.BoundaryRate, MaxMS: sw.MaxJumpMS}
	if e.disk != nil {
		d.Unsynced = func() (map[string][]int, error) { return e.disk.Unsynced(e.work) }
		d.Entries = func() ([]string, error) { return e.disk.Entries(e.work) }
	}
	// The kinds of streams of their own first, each from its stream; then
	// one draw of the run's stream picks among the others.
	for _, k := range x.draws {
		if k.kind.Draw.Stream != 0 && !k.kind.Draw.BeforeOp && k.ready(e, &d) && k.r.Float64() < k.rate {
			return []Step{k.step(d)}, false
		}
	}
	f := x.r.Float64()
	for _, k := range x.draws {
		if k.kind.Draw.Stream != 0 || k.kind.Draw.BeforeOp || !k.ready(e, &d) {
			continue
		}
		if f < k.rate {
			return []Step{k.step(d)}, false
		}
		f -= k.rate
	}
	n, c, resume := x.pickProcess(e)
	if resume != nil {
		return []Step{*resume}, false
	}
	at := e.clock.Now().UnixMilli()
	var op spec.Op
	if x.rival != nil && x.r.Float64() < sw.RivalRate {
	rival:
		for _, p := range e.procs {
			for _, f := range p.flights {
				if f.place != "" {
					op = x.rival(f.sym, x.r)
					break rival
				}
			}
		}
	}
	if op == nil {
		op = linearizability.NextOp(x.workload, x.clients[c], c, x.counts[c], at)
	}
	st := Step{Kind: StepOp, ID: spec.OpID(c, x.counts[c]), Client: c, Op: op}
	x.counts[c]++
	if x.deadliner != nil {
		x.deadlines = append(x.deadlines, x.deadliner.Deadlines(op, at)...)
	}
	// The kinds drawn before an operation (a crash point armed) are steps
	// of their own, just before it.
	d.Process, d.CrashPoints = n, pointsOf(x.points, op.Name())
	var steps []Step
	for _, k := range x.draws {
		if k.kind.Draw.BeforeOp && k.ready(e, &d) && k.r.Float64() < k.rate {
			steps = append(steps, k.step(d))
		}
	}
	return append(steps, st), true
}

// pickProcess is who moves next: the process n and the client c that issues
// its next operation there, or the resume step of an operation in flight.
// A thread of the scheduler is a process (an idle one's client is drawn),
// or, where operations overlap inside a process, a client, enabled while
// its process has fewer than Callers in flight (or it has one of them).
func (x *explorer) pickProcess(e *engine) (n, c int, resume *Step) {
	if !x.p.Overlap {
		busy := make([]bool, len(e.procs))
		for i, p := range e.procs {
			busy[i] = p.busy()
		}
		x.sched.sync(busy)
		n = x.sched.pick(nil)
		if busy[n] {
			return n, 0, &Step{Kind: StepResume, Process: n}
		}
		// Process n is idle: one of its clients issues its next operation.
		var mine []int
		for c := range x.p.Clients {
			if c%x.p.Processes == n {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			return n, 0, &Step{Kind: StepResume, Process: n}
		}
		return n, mine[x.r.IntN(len(mine))], nil
	}
	busy, enabled := make([]bool, x.p.Clients), make([]bool, x.p.Clients)
	for c := range busy {
		p := e.procs[c%x.p.Processes]
		busy[c] = p.flightOf(c) != nil
		enabled[c] = busy[c] || len(p.flights) < x.p.Callers
	}
	x.sched.sync(busy)
	c = x.sched.pick(enabled)
	n = c % x.p.Processes
	if busy[c] {
		return n, c, &Step{Kind: StepResume, Process: n, Client: c}
	}
	return n, c, nil
}

func (x *explorer) deadlinesAfter(now int64) []int64 {
	var out []int64
	for _, d := range x.deadlines {
		if d-Epoch.UnixMilli() >= now {
			out = append(out, d-Epoch.UnixMilli())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func pointsOf(all []string, op string) []string {
	var out []string
	for _, p := range all {
		if strings.HasPrefix(p, op+"/") {
			out = append(out, p)
		}
	}
	return out
}
