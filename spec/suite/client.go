package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// The ids of the client specs.
const (
	opA   = "op-a"
	opB   = "op-b"
	opC   = "op-c"
	taskA = "task-a"
	taskB = "task-b"
	sessS = "session-s"
	sessT = "session-t"
)

// clientFixture is what the store's specs share: the harness, the spec's
// fresh clock and path, its open store, and the helpers as methods.
type clientFixture struct {
	h Harness
	*fresh
	s cli.Store
}

// The client contract's rules, one Describe per operation (see spec/client
// for the rules as the contract states them), grouped in client_*.go.
func clientSpecs(h Harness) {
	fx := &clientFixture{h: h}

	BeforeEach(func() {
		if fx.h.Client == nil {
			Skip("backend does not implement the client store")
		}
		fx.fresh = newFresh(fx.h, "client.db")
		fx.s = fx.open(fx.path)
	})

	clientIntentSpecs(fx)
	clientEventSpecs(fx)
	clientCacheSpecs(fx)
	clientSessionSpecs(fx)
	clientTaskSpecs(fx)
	clientFaultSpecs(fx)
	clientOpenSpecs(fx)
}

// open opens a store on path and closes it when the spec ends.
func (fx *clientFixture) open(path string) cli.Store {
	GinkgoHelper()
	return openForSpec(fx.fresh, fx.h.Client, path, "client", func(st cli.Store, once *closeOnce) cli.Store {
		return clientHandle{st, once}
	})
}

// because is a failure message that names a rule of the client's table and
// says what it allows.
func because(id string, what ...any) string {
	msg := cli.Contract.Explain(id)
	if len(what) > 0 {
		msg = fmt.Sprint(what...) + "; " + msg
	}
	return msg
}

// keptAs matches a time the store kept, read back: want cut to the second,
// the millisecond, the microsecond, or whole (client.time_precision,
// client.unix_seconds: the precision is the backend's).
func keptAs(want time.Time) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(got time.Time) (bool, error) {
		for _, d := range []time.Duration{time.Second, time.Millisecond, time.Microsecond, time.Nanosecond} {
			if got.Equal(want.Truncate(d)) {
				return true, nil
			}
		}
		return false, nil
	}).WithTemplate("Expected\n{{.FormattedActual}}\nto be {{.Data}} as the store keeps it: cut to the second, the millisecond, the microsecond or whole (rule client.time_precision or client.unix_seconds)", want.Format(time.RFC3339Nano))
}

// subSecond reports whether a time read back kept a part of its second, so
// that the store orders such times by it.
func subSecond(t time.Time) bool { return !t.Equal(t.Truncate(time.Second)) }

// at is the spec's clock origin moved by d.
func (fx *clientFixture) at(d time.Duration) time.Time { return Epoch.Add(d) }

// env is an envelope whose causality names task.
func (fx *clientFixture) env(task string) spec.RawJSON {
	return spec.RawJSON(fmt.Sprintf(`{"kind":"complete","causality":{"task":%q,"hop":1}}`, task))
}

func (fx *clientFixture) enqueue(op string, e spec.RawJSON) {
	GinkgoHelper()
	added, err := fx.s.EnqueueIntent(fx.ctx, op, e)
	Expect(err).NotTo(HaveOccurred())
	Expect(added).To(BeTrue(), "enqueue_intent %s is new", op)
}

func (fx *clientFixture) intent(op string) *cli.Intent {
	GinkgoHelper()
	in, err := fx.s.Intent(fx.ctx, op)
	Expect(err).NotTo(HaveOccurred())
	return in
}

// ids are the op ids of intents, in order.
func (fx *clientFixture) ids(in []cli.Intent) []string {
	out := []string{}
	for _, i := range in {
		out = append(out, i.OpID)
	}
	return out
}

func (fx *clientFixture) due(now time.Time, limit uint32) []string {
	GinkgoHelper()
	in, err := fx.s.DueIntents(fx.ctx, now, limit)
	Expect(err).NotTo(HaveOccurred())
	return fx.ids(in)
}

