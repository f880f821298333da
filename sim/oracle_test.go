package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// clientTuple is a session tuple of task-1's sessions in the tests below,
// written at the given millisecond of the epoch, its session named by ref.
func clientTuple(session string, seq uint64, ms int) cli.VersionedSession {
	return cli.VersionedSession{Generation: 1, Seq: seq, AgentState: "booting", DeliveryState: "delivering", ResourceState: "open",
		DesiredJSON: "{}", ObservedJSON: "{}", BackendRef: `{"task_id":"` + session + `"}`, UpdatedAt: Epoch.Add(time.Duration(ms) * time.Millisecond)}
}

func clientRecord(session, task string, v cli.VersionedSession) model.Outcome {
	return model.OK(&cli.SessionRecord{SessionID: session, TaskID: task, VersionedSession: v})
}

// A read that overlaps a write may take effect before or after it, and
// what its answer teaches differs between the two: get_session(task-1)
// answering sess-0 while bind_task(sess-0, task-4) closes (sess-0, task-1)
// keeps every binding choice (client.get_session.binding_choice) when the
// read came first, and only the readings that ignore whether a binding is
// open when it came after. The oracle keeps both, so a later get_session
// answered by the one open binding (the reference's open-first reading) is
// allowed. (Seed 1095 of the sweep: the two placements assumed one answer,
// and the oracle kept only one of them.)
func TestAnOverlappingReadKeepsWhatEachPlacementTeaches(t *testing.T) {
	o := newOracle(model.Client{})
	ret := func(id int, op spec.Op, got model.Outcome) {
		t.Helper()
		if allowed, _, ok := o.ret(id, op, got); !ok {
			t.Fatalf("%s answered %v, the model allows %v", op.Name(), got, model.Allowed(allowed))
		}
	}
	run := func(id int, op spec.Op, got model.Outcome) {
		t.Helper()
		o.call(id, op, 0, false)
		ret(id, op, got)
	}
	first, sess0 := clientTuple("", 2, 31), clientTuple("sess-0", 2, 665)
	run(0, cli.UpsertSession{TaskID: "task-1", Version: first}, model.OK(true))
	run(1, cli.UpsertSession{TaskID: "task-1", Version: sess0}, model.OK(true))

	bind, read := cli.BindTask{SessionID: "sess-0", TaskID: "task-4"}, cli.GetSession{TaskID: "task-1"}
	o.call(2, bind, 0, false)
	o.call(3, read, 0, false)
	ret(2, bind, model.OK(true))
	ret(3, read, clientRecord("sess-0", "task-1", sess0))
	// sess-1 opens a later binding of task-1 (3 s on, so that no bound_at
	// reading ties it with the others), then moves to task-3, closing it:
	// ("", task-1) is task-1's only open binding.
	run(4, cli.UpsertSession{TaskID: "task-1", Version: clientTuple("sess-1", 1, 3535)}, model.OK(true))
	run(5, cli.UpsertSession{TaskID: "task-3", Version: clientTuple("sess-1", 2, 3787)}, model.OK(true))
	run(6, read, clientRecord("", "task-1", first))
}

