package sim

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/renamed"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
)

var runtimeSubject = Subject{
	Model:       model.Runtime{},
	NewWorkload: linearizability.DefaultRuntimeWorkload.New,
	RareEvents:  append(slices.Clone(model.RuntimeEvents), EventCrashInside, EventAnswerLost, EventKill),
}

// A backend whose batch ids, claim ids and tokens and checkpoint refs are
// not the reference's (the reference, renamed consistently) passes the
// default sweep, crashes and kills included: the simulator learns every id
// from the answer that minted it (rule runtime.minted_ids).
func TestRuntimeRenamedIdsPassTheDefaultSweep(t *testing.T) {
	backend := InProcess(renamed.Runtime(stores.Reference()), "runtime")
	ran, withRenamed := 0, 0
	err := Sweep(context.Background(), runtimeSubject, backend, DefaultSeeds.Seeds(Shard{}), Params{}, 0, ScratchDir(), func(r Result) {
		ran++
		if strings.Contains(strings.Join(r.Trace, "\n"), `"claim_id":"claim~`) {
			withRenamed++
		}
		if r.Failure != nil {
			t.Errorf("seed %d: the renamed reference was flagged: %v", r.Schedule.Seed, r.Failure)
		}
		if r.Inconclusive {
			t.Errorf("seed %d: inconclusive", r.Schedule.Seed)
		}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ran != len(DefaultSeeds.Seeds(Shard{})) || withRenamed == 0 {
		t.Fatalf("ran %d seeds, %d of them with a claim of a renamed id", ran, withRenamed)
	}
	t.Logf("%d seeds, %d of them with a claim of a renamed id", ran, withRenamed)
}
