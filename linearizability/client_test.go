package linearizability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/linearizability/model"
	refclient "github.com/storecheck/storecheck/reference/client"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

func clientOpener(t testing.TB, bug bugs.Bug) Opener { return referenceOpener(t, "client", bug) }

// clientSequence drives the workload's 8 clients in one random interleaving
// on a clock that moves as a run's does (now still, now by a sub-second
// step, now by seconds), and hands each operation and its time to do.
func clientSequence(seed uint64, w Workload, steps int, clock *clockwork.FakeClock, do func(op spec.Op, nowMS int64)) {
	r := rand.New(rand.NewPCG(seed, 1))
	counts := make([]int, 8)
	for range steps {
		switch x := r.IntN(10); {
		case x == 0:
			clock.Advance(time.Duration(r.IntN(3000)) * time.Millisecond)
		case x == 1:
			clock.Advance(time.Duration(r.IntN(1_000_000)))
		}
		cl := r.IntN(len(counts))
		op := w.Next(r, cl, counts[cl])
		counts[cl]++
		do(op, clock.Now().UnixMilli())
	}
}

// The model and the reference are two statements of one contract: stepped
// through the same long random sequences, they must answer alike every time.
func TestClientModelAgreesWithTheReference(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(20) {
		clock := clockwork.NewFakeClockAt(Epoch)
		s, err := refclient.Open(ctx, refclient.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		m := model.Client{}
		states := []model.State{m.Init()}
		step := 0
		clientSequence(seed, DefaultClientWorkload.New(), 400, clock, func(op spec.Op, nowMS int64) {
			res, err := cli.Apply(ctx, s, op)
			got, _ := Outcome(cli.Contract, res, err)
			next, allowed := model.Follow(m, states, op, nowMS, got)
			if next == nil {
				want := model.Allowed(allowed)
				t.Fatalf("seed %d step %d: %s %+v: the reference answered %s (%#v), the model %s (%#v)\nmodel state:\n%s",
					seed, step, op.Name(), op, got, got.Result, want, allowed, states)
			}
			states = next
			step++
		})
		s.Close()
	}
}

// openOtherClientReadings opens the reference client store, on a clock
// read to the second, as OtherClientReadings.
func openOtherClientReadings(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	o.Clock = SecondsClock(o.Clock)
	t, err := refclient.OpenTarget(ctx, o)
	if err != nil {
		return nil, err
	}
	return OtherClientReadings(t), nil
}

// A backend that takes other readings of what the seed leaves open (event
// numbers by tens from 1010, fault ids by sevens, another out-head preview,
// every time to the whole second) answers as the model allows, step by step
// and under concurrency: the kit fails no reading the seed allows.
func TestClientModelAcceptsOtherReadings(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(20) {
		clock := clockwork.NewFakeClockAt(Epoch)
		s, err := openOtherClientReadings(ctx, spec.OpenOptions{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		m := model.Client{}
		states := []model.State{m.Init()}
		step := 0
		clientSequence(seed, DefaultClientWorkload.New(), 400, clock, func(op spec.Op, nowMS int64) {
			res, err := s.Apply(ctx, op)
			got, _ := Outcome(cli.Contract, res, err)
			next, allowed := model.Follow(m, states, op, nowMS, got)
			if next == nil {
				t.Fatalf("seed %d step %d: %s %+v: the other readings answered %s, the model allows %s\nmodel state:\n%s",
					seed, step, op.Name(), op, got, model.Allowed(allowed), states)
			}
			states = next
			step++
		})
		s.Close()
	}
}

func TestClientOtherReadingsAreLinearizable(t *testing.T) {
	ctx := context.Background()
	for seed := range int64(3) {
		path := filepath.Join(t.TempDir(), "client.db")
		open := func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error) {
			return openOtherClientReadings(ctx, spec.OpenOptions{Path: path, Clock: clock})
		}
		h, err := Run(ctx, cli.Contract, open, DefaultClientWorkload.New(), Config{Seed: seed, Ops: 1200})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Check(model.Client{}, h, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Linearizable {
			t.Fatalf("seed %d: %s", seed, res.Summary())
		}
	}
}

// Every rule a model branch names is a rule of the client's table.
func TestClientBranchesNameRulesOfTheTable(t *testing.T) {
	m := model.Client{}
	state := m.Init()
	named := map[string]bool{}
	clientSequence(2, DefaultClientWorkload.New(), 5000, clockwork.NewFakeClockAt(Epoch), func(op spec.Op, now int64) {
		for _, b := range m.Step(state, op, now) {
			if b.Rule != "" {
				named[b.Rule] = true
			}
		}
		state, _ = model.Expect(m, state, op, now)
	})
	for id := range named {
		if _, ok := cli.Contract.Rule(id); !ok {
			t.Errorf("a branch names rule %q, which spec/client's table does not have", id)
		}
	}
	if len(named) < 5 {
		t.Errorf("the branches name only %v", named)
	}
}

// outcomeLabel names an outcome for the coverage count: its error kind,
// true or false, or ok.
func outcomeLabel(o model.Outcome) string {
	if o.Kind != "" {
		return string(o.Kind)
	}
	if b, ok := o.Result.(bool); ok {
		return fmt.Sprint(b)
	}
	return "ok"
}

// The default workload must take every write operation down each of its
// branches (acted, refused, invalid), and reach every rare event the
// simulator looks for; otherwise the checks above test less than they seem.
func TestClientWorkloadReachesEveryOutcome(t *testing.T) {
	want := map[string][]string{
		"enqueue_intent":       {"true", "false", "invalid_argument"},
		"bump_intent":          {"true", "false"},
		"defer_intent":         {"true", "false"},
		"accept_intent":        {"true", "false", "invalid_argument"},
		"exhaust_intent":       {"true", "false"},
		"delete_intent":        {"true", "false"},
		"append_event":         {"ok", "invalid_argument"},
		"put_out_head":         {"ok"},
		"put_prose":            {"ok"},
		"put_config":           {"ok"},
		"upsert_session":       {"true", "false"},
		"bump_session_version": {"true", "false"},
		"bind_task":            {"true", "false"},
		"release_binding":      {"true", "false"},
		"open_task":            {"true", "invalid_argument"},
		"settle_task":          {"true", "false", "invalid_argument"},
		"insert_fault":         {"ok"},
	}
	m := model.Client{}
	seen := map[string]map[string]int{}
	events := map[string]int{}
	state := m.Init()
	clientSequence(1, DefaultClientWorkload.New(), 20_000, clockwork.NewFakeClockAt(Epoch), func(op spec.Op, now int64) {
		next, out := model.Expect(m, state, op, now)
		for _, e := range m.Events(state, op, now, out) {
			events[e]++
		}
		state = next
		if seen[op.Name()] == nil {
			seen[op.Name()] = map[string]int{}
		}
		seen[op.Name()][outcomeLabel(out)]++
	})
	for op, labels := range want {
		for _, l := range labels {
			if seen[op][l] == 0 {
				t.Errorf("%s never answered %s (%v)", op, l, seen[op])
			}
		}
	}
	for _, op := range cli.Ops {
		if len(seen[op.Name()]) == 0 {
			t.Errorf("%s was never issued", op.Name())
		}
	}
	for _, e := range model.ClientEvents {
		if events[e] == 0 {
			t.Errorf("event %q never reached", e)
		}
	}
	if testing.Verbose() {
		for _, op := range cli.Ops {
			t.Logf("%-22s %v", op.Name(), seen[op.Name()])
		}
		for _, e := range model.ClientEvents {
			t.Logf("%6d  %s", events[e], e)
		}
	}
}

// A history splits into many parts, and never are two operations that can
// affect each other put in different parts (the check of a linearizable
// history would then still pass, so this checks Keys against the model
// directly): every part, stepped alone, must give the answers the whole
// history gives in its order.
func TestClientKeysNeverSplitWhatInteracts(t *testing.T) {
	m := model.Client{}
	for seed := range uint64(6) {
		w, minParts := DefaultClientWorkload, 6
		if seed%2 == 1 {
			w, minParts = ClientWorkload{Intents: 4, Tasks: 3, Sessions: 2, Groups: 3}, 30
		}
		var ops []porcupine.Operation
		clientSequence(seed, w.New(), 3000, clockwork.NewFakeClockAt(Epoch), func(op spec.Op, now int64) {
			ops = append(ops, porcupine.Operation{Input: &Entry{Op: op, NowMS: now}})
		})
		whole := m.Init()
		outs := map[*Entry]model.Outcome{}
		for _, op := range ops {
			e := op.Input.(*Entry)
			whole, outs[e] = model.Expect(m, whole, e.Op, e.NowMS)
		}
		parts := partition(m, ops)
		if len(parts) < minParts {
			t.Errorf("seed %d: %d parts only", seed, len(parts))
		}
		for _, part := range parts {
			st := m.Init()
			for _, op := range part {
				e := op.Input.(*Entry)
				var out model.Outcome
				st, out = model.Expect(m, st, e.Op, e.NowMS)
				if !out.Same(outs[e]) {
					t.Fatalf("seed %d: %s %+v answers %s in its part, %s in the whole history", seed, e.Op.Name(), e.Op, out, outs[e])
				}
			}
		}
	}
}

func TestClientReferenceIsLinearizable(t *testing.T) {
	ctx := context.Background()
	for _, w := range []ClientWorkload{DefaultClientWorkload, {Intents: 4, Tasks: 3, Sessions: 2, Groups: 12}} {
		h, err := Run(ctx, cli.Contract, clientOpener(t, bugs.Bug{}), w.New(), Config{Seed: 3, Ops: 1200})
		if err != nil {
			t.Fatal(err)
		}
		if got := clientEntries(h); got != 1200 {
			t.Fatalf("recorded %d operations of the clients, want 1200", got)
		}
		if i := slices.IndexFunc(h.Entries, func(e Entry) bool { return e.Indefinite }); i >= 0 {
			t.Fatalf("entry %d is indefinite: %+v", i, h.Entries[i])
		}
		res, err := Check(model.Client{}, h, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Linearizable {
			t.Fatalf("workload %+v: %s", w, res.Summary())
		}
		if w.Groups > 0 && res.Partitions < 12 {
			t.Errorf("a grouped workload split into %d parts only", res.Partitions)
		}
		t.Logf("workload %+v: %s", w, res.Summary())
	}
}

// A store that reads whether a task is settled in one transaction and writes
// its verdict in another lets a second verdict overwrite the first, a race
// no single-threaded spec can show; the concurrent check must catch it.
func TestRacyClientSettleIsIllegal(t *testing.T) {
	catchRace(t, model.Client{}, clientOpener(t, bugs.ClientSettleCheckOutsideTx), DefaultClientWorkload.New)
}

// A default client history (refused operations with values that are not
// JSON included) is saved, read back and checked again offline.
func TestClientHistorySavesAndChecksAgain(t *testing.T) {
	h, err := Run(context.Background(), cli.Contract, clientOpener(t, bugs.Bug{}), DefaultClientWorkload.New(), Config{Seed: 1, Ops: 1000})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.json")
	if err := h.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	again, err := ReadFile(path, []spec.Contract{cli.Contract})
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Entries {
		if !again.Entries[i].Outcome.Same(h.Entries[i].Outcome) || again.Entries[i].NowMS != h.Entries[i].NowMS {
			t.Fatalf("entry %d (%s) changed in a round trip", i, h.Entries[i].Op.Name())
		}
	}
	if res, err := Check(model.Client{}, again, 30*time.Second); err != nil || res.Verdict != Linearizable {
		t.Fatalf("the saved history checks as %s (%v)", res.Verdict, err)
	}
}