// A settle_task that crashed after its commit is indefinite: it may have
// happened or not, two configurations. An oracle that may keep only one
// keeps the one where it did not, so a later read that finds the verdict
// diverges from the part kept, and the orders dropped allow it: the run is
// no verdict (Inconclusive), never a failure (seeds 4549 and 6145 of the
// sweep, the reference flagged past 20,000 configurations). A read the
// part allows passes: the whole allows at least as much.
func TestACutOracleJudgesNothingItDropped(t *testing.T) {
	defer func(n int) { configLimit = n }(configLimit)
	settle := cli.SettleTask{TaskID: "task-0", State: cli.TaskCompleted}
	schedule := func(read string) Schedule {
		return Schedule{Store: cli.StoreName, Clients: 1, Processes: 1, Steps: []Step{
			{Kind: StepFault, Fault: fault.CrashAt{Point: "settle_task/after_commit"}},
			{Kind: StepOp, ID: "c0.0", Op: settle},
			{Kind: StepOp, ID: "c0.1", Op: cli.GetTask{TaskID: read}},
			{Kind: StepResume}, {Kind: StepResume}, // to after_read, to its answer
		}}
	}
	for _, tc := range []struct {
		name         string
		limit        int
		read         string
		inconclusive bool
	}{
		{"whole", 50_000, "task-0", false},
		{"cut, the verdict read", 1, "task-0", true},
		{"cut, another task read", 1, "task-1", false},
	} {
		configLimit = tc.limit
		res, err := Run(context.Background(), clientSubject, InProcess(stores.Reference(), cli.StoreName), schedule(tc.read), ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure != nil || res.Inconclusive != tc.inconclusive {
			t.Errorf("%s: failure %v, inconclusive %v (want %v)\n%s", tc.name, res.Failure, res.Inconclusive, tc.inconclusive, strings.Join(res.Trace, "\n"))
		}
	}
}

// An operation whose process is killed while it waits at its first yield
// point has written nothing (a yield point comes before each transaction,
// spec.Yield): the oracle drops it rather than keep a state where it
// happened. Killed at its next yield point (its write committed, its
// answer lost) it stays indefinite: both states are kept.
func TestAnOperationKilledAtItsFirstYieldPointNeverHappened(t *testing.T) {
	settle := cli.SettleTask{TaskID: "task-0", State: cli.TaskCompleted}
	for _, tc := range []struct {
		name    string
		resumes int
		configs int
	}{
		{"at before_write", 0, 1},
		{"at after_write", 1, 2},
	} {
		steps := []Step{{Kind: StepOp, ID: "c0.0", Op: settle}}
		for range tc.resumes {
			steps = append(steps, Step{Kind: StepResume})
		}
		steps = append(steps, Step{Kind: StepFault, Fault: fault.Kill{}})
		s := Schedule{Store: cli.StoreName, Clients: 1, Processes: 1, Steps: steps}
		e, cleanup, err := newEngine(context.Background(), clientSubject, InProcess(stores.Reference(), cli.StoreName), s, ScratchDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range s.Steps {
			if !e.do(i, st) {
				t.Fatalf("%s: step %d stopped the run: %v", tc.name, i, e.res.Failure)
			}
		}
		if got := len(e.oracle.configs); got != tc.configs {
			t.Errorf("%s: %d configurations kept, want %d\n%s", tc.name, got, tc.configs, strings.Join(e.res.Trace, "\n"))
		}
		cleanup()
	}
}

// load_session's statements each see their own moment, in order
// (runtime.load_session.statements): overlapping a commit, its head may be
// the commit's predecessor and its ledger the commit's, whichever returns
// first; never a ledger older than the head. A backend that declares
// atomic_reads is held to one moment.
func TestLoadSessionStatementsAreJudgedInOrder(t *testing.T) {
	const now = 1000
	token := r.LeaseToken("s", "o", now, 1)
	fence := r.SessionExecutionLeaseFence{SessionID: "s", OwnerID: "o", LeaseToken: token, FencingToken: 1}
	commit := func(n int) (spec.Op, model.Outcome) {
		return r.CommitRuntimeState{Commit: r.RuntimeCommit{SessionID: "s", Lease: &fence, Graph: r.GraphDelta{Kind: r.GraphUnchanged},
				Checkpoint: []byte{byte('0' + n)}, UsageDeltas: []r.UsageEntry{{Source: "a", Model: "m", Usage: r.Usage{InputTokens: uint64(n)}}}}},
			model.OK(r.CommitResult{HeadRevision: uint64(n), CheckpointRef: "ref" + string(rune('0'+n))})
	}
	read := func(head, ledger uint64) model.Outcome {
		return model.OK(&r.SessionRead{SessionID: "s", HeadRevision: head, CheckpointRef: "ref" + string(rune('0'+head)), Checkpoint: []byte{byte('0' + head)},
			TokenLedger: []r.UsageEntry{{Source: "a", Model: "m", Usage: r.Usage{InputTokens: ledger * (ledger + 1) / 2}}}})
	}
	judge := func(m model.Model, readFirst bool, got model.Outcome) bool {
		o := newOracle(m)
		run := func(id int, op spec.Op, out model.Outcome) bool {
			o.call(id, op, now, false)
			_, _, ok := o.ret(id, op, out)
			return ok
		}
		claim := r.TryClaimSessionExecutionLease{SessionID: "s", OwnerID: "o", TTLMs: 100_000}
		c1, r1 := commit(1)
		if !run(0, claim, model.OK(&r.SessionExecutionLease{SessionID: "s", OwnerID: "o", LeaseToken: token, FencingToken: 1,
			ClaimedAtMs: now, ExpiresAtMs: now + 100_000})) || !run(1, c1, r1) {
			t.Fatal("the lease and the first commit are refused")
		}
		c2, r2 := commit(2)
		load := r.LoadSession{}
		o.call(2, c2, now, false)
		o.call(3, load, now, false)
		if readFirst {
			_, _, ok := o.ret(3, load, got)
			_, _, ok2 := o.ret(2, c2, r2)
			return ok && ok2
		}
		_, _, ok := o.ret(2, c2, r2)
		_, _, ok2 := o.ret(3, load, got)
		return ok && ok2
	}
	for _, readFirst := range []bool{false, true} {
		for _, c := range []struct {
			name         string
			got          model.Outcome
			seed, atomic bool
		}{
			{"before the commit", read(1, 1), true, true},
			{"after the commit", read(2, 2), true, true},
			{"head before, ledger after", read(1, 2), true, false},
			{"ledger before, head after", read(2, 1), false, false},
		} {
			if got := judge(model.Runtime{}, readFirst, c.got); got != c.seed {
				t.Errorf("read returning first %v, %s: allowed %v under the seed's reading", readFirst, c.name, got)
			}
			if got := judge(model.Runtime{AtomicReads: true}, readFirst, c.got); got != c.atomic {
				t.Errorf("read returning first %v, %s: allowed %v under atomic_reads", readFirst, c.name, got)
			}
		}
	}
}

// rowsState is a state of n rows and nothing else.
type rowsState struct{ n int }

func (s rowsState) Equal(o model.State) bool { return o.(rowsState) == s }
func (s rowsState) Hash() uint64             { return uint64(s.n) }
func (s rowsState) String() string           { return fmt.Sprint(s.n, " rows") }
func (s rowsState) Rows() int                { return s.n }

// The oracle keeps fewer configurations the more rows their states hold:
// the count bounds states of a few rows, the rows bound big ones, and a
// cut is said (o.cut: what it refuses is no verdict).
func TestTheOracleBoundsConfigurationsByTheirRows(t *testing.T) {
	for _, c := range []struct{ rows, have, want int }{
		{0, configLimit + 10, configLimit},
		{2, configLimit - 1, configLimit - 1},
		{1000, 1000, rowBudget / 1000},
		{rowBudget * 2, 5, 1},
	} {
		o := &oracle{limit: configLimit}
		cs := make([]config, c.have)
		for i := range cs {
			cs[i].state = rowsState{c.rows}
		}
		if got := len(o.bounded(cs)); got != c.want || o.cut != (c.want < c.have) {
			t.Errorf("%d configurations of %d rows: kept %d (cut %v), want %d", c.have, c.rows, got, o.cut, c.want)
		}
	}
}
