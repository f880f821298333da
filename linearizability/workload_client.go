package linearizability

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// ClientWorkload configures the client store's workload. Intents and tasks
// are drawn from small windows that move on as the run goes on, so that
// every id is fought over while it is young (two clients settling one task,
// bumping one intent) and fresh ids keep coming.
type ClientWorkload struct {
	// Intents, Tasks and Sessions are how many op ids, task ids and session
	// ids the clients share at any one time.
	Intents, Tasks, Sessions int
	// Groups, when above 0, splits the ids into that many independent groups
	// and leaves out the operations that read a whole table (the due scans,
	// pending_intent_count, active_sessions, open_tasks) and the two global
	// sequences (events, faults), so the history splits into many parts.
	Groups int
}

// DefaultClientWorkload is the default run's: four intents, three tasks and
// two sessions fought over by every client.
var DefaultClientWorkload = ClientWorkload{Intents: 4, Tasks: 3, Sessions: 2}

// New is a fresh workload of this configuration.
func (w ClientWorkload) New() Workload {
	return &clientWorkload{ClientWorkload: w, clients: map[int]*clientMemory{}}
}

// clientWorkload remembers, for each client, what it asked for (never what
// it was answered: a schedule is drawn before it runs): the intents it
// enqueued, the tasks it opened, the (generation, seq) it last wrote to each
// session, the bindings it opened. A client then plays the seed's
// sequences: it bumps, defers and settles its own intents, settles the tasks
// it opened, writes the next version of its sessions (or, as a zombie, an
// old one), and releases what it bound (sometimes twice).
type clientWorkload struct {
	ClientWorkload
	mu      sync.Mutex
	clients map[int]*clientMemory
	// seen are the ids the clients named ("op:<id>", "task:<id>", ...),
	// for Observe.
	seen map[string]bool
}

type clientMemory struct {
	intents  []string
	tasks    []string
	versions map[string][2]uint64
	bindings [][2]string
	// then are operations the client issues next, before it draws again.
	then []spec.Op
}

func (w *clientWorkload) memory(n int) *clientMemory {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.clients[n]
	if m == nil {
		m = &clientMemory{versions: map[string][2]uint64{}}
		w.clients[n] = m
	}
	return m
}

// remember keeps the last few of what a client did.
func remember[T any](list []T, v T) []T {
	list = append(list, v)
	if len(list) > 6 {
		list = list[1:]
	}
	return list
}

// StepMS is about how far the clock of a default run has moved by a client's
// step-th operation (an epoch of 6 operations a client, a jump of 1.5 s on
// average): the workload aims the times it hands in (next attempts, due
// scans) around it.
const StepMS = 250

func estimate(step int) time.Time { return Epoch.Add(time.Duration(step) * StepMS * time.Millisecond) }

// group prefixes an id with the group r draws (nothing when not grouped).
func (w *clientWorkload) group(r *rand.Rand) string {
	if w.Groups <= 0 {
		return ""
	}
	return fmt.Sprintf("g%d/", r.IntN(w.Groups))
}

func (w *clientWorkload) intentID(r *rand.Rand, g string, step int) string {
	return fmt.Sprintf("%sop-%d", g, step/12+r.IntN(max(w.Intents, 1)))
}

func (w *clientWorkload) taskID(r *rand.Rand, g string, step int) string {
	return fmt.Sprintf("%stask-%d", g, step/epochSteps+r.IntN(max(w.Tasks, 1)))
}

func (w *clientWorkload) sessionID(r *rand.Rand, g string) string {
	return fmt.Sprintf("%ssess-%d", g, r.IntN(max(w.Sessions, 1)))
}

// own picks one of the client's remembered ids most of the time, else a
// fresh draw.
func own(r *rand.Rand, mine []string, fresh func() string) string {
	if len(mine) > 0 && r.IntN(10) < 7 {
		return mine[r.IntN(len(mine))]
	}
	return fresh()
}

// epochSteps is how many operations a client of a default run issues
// between two jumps of the clock.
const epochSteps = 6

