package sim

import (
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// oracle is the model stepped in the simulated order. After an indefinite
// operation the run may be in either of two states (it happened or it did
// not), so the oracle holds every state the run may be in, and an answer is
// right when some state allows it.
type oracle struct {
	m      model.Model
	states []model.State
}

func newOracle(m model.Model) *oracle { return &oracle{m: m, states: []model.State{m.Init()}} }

// step checks a definite answer: the states that allow it survive. When none
// does, it returns every answer the model allowed.
func (o *oracle) step(op spec.Op, nowMS int64, got model.Outcome) ([]model.Outcome, bool) {
	var next []model.State
	var allowed []model.Outcome
	for _, s := range o.states {
		n, want := o.m.Step(s, op, nowMS)
		if want.Same(got) {
			next = appendState(next, n)
		} else {
			allowed = append(allowed, want)
		}
	}
	if len(next) == 0 {
		return dedupe(allowed), false
	}
	o.states = next
	return nil, true
}

// fork takes an indefinite operation: each state splits into the one where
// it happened and the one where it did not.
func (o *oracle) fork(op spec.Op, nowMS int64) {
	var next []model.State
	for _, s := range o.states {
		n, _ := o.m.Step(s, op, nowMS)
		next = appendState(appendState(next, s), n)
	}
	o.states = next
}

// events are the coverage events op reaches from the first possible state.
func (o *oracle) events(op spec.Op, nowMS int64) []string {
	if ev, ok := o.m.(model.Eventful); ok {
		return ev.Events(o.states[0], op, nowMS)
	}
	return nil
}

func appendState(states []model.State, s model.State) []model.State {
	for _, t := range states {
		if t.Equal(s) {
			return states
		}
	}
	return append(states, s)
}

func dedupe(outs []model.Outcome) []model.Outcome {
	var res []model.Outcome
	for _, o := range outs {
		dup := false
		for _, r := range res {
			if r.Same(o) {
				dup = true
			}
		}
		if !dup {
			res = append(res, o)
		}
	}
	return res
}
