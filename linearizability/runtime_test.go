package linearizability

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/renamed"
	"github.com/storecheck/storecheck/linearizability/model"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

func runtimeOpener(t testing.TB, bug bugs.Bug) Opener { return referenceOpener(t, "runtime", bug) }

// sequential runs the workload's clients as the concurrent runner does, one
// operation at a time: epochs in which each client issues a few operations
// (in a random interleaving) while the clock stands still, and between them
// a jump of the clock by up to 3s. It hands each operation, its id (for
// references to its answer) and its time to do.
func sequential(seed uint64, steps, clients int, w Workload, do func(id string, op spec.Op, nowMS int64)) {
	pick := rand.New(rand.NewPCG(seed, 1<<40))
	rngs := make([]*rand.Rand, clients)
	counts := make([]int, clients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(seed, uint64(i)))
	}
	const perEpoch = 6
	now := Epoch.UnixMilli()
	for done := 0; done < steps; {
		var order []int
		for c := range clients {
			for range perEpoch {
				order = append(order, c)
			}
		}
		pick.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, c := range order[:min(len(order), steps-done)] {
			op := NextOp(w, rngs[c], c, counts[c], now)
			do(spec.OpID(c, counts[c]), op, now)
			counts[c]++
			done++
		}
		now += pick.Int64N(3_000)
	}
}

// The model and the reference are two statements of one contract: stepped
// through the same long random sequences, they must answer alike every time.
func TestRuntimeModelAgreesWithTheReference(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(20) {
		clock := clockwork.NewFakeClockAt(Epoch)
		s, err := refruntime.Open(ctx, refruntime.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		m := model.Runtime{Tier: r.Ephemeral}
		states := []model.State{m.Init()}
		step := 0
		answers := spec.Answers{}
		sequential(seed, 400, 8, DefaultRuntimeWorkload.New(), func(id string, op spec.Op, now int64) {
			if d := now - clock.Now().UnixMilli(); d > 0 {
				clock.Advance(time.Duration(d) * time.Millisecond)
			}
			op = answers.Resolve(op)
			for _, id := range model.Rules(m.Step(states[0], op, now)) {
				if _, ok := r.Contract.Rule(id); !ok {
					t.Fatalf("a branch of %s names the rule %q, which the runtime table does not have", op.Name(), id)
				}
			}
			res, err := r.Apply(ctx, s, op)
			if err == nil {
				answers[id] = res
			}
			got, _ := Outcome(r.Contract, res, err)
			next, allowed := model.Follow(m, states, op, now, got)
			if next == nil {
				want := model.Allowed(allowed)
				t.Fatalf("seed %d step %d: %s %+v: the reference answered %s, the model %s\nmodel state:\n%s",
					seed, step, op.Name(), op, got, want, states)
			}
			states = next
			step++
		})
		if got, err := s.DurabilityTier(ctx); err != nil || got != r.Ephemeral {
			t.Fatalf("durability tier %v %v", got, err)
		}
		s.Close()
	}
}

// Every rule the model's branches name is in the contract's table.
func TestRuntimeModelNamesRulesOfTheTable(t *testing.T) {
	for _, id := range model.RuntimeRules {
		if _, ok := r.Contract.Rule(id); !ok {
			t.Errorf("the model names the rule %q, which the runtime table does not have", id)
		}
	}
}

// label names an outcome for coverage: its error kind, or whether the
// operation changed the store ("ok") or answered without a change ("no
// change": a lease held by another, nothing to claim, a replayed turn).
func label(before, after model.State, out model.Outcome) string {
	switch {
	case out.Kind != "":
		return string(out.Kind)
	case before.Equal(after):
		return "no change"
	}
	return "ok"
}

// runtimeWrites are the outcomes a default run must reach, per write
// operation: every success and every failure the contract gives it.
var runtimeWrites = map[string][]string{
	"commit_runtime_state": {"ok", "no change", "session_binding_mismatch", "runtime_turn_commit_conflict",
		"session_execution_lease_expired", "head_revision_conflict", "queued_work_claim_expired", "graph_node_conflict", "invalid_argument"},
	"try_claim_session_execution_lease": {"ok", "no change"},
	"renew_session_execution_lease":     {"ok", "session_execution_lease_expired"},
	"release_session_execution_lease":   {"ok", "no change"},
	"enqueue_queued_work":               {"ok", "no change", "invalid_argument"},
	"claim_ready_queued_work":           {"ok", "no change", "session_execution_lease_expired", "invalid_argument"},
	"renew_queued_work_claim":           {"ok", "queued_work_claim_expired"},
	"abandon_queued_work_claim":         {"ok", "no change"},
	"cancel_queued_work_batch":          {"ok", "no change"},
	"save_session_meta":                 {"ok", "no change"},
	"tombstone_nodes":                   {"ok", "no change"},
	"vacuum":                            {"ok", "no change"},
	"gc_unreachable":                    {"ok", "no change"},
	"stage_attachment":                  {"ok", "no change"},
}

// runtimeCoverage runs the default workload sequentially against the model
// and counts outcomes by operation and label, and events. The model's own
// answers stand for the store's: a reference resolves to the hole the
// model answered, which its state holds.
func runtimeCoverage(seed uint64, steps int) (map[string]map[string]int, map[string]int) {
	m := model.Runtime{}
	state := m.Init()
	outcomes, events := map[string]map[string]int{}, map[string]int{}
	answers := spec.Answers{}
	sequential(seed, steps, 8, DefaultRuntimeWorkload.New(), func(id string, op spec.Op, now int64) {
		op = answers.Resolve(op)
		next, out := model.Expect(m, state, op, now)
		if out.Kind == "" {
			answers[id] = out.Result
		}
		for _, e := range m.Events(state, op, now, out) {
			events[e]++
		}
		if outcomes[op.Name()] == nil {
			outcomes[op.Name()] = map[string]int{}
		}
		outcomes[op.Name()][label(state, next, out)]++
		state = next
	})
	return outcomes, events
}

// The default workload must take every rule on both branches: a default
// run's worth of operations (2,000) of one seed reaches every success and
// failure of every write, and every rare event the simulator looks for.
func TestRuntimeWorkloadReachesEveryOutcome(t *testing.T) {
	outcomes, events := runtimeCoverage(1, 2_000)
	var missing []string
	for op, want := range runtimeWrites {
		for _, l := range want {
			if outcomes[op][l] == 0 {
				missing = append(missing, op+" "+l)
			}
		}
	}
	for _, e := range model.RuntimeEvents {
		if events[e] == 0 {
			missing = append(missing, "event: "+e)
		}
	}
	var b strings.Builder
	for _, op := range slices.Sorted(maps.Keys(outcomes)) {
		fmt.Fprintf(&b, "%s: %v\n", op, outcomes[op])
	}
	fmt.Fprintf(&b, "events: %v\n", events)
	t.Log(b.String())
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Fatalf("a default run never reached:\n  %s", strings.Join(missing, "\n  "))
	}
}