// retry is the next attempt time and error a bump or a defer of intent id
// hands in at step: a time near the run's clock, often on the same
// millisecond as another intent's (so due scans must break ties), sometimes
// with a sub-millisecond part the store must drop. It is drawn from the
// intent and the epoch alone, as a server's retry policy would give it, so
// two clients retrying one intent at once hand in the same: their writes
// commute, and no doubt about their order outlives them (each such doubt
// doubles the checker's search).
func retry(id string, step int) (time.Time, string) {
	h := fnv.New64a()
	fmt.Fprint(h, id, "/", step/epochSteps)
	r := rand.New(rand.NewPCG(h.Sum64(), 0))
	t := estimate(step / epochSteps * epochSteps).Add(time.Duration(pick(r, -500, 0, 0, 250, 1000, 3000)) * time.Millisecond)
	if r.IntN(4) == 0 {
		t = t.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
	}
	if r.IntN(8) == 0 {
		t = t.Add(time.Duration(r.IntN(1_000_000)))
	}
	if r.IntN(4) == 0 {
		t = edgeOfSecond(r, t)
	}
	return t, pick(r, "refused", "offline", "rate limited")
}

// edgesOfSecond are parts of a second that sort one way as instants and
// another as the text a store might keep them as: the whole second
// ("…:01Z" after "…:01.5Z" as text), ".1" and ".15" (".1Z" after ".15Z"),
// and parts below the millisecond that a store of milliseconds drops (so
// that they tie with the whole second or with ".1").
var edgesOfSecond = []time.Duration{0, 100 * time.Millisecond, 150 * time.Millisecond, 500 * time.Microsecond,
	100*time.Millisecond + 500*time.Microsecond, 999 * time.Millisecond}

// edgeOfSecond is t moved to one of the edges of its second.
func edgeOfSecond(r *rand.Rand, t time.Time) time.Time {
	return t.Truncate(time.Second).Add(pick(r, edgesOfSecond...))
}

var (
	// badJSON are values that are not JSON where the contract keeps JSON
	// (a backend refuses them or keeps them verbatim, client.payload_json).
	badJSON = []string{`{"broken"`, `not json`, ``}
	// longHead is a head the reference's preview cuts, and longHead less
	// its tail one it keeps whole; another backend's preview is its own
	// (client.put_out_head.preview), learned by the model.
	longHead = strings.Repeat("é", cli.HeadPreviewRunes) + "tail"
)

// Next is the step-th operation of client; the ids it names are kept for
// Observe.
func (w *clientWorkload) Next(r *rand.Rand, client, step int) spec.Op {
	op := w.next(r, client, step)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	switch o := op.(type) {
	case cli.EnqueueIntent:
		if strings.HasPrefix(o.OpID, bulk) {
			break
		}
		w.seen["op:"+o.OpID] = true
	case cli.UpsertSession:
		w.seen["task:"+o.TaskID] = true
	case cli.BindTask:
		w.seen["task:"+o.TaskID] = true
	case cli.OpenTask:
		if strings.HasPrefix(o.Causality.Task, bulk) {
			break
		}
		w.seen["task:"+o.Causality.Task] = true
	case cli.SettleTask:
		w.seen["task:"+o.TaskID] = true
	case cli.InsertFault:
		w.seen["task:"+o.Fault.TaskID] = true
	case cli.PutOutHead:
		w.seen["head:"+o.TaskID] = true
	case cli.PutProse:
		w.seen["prose:"+o.Role] = true
	case cli.PutConfig:
		w.seen["config:"+o.Key] = true
	}
	return op
}

// Observe reads back everything the clients wrote (the simulator runs it
// at the end of a schedule, so that a write acknowledged and then lost is
// seen): the outbox, the log, the sessions, the tasks, the faults and the
// caches of every id a client named.
func (w *clientWorkload) Observe() []spec.Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	ops := []spec.Op{cli.PendingIntentCount{}, cli.DueIntents{Now: Epoch.Add(1000 * time.Hour), Limit: cli.MaxLimit},
		cli.EventHead{}, cli.EventsSince{Seq: 0, Limit: 100}, cli.ActiveSessions{}, cli.OpenTasks{Limit: cli.MaxLimit}}
	for _, k := range slices.Sorted(maps.Keys(w.seen)) {
		kind, id, _ := strings.Cut(k, ":")
		switch kind {
		case "op":
			ops = append(ops, cli.GetIntent{OpID: id})
		case "task":
			ops = append(ops, cli.GetTask{TaskID: id}, cli.GetSession{TaskID: id}, cli.TaskIsKnown{TaskID: id}, cli.ListFaults{TaskID: id})
		case "head":
			ops = append(ops, cli.GetOutHead{TaskID: id})
		case "prose":
			ops = append(ops, cli.GetProse{Role: id})
		case "config":
			ops = append(ops, cli.GetConfig{Key: id})
		}
	}
	return ops
}