func (fx *clientFixture) flush() []string {
	GinkgoHelper()
	in, err := fx.s.FlushOrder(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return fx.ids(in)
}

func (fx *clientFixture) pending() int64 {
	GinkgoHelper()
	n, err := fx.s.PendingIntentCount(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return n
}

func (fx *clientFixture) acted(ok bool, err error) bool {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return ok
}

func (fx *clientFixture) session(task string) *cli.SessionRecord {
	GinkgoHelper()
	r, err := fx.s.GetSession(fx.ctx, task)
	Expect(err).NotTo(HaveOccurred())
	return r
}

func (fx *clientFixture) active() []cli.LiveSession {
	GinkgoHelper()
	l, err := fx.s.ActiveSessions(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return l
}

func (fx *clientFixture) task(id string) *cli.Task {
	GinkgoHelper()
	t, err := fx.s.Task(fx.ctx, id)
	Expect(err).NotTo(HaveOccurred())
	return t
}

func (fx *clientFixture) openTasks(limit uint32) []string {
	GinkgoHelper()
	ts, err := fx.s.OpenTasks(fx.ctx, limit)
	Expect(err).NotTo(HaveOccurred())
	out := []string{}
	for _, t := range ts {
		out = append(out, t.TaskID)
	}
	return out
}

func (fx *clientFixture) known(id string) bool {
	GinkgoHelper()
	k, err := fx.s.TaskIsKnown(fx.ctx, id)
	Expect(err).NotTo(HaveOccurred())
	return k
}

func (fx *clientFixture) head() int64 {
	GinkgoHelper()
	n, err := fx.s.EventHead(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// tuple is a session tuple at (generation, seq) filed under session id
// sid (through backend_ref).
func (fx *clientFixture) tuple(sid string, gen, seq uint64, agent, resource string) cli.VersionedSession {
	return cli.VersionedSession{
		Generation: gen, Seq: seq, AgentState: agent, DeliveryState: "delivering", ResourceState: resource,
		RecoverySubstate: "none", DesiredJSON: `{"want":"run"}`, ObservedJSON: fmt.Sprintf(`{"seen":%d}`, seq),
		BackendRef: fmt.Sprintf(`{"backend":"acp","task_id":%q}`, sid), MismatchCount: int64(seq), UpdatedAt: fx.at(time.Duration(seq) * time.Second),
	}
}

func (fx *clientFixture) upsert(t string, v cli.VersionedSession) bool {
	GinkgoHelper()
	return fx.acted(fx.s.UpsertSession(fx.ctx, t, v))
}

// fillIntents enqueues the intents bulk-<from> to bulk-<to - 1>, in order,
// all due at the spec's origin. The contract has no bulk enqueue, so each
// is one operation: over the wire a round trip each (about half a
// millisecond against the Python example).
func (fx *clientFixture) fillIntents(from, to int) {
	GinkgoHelper()
	for i := from; i < to; i++ {
		fx.enqueue(bulkID(i), spec.RawJSON(`{}`))
	}
}

// bulkID is the i-th id a fill makes: of an intent, or of a task.
func bulkID(i int) string { return fmt.Sprintf("bulk-%04d", i) }

// firstRows checks a read at a side of a bound: that it took want rows
// (the count alone, so that a failure does not print 500 ids), then that
// they are the first want rows a fill made, in order.
func firstRows(got []string, want int, bound, what string) {
	GinkgoHelper()
	Expect(len(got)).To(Equal(want), because(bound, fmt.Sprintf("%s: %d rows answered, want %d", what, len(got), want)))
	Expect(got).To(Equal(bulkIDs(want)), because(bound, what+": the first rows, in order"))
}

// bulkIDs are the first n ids a fill makes, in order.
func bulkIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = bulkID(i)
	}
	return out
}

// clientObserved is what the specs can see of the store, to show that a
// failed operation changed nothing.
type clientObserved struct {
	Intents   []*cli.Intent
	Due       []cli.Intent
	Pending   int64
	EventHead int64
	Tasks     []*cli.Task
	Open      []string
	Sessions  []*cli.SessionRecord
	Active    []cli.LiveSession
}

func (fx *clientFixture) state() clientObserved {
	GinkgoHelper()
	d, err := fx.s.DueIntents(fx.ctx, fx.at(1000*time.Hour), cli.MaxLimit)
	Expect(err).NotTo(HaveOccurred())
	return clientObserved{
		Intents: []*cli.Intent{fx.intent(opA), fx.intent(opB), fx.intent(opC)}, Due: d, Pending: fx.pending(),
		EventHead: fx.head(), Tasks: []*cli.Task{fx.task(taskA), fx.task(taskB)}, Open: fx.openTasks(0),
		Sessions: []*cli.SessionRecord{fx.session(taskA), fx.session(taskB)}, Active: fx.active(),
	}
}

// refused checks that err has the kind and that nothing changed.
func (fx *clientFixture) refused(before clientObserved, err error, kind error) {
	GinkgoHelper()
	refusedUnchanged(fx.state, before, err, kind)
}

// declines checks that an operation answered false and changed nothing
// since before: fx.declines(before)(fx.s.Op(...)).
func (fx *clientFixture) declines(before clientObserved) func(bool, error) {
	return func(ok bool, err error) {
		GinkgoHelper()
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse(), "the operation answers false")
		Expect(fx.state()).To(Equal(before), "an operation that did not act changes nothing")
	}
}

// clientHandle is a client store whose Close the spec and the cleanup share.
type clientHandle struct {
	cli.Store
	once *closeOnce
}

func (s clientHandle) Close() error { return s.once.Close() }