func TestRuntimeReferenceIsLinearizable(t *testing.T) {
	ctx := context.Background()
	for _, w := range []RuntimeWorkload{DefaultRuntimeWorkload, {Sessions: 16, Owners: 4, Partitioned: true}} {
		h, err := Run(ctx, r.Contract, runtimeOpener(t, bugs.Bug{}), w.New(), Config{Seed: 3, Ops: 1200})
		if err != nil {
			t.Fatal(err)
		}
		if got := clientEntries(h); got != 1200 {
			t.Fatalf("recorded %d operations of the clients, want 1200", got)
		}
		res, err := Check(model.Runtime{}, h, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Linearizable {
			t.Fatalf("workload %+v: %s", w, res.Summary())
		}
		t.Logf("workload %+v: %s", w, res.Summary())
		// A saved history reads back as the same operations and answers,
		// and checks the same.
		path := filepath.Join(t.TempDir(), "history.json")
		if err := h.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		again, err := ReadFile(path, []spec.Contract{r.Contract})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := Check(model.Runtime{}, again, 60*time.Second); err != nil || res.Verdict != Linearizable {
			t.Fatalf("the saved history checks %s, %v", res.Summary(), err)
		}
		if w.Partitioned && res.Partitions < 16 {
			t.Errorf("a partitioned workload split into %d parts only", res.Partitions)
		}
	}
}

// A lease claim whose read and write are two transactions lets two owners
// both win a lease: no single-threaded spec can show it, the concurrent
// check must.
func TestRuntimeRacyLeaseClaimIsIllegal(t *testing.T) {
	catchRace(t, model.Runtime{}, runtimeOpener(t, bugs.RuntimeLeaseClaimOutsideTx), DefaultRuntimeWorkload.New)
}

// A backend whose batch ids, claim ids and tokens and checkpoint refs are
// not the reference's (the reference, renamed consistently) passes a
// default history: nothing the check judges depends on the reference's ids.
func TestRuntimeRenamedIdsAreLinearizable(t *testing.T) {
	ctx := context.Background()
	seeds := int64(1)
	if os.Getenv("STORECHECK_FULL_TESTS") != "" {
		seeds = 3
	}
	for seed := range seeds {
		path := filepath.Join(t.TempDir(), "runtime.db")
		b := renamed.Runtime(adapters.InProcess(adapters.Hello{Name: "reference", Capabilities: adapters.Capabilities{
			CrashPoints: map[string][]string{r.StoreName: refruntime.CrashPoints}}},
			adapters.LocalStore{Contract: r.Contract, Open: refruntime.OpenTarget}))
		open := func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error) {
			return b.Open(ctx, r.StoreName, spec.OpenOptions{Path: path, Clock: clock})
		}
		h, err := Run(ctx, r.Contract, open, DefaultRuntimeWorkload.New(), Config{Seed: seed + 1})
		if err != nil {
			t.Fatal(err)
		}
		batches, claims := 0, 0
		for _, e := range h.Entries {
			switch x := e.Outcome.Result.(type) {
			case r.QueuedWorkBatch:
				if strings.HasPrefix(x.BatchID, "batch~") {
					batches++
				}
			case *r.QueuedWorkClaim:
				if x != nil && strings.HasPrefix(x.ClaimID, "claim~") {
					claims++
				}
			}
		}
		if batches == 0 {
			t.Fatalf("seed %d: no enqueue answered a renamed id", seed+1)
		}
		res, err := Check(model.Runtime{}, h, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Linearizable {
			t.Fatalf("seed %d: the renamed reference: %s", seed+1, res.Summary())
		}
		t.Logf("seed %d: %d batches and %d claims with renamed ids; %s", seed+1, batches, claims, res.Summary())
	}
}