func (w *clientWorkload) next(r *rand.Rand, client, step int) spec.Op {
	m := w.memory(client)
	g := w.group(r)
	grouped := w.Groups > 0
	task := func() string { return w.taskID(r, g, step) }
	intent := func() string { return w.intentID(r, g, step) }
	if len(m.then) > 0 {
		op := m.then[0]
		m.then = m.then[1:]
		return op
	}
	for {
		switch p := r.IntN(100); {
		// ----- the outbox (36%) -----
		case p < 8:
			id := own(r, m.intents, intent)
			if r.IntN(3) > 0 {
				id = intent()
			}
			env := fmt.Sprintf(`{"causality":{"task":%q,"attempt":%d},"body":%d}`, task(), r.IntN(3), step)
			switch r.IntN(20) {
			case 0, 2:
				env = pick(r, badJSON...)
			case 1:
				env = `{"causality":{"task":7}}`
			}
			m.intents = remember(m.intents, id)
			return cli.EnqueueIntent{OpID: id, Envelope: []byte(env)}
		case p < 10:
			return cli.GetIntent{OpID: own(r, m.intents, intent)}
		case p < 15:
			id := own(r, m.intents, intent)
			next, lastError := retry(id, step)
			return cli.BumpIntent{OpID: id, NextAttemptAt: next, LastError: lastError}
		case p < 20:
			id := own(r, m.intents, intent)
			next, lastError := retry(id, step)
			return cli.DeferIntent{OpID: id, NextAttemptAt: next, LastError: lastError}
		case p < 24:
			receipt := fmt.Sprintf(`{"ack":%d}`, step)
			if r.IntN(10) == 0 {
				receipt = pick(r, badJSON...)
			}
			return cli.AcceptIntent{OpID: own(r, m.intents, intent), Receipt: []byte(receipt)}
		case p < 26:
			return cli.ExhaustIntent{OpID: own(r, m.intents, intent), LastError: "gave up"}
		case p < 28:
			return cli.DeleteIntent{OpID: own(r, m.intents, intent)}
		case p < 31 && !grouped:
			at := estimate(step).Add(time.Duration(r.IntN(6000)-2000) * time.Millisecond)
			if r.IntN(3) == 0 {
				// A scan at an edge of a second: where deadlines at the
				// edges are due or not.
				at = edgeOfSecond(r, at)
			}
			return cli.DueIntents{Now: at, Limit: uint32(pick(r, 0, 1, 2, 3))}
		case p < 34 && !grouped:
			return cli.FlushOrder{}
		case p < 36 && !grouped:
			return cli.PendingIntentCount{}

		// ----- the event log (6%) -----
		case p < 39 && !grouped:
			data := fmt.Sprintf(`{"n":%d}`, step)
			if r.IntN(10) < 2 {
				data = pick(r, badJSON...)
			}
			return cli.AppendEvent{Type: pick(r, "tick", "note"), Data: []byte(data)}
		case p < 41 && !grouped:
			// The log's numbers are the backend's
			// (client.append_event.seq_increasing) and a schedule is drawn
			// before any answer: half the reads start from 0, the whole
			// log under any numbering; the others from a number in the
			// range a log numbered 1, 2, 3... has reached by this step,
			// which any numbering must answer as well (the model holds
			// the numbers the backend gave).
			var seq int64
			if r.IntN(2) == 0 {
				seq = int64(r.IntN(step/2 + 2))
			}
			return cli.EventsSince{Seq: seq, Limit: uint32(pick(r, 0, 1, 3))}
		case p < 42 && !grouped:
			return cli.EventHead{}

		// ----- caches (6%) -----
		// A cache is last-writer-wins: two racing puts of two values leave
		// a doubt that only a later read resolves. The keys are few and read
		// as often as written, and the value is the epoch's, so racing puts
		// commute.
		case p < 43:
			return cli.PutOutHead{TaskID: g + pick(r, "task-a", "task-b"), Head: []string{"short head", longHead, longHead[:len(longHead)-4]}[step/epochSteps%3]}
		case p < 45:
			return cli.GetOutHead{TaskID: g + pick(r, "task-a", "task-b")}
		case p < 46:
			return cli.PutProse{Role: g + "planner", Prose: []string{"plan", "replan"}[step/epochSteps%2], SpecHash: []string{"h1", "h2", "h3"}[step/epochSteps%3]}
		case p < 47:
			return cli.GetProse{Role: g + "planner"}
		case p < 48:
			return cli.PutConfig{Key: g + "k0", Value: []string{"on", "off"}[step/epochSteps%2]}
		case p < 49:
			return cli.GetConfig{Key: g + "k0"}

		// ----- sessions and bindings (24%) -----
		case p < 58:
			return w.upsertSession(r, m, g, task(), step)
		case p < 62:
			t := task()
			if len(m.bindings) > 0 && r.IntN(2) == 0 {
				t = m.bindings[r.IntN(len(m.bindings))][1]
			}
			v := m.versions[w.sessionID(r, g)]
			gen, seq := v[0], v[1]+1
			switch r.IntN(4) {
			case 0:
				gen, seq = gen+1, uint64(r.IntN(2))
			case 1:
				seq--
			}
			return cli.BumpSessionVersion{TaskID: t, Generation: gen, Seq: seq}
		case p < 65:
			t := task()
			if len(m.bindings) > 0 && r.IntN(2) == 0 {
				t = m.bindings[r.IntN(len(m.bindings))][1]
			}
			return cli.GetSession{TaskID: t}
		case p < 68:
			b := [2]string{w.sessionID(r, g), task()}
			m.bindings = remember(m.bindings, b)
			return cli.BindTask{SessionID: b[0], TaskID: b[1]}
		case p < 71:
			b := [2]string{w.sessionID(r, g), task()}
			if len(m.bindings) > 0 && r.IntN(10) < 7 {
				b = m.bindings[r.IntN(len(m.bindings))]
			}
			return cli.ReleaseBinding{SessionID: b[0], TaskID: b[1]}
		case p < 73 && !grouped:
			return cli.ActiveSessions{}

		// ----- tasks (23%) -----
		case p < 78:
			// A task's chain (kind, parent, hop) is the task's own; its
			// redeliveries differ only in their attempt.
			t := task()
			m.tasks = remember(m.tasks, t)
			chain := cli.Causality{Task: t, Attempt: uint32(r.IntN(4))}
			kind := cli.KindRoot
			if n := len(t); t[n-1]%2 == 1 {
				kind, chain.ParentTask, chain.Hop = cli.KindRelay, t[:n-1]+"0", uint32(t[n-1]%3)
			}
			if r.IntN(20) < 2 {
				kind = "orphan"
			}
			if !grouped && r.IntN(4) == 0 {
				// The open tasks, asked just after opening one: seldom
				// none, as settles close most tasks soon.
				m.then = append(m.then, cli.OpenTasks{Limit: 1})
			}
			return cli.OpenTask{Causality: chain, Kind: kind}
		case p < 88:
			verdict := pick(r, cli.TerminalTaskStates...)
			if r.IntN(20) == 0 {
				verdict = pick(r, cli.TaskPending, "bogus")
			}
			return cli.SettleTask{TaskID: task(), State: verdict}
		case p < 91:
			return cli.GetTask{TaskID: own(r, m.tasks, task)}
		case p < 93 && !grouped:
			return cli.OpenTasks{Limit: uint32(pick(r, 0, 2))}
		case p < 95:
			return cli.TaskIsKnown{TaskID: task()}
		case p < 96:
			return cli.TaskAttempt{TaskID: task()}

		// ----- faults (4%) -----
		case p < 98 && !grouped:
			return cli.InsertFault{Fault: cli.Fault{TaskID: task(), SessionID: w.sessionID(r, g), Generation: int64(r.IntN(3)),
				Seq: int64(step), Intent: "resume", Attempt: int64(r.IntN(3)), Kind: pick(r, "mismatch", "crash"),
				Reason: "observed", State: "open", CreatedAt: estimate(step)}}
		case p < 100 && !grouped:
			return cli.ListFaults{TaskID: task()}
		}
	}
}

