package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/reference"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
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

// A backend whose batch ids, claim ids and tokens and checkpoint refs are
// not the reference's (the reference, renamed consistently) passes the
// default sweep, crashes and kills included.
func TestRuntimeRenamedIdsPassTheDefaultSweep(t *testing.T) {
	subj := runtimeSubject
	subj.CrashPoints = refruntime.CrashPoints
	backend := InProcess(linearizability.RenamedRuntime(reference.Backend(reference.Options{})), "runtime")
	ran, renamed := 0, 0
	err := Sweep(context.Background(), subj, backend, DefaultSeeds.Seeds(Shard{}), Params{}, 0, ScratchDir(), func(r Result) {
		ran++
		if strings.Contains(strings.Join(r.Trace, "\n"), `"claim_id":"claim~`) {
			renamed++
		}
		if r.Failure != nil {
			t.Errorf("seed %d: the renamed reference was flagged: %v", r.Schedule.Seed, r.Failure)
		}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ran != len(DefaultSeeds.Seeds(Shard{})) || renamed == 0 {
		t.Fatalf("ran %d seeds, %d of them with a claim of a renamed id", ran, renamed)
	}
	t.Logf("%d seeds, %d of them with a claim of a renamed id", ran, renamed)
}
