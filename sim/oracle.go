package sim

import (
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// oracle is the model stepped in the simulated order. It holds every state
// the run may be in: after an indefinite operation (it happened or it did
// not), and where the contract lets the backend choose (a reading the seed
// leaves open, an id it mints). An answer is right when some state allows
// it; the states that allow it survive.
type oracle struct {
	m      model.Model
	states []model.State
}

func newOracle(m model.Model) *oracle { return &oracle{m: m, states: []model.State{m.Init()}} }

// step checks a definite answer. When no state allows it, it returns every
// branch the model allowed, for the report.
func (o *oracle) step(op spec.Op, nowMS int64, got model.Outcome) ([]model.Branch, bool) {
	next, allowed := model.Follow(o.m, o.states, op, nowMS, got)
	if next == nil {
		return allowed, false
	}
	o.states = next
	return nil, true
}

// fork takes an indefinite operation: each state splits into the one where
// it never happened and the ones it may have left.
func (o *oracle) fork(op spec.Op, nowMS int64) {
	var next []model.State
	for _, s := range o.states {
		for _, n := range model.Effects(o.m, s, op, nowMS) {
			next = model.AppendState(next, n)
		}
	}
	o.states = next
}

// events are the coverage events op, answered got, reaches from the first
// possible state; an indefinite operation is counted as the model expects
// it to answer.
func (o *oracle) events(op spec.Op, nowMS int64, got model.Outcome, definite bool) []string {
	ev, ok := o.m.(model.Eventful)
	if !ok {
		return nil
	}
	if !definite {
		_, got = model.Expect(o.m, o.states[0], op, nowMS)
	}
	return ev.Events(o.states[0], op, nowMS, got)
}
