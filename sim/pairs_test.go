package sim

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// pairsOf are the interleaving milestones of res, as "step event".
func pairsOf(res Result) []string {
	var out []string
	for _, m := range res.Reached {
		if strings.HasPrefix(m.Event, InterleavePrefix) {
			out = append(out, m.Event)
		}
	}
	return out
}

// Two upserts of one identity on two processes, the first paused between
// its check (a read transaction, in the racy store) and its write while the
// second moves on: the run notes the pair as a milestone at the step the
// second moved, once. Of another identity, or with the first paused at its
// first yield point (it has run nothing yet), there is no pair.
func TestAnInterleavingIsAMilestone(t *testing.T) {
	ctx := context.Background()
	up := func(id string, fence c.FencingToken) spec.Op {
		return c.UpsertContinuityRecord{Record: c.Record{Identity: c.Identity(id), AgentRuntimeID: "rt", SessionID: "s", Generation: 1}, Fence: fence}
	}
	run := func(second spec.Op, firstResumes bool) Result {
		steps := []Step{{Kind: StepOp, ID: spec.OpID(0, 0), Client: 0, Op: up("a", 1)}}
		if firstResumes {
			steps = append(steps, Step{Kind: StepResume, Process: 0})
		}
		steps = append(steps,
			Step{Kind: StepOp, ID: spec.OpID(1, 0), Client: 1, Op: second, Process: 1},
			Step{Kind: StepResume, Process: 1}, Step{Kind: StepResume, Process: 1})
		s := Schedule{Store: "continuity", Seed: 1, Clients: 2, Processes: 2, Steps: steps}
		res, err := Run(ctx, continuitySubject, referenceBackend(bugs.ContinuityUpsertCheckOutsideTx), s, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(up("a", 2), true)
	want := InterleavePrefix + "stored_record/after_read waits, upsert_continuity_record moves on from stored_record/before_read"
	i := slices.IndexFunc(res.Reached, func(m Milestone) bool { return m.Event == want })
	if i < 0 || res.Reached[i].Step != 3 || res.Reached[i].Count != 1 {
		t.Fatalf("no milestone %q at step 3: %v\n%s", want, pairsOf(res), strings.Join(res.Trace, "\n"))
	}
	if n := len(pairsOf(res)); n != len(slices.Compact(slices.Sorted(slices.Values(pairsOf(res))))) {
		t.Errorf("a pair noted more than once: %v", pairsOf(res))
	}
	if p := pairsOf(run(up("b", 2), true)); len(p) != 0 {
		t.Errorf("upserts of two identities make pairs %v", p)
	}
	if p := pairsOf(run(up("a", 2), false)); len(p) != 0 {
		t.Errorf("an upsert at its first yield point makes pairs %v", p)
	}
}

// A child that swaps who moves at its parent's pair (Flip) is its parent up
// to the pair, then moves the other operation first: on the store whose
// upsert checks in one transaction and writes in another, the first seed of
// the default sweep passes, with the racy pair (a write between the other's
// check and its write), and its child flipped there fails. The child's name
// and saved schedule say the flip, and the schedule replays it.
func TestAFlipSwapsThePairAndFindsTheRace(t *testing.T) {
	ctx := context.Background()
	backend := referenceBackend(bugs.ContinuityUpsertCheckOutsideTx)
	const seed = 1
	parent, err := Explore(ctx, continuitySubject, backend, seed, Params{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if parent.Failure != nil {
		t.Fatalf("seed %d failed: the test needs a parent that passes: %v", seed, parent.Failure)
	}
	at := -1
	for _, m := range parent.Reached {
		if strings.HasPrefix(m.Event, InterleavePrefix+"stored_record/after_read waits, upsert_continuity_record") {
			at = m.Step
			break
		}
	}
	if at < 0 {
		t.Fatalf("seed %d reached no racy pair: %v", seed, pairsOf(parent))
	}
	branches := []Branch{{At: at, Flip: true}}
	child, err := exploreFrom(ctx, continuitySubject, backend, seed, branches, Params{}, t.TempDir(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(parent.Schedule.Steps[:at], child.Schedule.Steps[:at], sameStep) {
		t.Fatal("the flipped child's steps before the pair are not its parent's")
	}
	moved := func(st Step) int {
		if st.Kind == StepOp {
			return st.Client % 2
		}
		return st.Process
	}
	if ps, cs := parent.Schedule.Steps[at], child.Schedule.Steps[at]; moved(ps) == moved(cs) {
		t.Fatalf("at the pair (step %d) the child moves process %d (%s), as its parent did (%s)", at, moved(cs), cs, ps)
	}
	if child.Failure == nil {
		t.Fatalf("the child flipped at step %d passes", at)
	}
	saved := savedAndRead(t, child.Schedule)
	if name := saved.Name(); name != "seed 1 > flip@"+strconv.Itoa(at) {
		t.Errorf("the flipped child is named %q", name)
	}
	replay, err := Run(ctx, continuitySubject, backend, saved, t.TempDir())
	if err != nil || replay.Failure == nil || replay.Hash() != child.Hash() {
		t.Fatalf("the saved schedule of the flipped child does not replay its failure: %v %v", err, replay.Failure)
	}
}

// The scheduler, told to flip, holds the thread its next decision picks:
// another moves while it can, until an operation ends; then the held one
// moves again.
func TestAFlipHoldsTheThreadUntilAnotherEnds(t *testing.T) {
	for _, depth := range []int{0, 3} {
		a := newScheduler(rand.New(rand.NewPCG(7, 7)), 2, depth, 100)
		b := newScheduler(rand.New(rand.NewPCG(7, 7)), 2, depth, 100)
		busy := []bool{true, true}
		a.sync(busy)
		b.sync(busy)
		plain := a.pick(nil)
		b.flip()
		flipped := b.pick(nil)
		if flipped == plain {
			t.Fatalf("depth %d: the flipped decision moved thread %d, as without the flip", depth, plain)
		}
		if again := b.pick(nil); again == plain {
			t.Fatalf("depth %d: the held thread %d moved before another's operation ended", depth, plain)
		}
		b.sync([]bool{plain == 0, plain == 1}) // the other's operation ended
		if b.held != nil {
			t.Fatalf("depth %d: the thread is still held after another's operation ended", depth)
		}
	}
}
