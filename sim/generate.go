package sim

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// Subject is what the simulator knows of one store.
type Subject struct {
	Model model.Model
	// NewWorkload makes the workload of one schedule (workloads remember
	// what each client did).
	NewWorkload func() linearizability.Workload
	// CrashPoints are the store's crash points, "<operation>/<place>".
	CrashPoints []string
	// RareEvents are the coverage events the default sweep must reach.
	RareEvents []string
}

// Deadliner is a workload whose operations set deadlines (a lease's or a
// claim's expiry): the clock jumps are biased to land on, just before and
// just after them.
type Deadliner interface {
	Deadlines(op spec.Op, nowMS int64) []int64
}

// Params sizes a schedule.
type Params struct {
	// Steps is the schedule's length (default 200).
	Steps int
	// Clients and Processes: default 8 clients over 2 processes.
	Clients, Processes int
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
	return p
}

// Swarm is a run's mix of faults, drawn from its seed, so that a sweep of
// seeds covers very different runs: some calm, some crashing constantly,
// some spending their time on clock boundaries.
type Swarm struct {
	JumpRate, KillRate, CrashRate float64
	// BoundaryRate is the share of jumps that land on a deadline (exactly,
	// 1ms before or 1ms after).
	BoundaryRate float64
	MaxJumpMS    int64
}

// DrawSwarm draws the fault mix from r.
func DrawSwarm(r *rand.Rand) Swarm {
	pick := func(choices ...float64) float64 { return choices[r.IntN(len(choices))] }
	return Swarm{
		JumpRate:     pick(0, 0.05, 0.15, 0.3),
		KillRate:     pick(0, 0, 0.01, 0.04),
		CrashRate:    pick(0, 0.05, 0.2),
		BoundaryRate: pick(0.2, 0.5, 0.8),
		MaxJumpMS:    int64(pick(100, 2_000, 30_000)),
	}
}

// Generate is the schedule of seed: everything the run will do.
func Generate(subj Subject, seed int64, p Params) Schedule {
	p = p.withDefaults()
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	swarm := DrawSwarm(r)
	clients := make([]*rand.Rand, p.Clients)
	counts := make([]int, p.Clients)
	for i := range clients {
		clients[i] = rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
	}
	s := Schedule{Store: subj.Model.Contract().Name, Seed: seed, Clients: p.Clients, Processes: p.Processes}
	workload := subj.NewWorkload()
	deadliner, _ := workload.(Deadliner)
	var now int64
	var deadlines []int64
	for len(s.Steps) < p.Steps {
		switch x := r.Float64(); {
		case x < swarm.JumpRate:
			jump := 1 + r.Int64N(swarm.MaxJumpMS)
			if future := deadlinesAfter(deadlines, now); len(future) > 0 && r.Float64() < swarm.BoundaryRate {
				target := future[r.IntN(len(future))] + int64(r.IntN(3)) - 1
				jump = max(target-now, 0)
			}
			now += jump
			s.Steps = append(s.Steps, Step{Kind: StepJump, JumpMS: jump})
		case x < swarm.JumpRate+swarm.KillRate:
			s.Steps = append(s.Steps, Step{Kind: StepKill, Process: r.IntN(p.Processes)})
		default:
			c := r.IntN(p.Clients)
			op := linearizability.NextOp(workload, clients[c], c, counts[c], Epoch.UnixMilli()+now)
			st := Step{Kind: StepOp, ID: spec.OpID(c, counts[c]), Client: c, Op: op}
			counts[c]++
			if points := pointsOf(subj.CrashPoints, op.Name()); len(points) > 0 && r.Float64() < swarm.CrashRate {
				st.CrashAt = points[r.IntN(len(points))]
			}
			if deadliner != nil {
				deadlines = append(deadlines, deadliner.Deadlines(op, Epoch.UnixMilli()+now)...)
			}
			s.Steps = append(s.Steps, st)
		}
	}
	return s
}

func deadlinesAfter(ds []int64, now int64) []int64 {
	var out []int64
	for _, d := range ds {
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
