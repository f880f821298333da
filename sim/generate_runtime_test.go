package sim

import (
	"fmt"
	"testing"

	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

var runtimeSubject = Subject{Model: model.Runtime{}, NewWorkload: linearizability.DefaultRuntimeWorkload.New, RareEvents: model.RuntimeEvents}

// The runtime workload generates the same schedule for the same seed, and a
// sweep of seeds, stepped through the model in the simulated order, reaches
// every rare runtime event.
func TestRuntimeScheduleSweepReachesEveryEvent(t *testing.T) {
	a, b := Generate(runtimeSubject, 7, Params{}), Generate(runtimeSubject, 7, Params{})
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("one seed generated two schedules")
	}
	m := model.Runtime{}
	seen := map[string]int{}
	for seed := range int64(100) {
		s := Generate(runtimeSubject, seed, Params{Steps: 400})
		state, now := m.Init(), Epoch.UnixMilli()
		// The model's answers stand for the store's: a reference resolves
		// to the hole the model answered, which its state holds.
		answers := spec.Answers{}
		for _, st := range s.Steps {
			switch st.Kind {
			case StepJump:
				now += st.JumpMS
			case StepOp:
				op := answers.Resolve(st.Op)
				next, out := model.Expect(m, state, op, now)
				if out.Kind == "" {
					answers[st.ID] = out.Result
				}
				for _, e := range m.Events(state, op, now, out) {
					seen[e]++
				}
				state = next
			}
		}
	}
	for _, e := range runtimeSubject.RareEvents {
		if seen[e] == 0 {
			t.Errorf("no seed reached %q", e)
		}
	}
	t.Log(seen)
}
