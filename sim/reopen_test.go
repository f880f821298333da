package sim

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/spec"
)

// A store that cannot open what a power cut left durable breaks the rule
// that its acknowledged writes survive the cut: a verdict naming the rule.
// A program that dies or breaks the protocol on its way up is the
// backend's own failure, as before.
func TestAStoreThatCannotReopenAfterACutBreaksTheDurabilityRule(t *testing.T) {
	st := Step{Kind: StepFault}
	const state = "at step 7 every one of the 3 unsynced writes lost; no directory entry op undone (posix model)"
	v := reopenFailure(7, st, 1, "continuity", state, spec.Errorf(spec.ErrIO, "writer: file is not a database (26)"))
	if v.Backend != nil || !slices.Equal(v.Rules, []string{"continuity.survives_power_loss"}) || !strings.Contains(v.Error(), "broken: continuity.survives_power_loss") {
		t.Errorf("an open answered io after a cut: %v (backend %v)", v, v.Backend)
	}
	if !strings.Contains(v.Error(), "the crash states the power cuts left: "+state) {
		t.Errorf("the verdict does not name the crash state: %v", v)
	}
	if f := reopenFailure(7, st, 1, "continuity", state, errors.New("the program exited")); f.Backend == nil {
		t.Errorf("a program that died on its way up: %v, want a backend failure", f)
	}
}

// Seen end to end: a store that never syncs (synchronous=OFF) and a cut
// that tears the first page of its database file: the store opened again
// finds no database, and the run fails on the durability rule, not as a
// backend failure. The reference opens again on the same cut.
func TestATornHeaderTheStoreNeverSyncedIsAVerdict(t *testing.T) {
	if err := lossyfs.Available(); err != nil {
		t.Skipf("no forgetful file system here: %v", err)
	}
	ctx := context.Background()
	cut := Schedule{Store: "continuity", Seed: 1, Clients: 1, Processes: 1, Steps: []Step{
		{Kind: StepFault, Process: 0, Fault: fault.PowerCut{Kept: lossyfs.Fates{{File: "continuity.db", N: 1, Sectors: []int{1}}}}},
	}}
	tornState := regexp.MustCompile(`the crash states the power cuts left: at step 0 of the \d+ unsynced writes only continuity\.db#1 \(torn: sectors 1\) survive \(0 whole, 1 torn\); every directory entry op durable at once \(no entry model\)`)
	for _, c := range []struct {
		name string
		bug  bugs.Bug
		fail bool
	}{{"synchronous=OFF", bugs.ContinuitySynchronousOff, true}, {"the reference", bugs.Bug{}, false}} {
		res, err := Run(ctx, continuitySubject, referenceBackend(c.bug), cut, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch {
		case c.fail && (res.Failure == nil || res.Failure.Backend != nil || res.Failure.Op != "open after the power cut"):
			t.Errorf("%s: %v, want the durability rule broken at the reopen\n%s", c.name, res.Failure, strings.Join(res.Trace, "\n"))
		case c.fail && !tornState.MatchString(res.Failure.Error()):
			// The verdict names the state it could not survive.
			t.Errorf("%s: the verdict names no crash state: %v", c.name, res.Failure)
		case !c.fail && res.Failure != nil:
			t.Errorf("%s: %v", c.name, res.Failure)
		}
	}
}
