package fault_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// jolt is a kind of fault only this test knows, defined whole here and in
// no other file: it jumps the clock By and kills the backend process.
type jolt struct{ By time.Duration }

func (f jolt) Inject(ctx context.Context, env fault.Env) error {
	if err := env.AdvanceClock(f.By); err != nil {
		return err
	}
	return env.Kill(ctx)
}

func (f jolt) String() string {
	return fmt.Sprintf("jolt: jump the clock by %s, then kill the backend", f.By)
}

type joltJSON struct {
	ByMS int64 `json:"by_ms,omitempty"`
}

var _ = fault.Register(fault.Def[jolt, joltJSON]{
	Name:   "jolt",
	Rank:   1000,
	Wire:   func(f jolt) joltJSON { return joltJSON{ByMS: f.By.Milliseconds()} },
	Unwire: func(j joltJSON) (jolt, error) { return jolt{By: time.Duration(j.ByMS) * time.Millisecond}, nil },
	Draw: &fault.Draw{Rates: []float64{0.03}, Make: func(d *fault.Drawing) (fault.Fault, int) {
		process := d.R.IntN(d.Processes)
		return jolt{By: time.Duration(1+d.R.Int64N(d.MaxMS)) * time.Millisecond}, process
	}},
	Shrink: func(f jolt) (jolt, bool) { return jolt{By: (f.By / 2).Truncate(time.Millisecond)}, f.By > 0 },
})

func jolts(s sim.Schedule) []jolt {
	var out []jolt
	for _, st := range s.Steps {
		if j, ok := st.Fault.(jolt); ok && st.Kind == sim.StepFault {
			out = append(out, j)
		}
	}
	return out
}

// A kind of fault registered by one Def, in one file, is what every part
// of the kit sees: the simulator draws it and strikes it (its Inject,
// through the simulator's Env), a saved schedule writes and reads it by its
// name, the shrinker shrinks it by its Shrink, and storecheck replay's path
// (conformance.ReadSchedule, conformance.Replay) runs it again.
func TestAKindRegisteredInOneFileIsDrawnSavedShrunkAndReplayed(t *testing.T) {
	ctx := context.Background()
	if !slices.Contains(fault.Names, "jolt") || fault.Name(jolt{}) != "jolt" {
		t.Fatalf("the registered kind is not named: %v", fault.Names)
	}
	b, err := fault.Marshal(jolt{By: 1500 * time.Millisecond})
	if back, err2 := fault.Unmarshal(b); err != nil || err2 != nil || string(b) != `{"type":"jolt","by_ms":1500}` || back != (jolt{By: 1500 * time.Millisecond}) {
		t.Fatalf("written as %s (%v), read back as %v (%v)", b, err, back, err2)
	}
	if _, err := fault.Unmarshal([]byte(`{"type":"jolt","file":"x"}`)); err == nil || !strings.Contains(err.Error(), "fault jolt has no file") {
		t.Fatalf("a field the kind does not have: %v", err)
	}
	st, _ := conformance.StoreNamed("continuity")
	subj := st.Subject(spec.Capabilities{})
	broken := stores.Backend(stores.Options{Bug: bugs.ContinuityWriteBehind})
	// Write-behind acknowledges upserts before they are durable: with one
	// process only a crash shows it, and a jolt is one.
	for seed := int64(1); seed <= 40; seed++ {
		res, err := sim.Explore(ctx, subj, sim.InProcess(broken, "continuity"), seed, sim.Params{Processes: 1}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		drawn := jolts(res.Schedule)
		if len(drawn) == 0 || res.Coverage["fault jolt"] != len(drawn) {
			t.Fatalf("seed %d: %d jolts drawn, %d struck", seed, len(drawn), res.Coverage["fault jolt"])
		}
		if res.Failure == nil {
			continue
		}
		small, err := sim.Shrink(ctx, subj, sim.InProcess(broken, "continuity"), res, t.TempDir(), 300)
		if err != nil {
			t.Fatal(err)
		}
		others := slices.ContainsFunc(small.Schedule.Steps, func(st sim.Step) bool {
			_, ok := st.Fault.(jolt)
			return st.Kind == sim.StepFault && !ok
		})
		if left := jolts(small.Schedule); len(left) != 1 || others {
			continue // another fault crashed it: not this kind's proof
		}
		if left := jolts(small.Schedule); left[0].By != 0 || small.Failure.Signature() != res.Failure.Signature() {
			t.Fatalf("seed %d: the jolt shrank to %v, failing as %q (was %q)", seed, left[0], small.Failure.Signature(), res.Failure.Signature())
		}
		path := filepath.Join(t.TempDir(), "schedule.json")
		if err := small.Schedule.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		if saved, _ := os.ReadFile(path); !strings.Contains(string(saved), `"fault":{"type":"jolt"}`) {
			t.Fatalf("the saved schedule:\n%s", saved)
		}
		s, err := conformance.ReadSchedule(path)
		if err != nil {
			t.Fatal(err)
		}
		again, err := conformance.Replay(ctx, conformance.Adapter(broken), s, conformance.Config{})
		if err != nil || again.Failure == nil || again.Failure.Signature() != small.Failure.Signature() || again.Hash() != small.Hash() {
			t.Fatalf("the saved schedule replays as %v %v, want %v", err, again.Failure, small.Failure)
		}
		if !slices.ContainsFunc(again.Trace, func(l string) bool { return strings.HasSuffix(l, "jolt: jump the clock by 0s, then kill the backend") }) {
			t.Fatalf("the replay struck no jolt:\n%s", strings.Join(again.Trace, "\n"))
		}
		if ok, err := conformance.Replay(ctx, conformance.Reference(), s, conformance.Config{}); err != nil || ok.Failure != nil {
			t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
		}
		t.Logf("seed %d: %d steps shrunk to %d:\n%s", seed, len(res.Schedule.Steps), len(small.Schedule.Steps), strings.Join(small.Trace, "\n"))
		return
	}
	t.Fatal("seeds 1..40 never failed the write-behind bug by a jolt alone")
}