// upsertSession writes the next version of a session the client holds; as
// often, a version another client may have passed (the same pair, an older
// one: a zombie), or a new generation that starts its seq again.
func (w *clientWorkload) upsertSession(r *rand.Rand, m *clientMemory, g, task string, step int) spec.Op {
	sess := w.sessionID(r, g)
	ref := fmt.Sprintf(`{"task_id":%q}`, sess)
	switch r.IntN(7) {
	case 0:
		ref = `{"task_id":""}`
	case 1:
		ref = ""
	}
	id := cli.SessionIDFor(task, ref)
	v, ok := m.versions[id]
	gen, seq := uint64(1), uint64(r.IntN(3))
	if ok {
		switch x := r.IntN(20); {
		case x < 11:
			gen, seq = v[0], v[1]+1
		case x < 14:
			gen, seq = v[0]+1, uint64(r.IntN(2))
		case x < 17:
			gen, seq = v[0], v[1]
		default:
			gen, seq = v[0], v[1]-min(v[1], 1)
			if seq == v[1] && gen > 0 {
				gen--
			}
		}
	}
	m.versions[id] = [2]uint64{gen, seq}
	return cli.UpsertSession{TaskID: task, Version: cli.VersionedSession{
		Generation: gen, Seq: seq,
		AgentState:    pick(r, cli.AgentBooting, cli.AgentReady, cli.AgentIdle, cli.AgentWorking, cli.AgentGone),
		DeliveryState: pick(r, "delivering", "delivered"),
		ResourceState: pick(r, cli.ResourceOpen, cli.ResourceOpen, cli.ResourceClosed),
		DesiredJSON:   fmt.Sprintf(`{"step":%d}`, step), ObservedJSON: "{}",
		BackendRef: ref, MismatchCount: int64(r.IntN(2)),
		UpdatedAt: estimate(step).Add(time.Duration(r.IntN(1000)) * time.Millisecond),
	}}
}

