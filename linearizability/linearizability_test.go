package linearizability

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/linearizability/model"
	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

func continuityOpener(t testing.TB, bug bugs.Bug) Opener {
	return referenceOpener(t, "continuity", bug)
}

// referenceOpener opens handles of the reference store (with bug) on one
// file of the test's, through the openers the registration holds
// (internal/stores, which imports this package, so a test of it cannot).
func referenceOpener(t testing.TB, store string, bug bugs.Bug) Opener {
	path := filepath.Join(t.TempDir(), store+".db")
	open := map[string]adapters.Opener{c.StoreName: refcontinuity.OpenTarget, "runtime": refruntime.OpenTarget,
		"client": refclient.OpenTarget}[store]
	if bug.Name() != "" {
		open = bug.Open
	}
	return func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error) {
		return open(ctx, spec.OpenOptions{Path: path, Clock: clock})
	}
}

// The model and the reference are two statements of one contract: stepped
// through the same long random sequences, they must answer alike every time.
func TestContinuityModelAgreesWithTheReference(t *testing.T) {
	ctx := context.Background()
	for seed := range 20 {
		s, err := refcontinuity.Open(ctx, refcontinuity.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := model.Continuity{}
		states := []model.State{m.Init()}
		r := rand.New(rand.NewPCG(uint64(seed), 0))
		w := DefaultContinuityWorkload.New()
		for step := range 400 {
			op := w.Next(r, 0, step)
			res, err := c.Apply(ctx, s, op)
			got, _ := Outcome(c.Contract, res, err)
			next, allowed := model.Follow(m, states, op, 0, got)
			if next == nil {
				want := model.Allowed(allowed)
				t.Fatalf("seed %d step %d: %s %+v: the reference answered %s, the model %s\nmodel state:\n%s",
					seed, step, op.Name(), op, got, want, states)
			}
			states = next
		}
		s.Close()
	}
}

func TestReferenceIsLinearizable(t *testing.T) {
	ctx := context.Background()
	for _, w := range []ContinuityWorkload{DefaultContinuityWorkload, {Identities: 8, Sessions: 2, Partitioned: true}} {
		h, err := Run(ctx, c.Contract, continuityOpener(t, bugs.Bug{}), w.New(), Config{Seed: 3, Ops: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if got := clientEntries(h); got != 1000 {
			t.Fatalf("recorded %d operations of the clients, want 1000", got)
		}
		res, err := Check(model.Continuity{}, h, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Linearizable {
			t.Fatalf("workload %+v: %s", w, res.Summary())
		}
		if w.Partitioned && res.Partitions < 8 {
			t.Errorf("a partitioned workload split into %d parts only", res.Partitions)
		}
	}
}

// A store whose fence check and write are two transactions loses a race that
// no single-threaded spec can show; the concurrent check must catch it.
func TestRacyUpsertIsIllegal(t *testing.T) {
	w := ContinuityWorkload{Identities: 1, Sessions: 1}
	catchRace(t, model.Continuity{}, continuityOpener(t, bugs.ContinuityUpsertCheckOutsideTx), w.New)
}

// catchRace runs concurrent clients against a racy store, seed after seed,
// until the check judges a history illegal (its visualization must render);
// 20 runs all judged linearizable fail the test.
func catchRace(t *testing.T, m model.Model, open Opener, workload func() Workload) {
	t.Helper()
	for seed := range int64(20) {
		h, err := Run(context.Background(), m.Contract(), open, workload(), Config{Seed: seed, Ops: 800})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Check(m, h, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict == Illegal {
			var html bytes.Buffer
			if err := res.Visualize(&html); err != nil || html.Len() == 0 {
				t.Fatalf("visualization: %v", err)
			}
			t.Logf("caught at seed %d: %s", seed, res.Summary())
			return
		}
	}
	t.Fatal("20 runs against a racy store were all judged linearizable")
}

// clientEntries counts the entries of a history's clients, leaving out the
// reads of the workload's Prologue (Reader's).
func clientEntries(h History) int {
	n := 0
	for _, e := range h.Entries {
		if e.Client != Reader(Config{}) {
			n++
		}
	}
	return n
}