// clientWorkload is a sim.Deadliner (which this package cannot name).
var _ interface {
	Deadlines(op spec.Op, nowMS int64) []int64
} = (*clientWorkload)(nil)

// Deadlines are the instants a bump or a defer makes an intent due: the
// simulator lands clock jumps on them, just before and just after.
func (w *clientWorkload) Deadlines(op spec.Op, _ int64) []int64 {
	switch o := op.(type) {
	case cli.BumpIntent:
		return []int64{o.NextAttemptAt.UnixMilli()}
	case cli.DeferIntent:
		return []int64{o.NextAttemptAt.UnixMilli()}
	}
	return nil
}

// ClientUnreachable are the cells of the client store's coverage matrix
// the default workload is not meant to reach, and why (every io has the
// default reason: no workload makes a store fail so).
var ClientUnreachable = map[string]string{
	"open_task:false": "open_task answers true whenever it answers: a new record and a re-opened one are both written (client.open_task.new, client.open_task.refresh)",
}

// Prologue reads the empty store before the clients start: the outbox and
// its scans, the log, the sessions and tasks, the faults and the caches of
// ids the clients will name, and a cache key and role none of them writes.
// A grouped workload has none: the whole-table reads would join its parts.
func (w *clientWorkload) Prologue() []spec.Op {
	if w.Groups > 0 {
		return nil
	}
	return []spec.Op{cli.PendingIntentCount{}, cli.DueIntents{Now: Epoch, Limit: 0}, cli.FlushOrder{},
		cli.GetIntent{OpID: "op-0"}, cli.EventHead{}, cli.EventsSince{Seq: 0, Limit: 0}, cli.ActiveSessions{},
		cli.OpenTasks{Limit: 0}, cli.GetTask{TaskID: "task-0"}, cli.GetSession{TaskID: "task-0"},
		cli.TaskIsKnown{TaskID: "task-0"}, cli.ListFaults{TaskID: "task-0"}, cli.GetOutHead{TaskID: "task-a"},
		cli.GetProse{Role: "planner"}, cli.GetConfig{Key: "k0"}, cli.GetProse{Role: "reviewer"}, cli.GetConfig{Key: "k1"}}
}
