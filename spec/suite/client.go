package suite

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/client"
)

// The client contract's rules, one Describe per operation (see spec/client
// for the rules as the contract states them).
func clientSpecs(h Harness) {
	const (
		opA   = "op-a"
		opB   = "op-b"
		opC   = "op-c"
		taskA = "task-a"
		taskB = "task-b"
		sessS = "session-s"
		sessT = "session-t"
	)
	var (
		f *fresh
		s c.Store
	)

	open := func(path string) c.Store {
		GinkgoHelper()
		st, err := h.Client(f.ctx, Options{Path: path, Clock: f.clock})
		Expect(err).NotTo(HaveOccurred(), "open the client store")
		closed := false
		DeferCleanup(func() {
			if !closed {
				closed = true
				Expect(st.Close()).To(Succeed())
			}
		})
		return &clientCloseOnce{Store: st, closed: &closed}
	}
	// at is the spec's clock origin moved by d.
	at := func(d time.Duration) time.Time { return Epoch.Add(d) }
	// env is an envelope whose causality names task.
	env := func(task string) spec.RawJSON {
		return spec.RawJSON(fmt.Sprintf(`{"kind":"complete","causality":{"task":%q,"hop":1}}`, task))
	}
	enqueue := func(op string, e spec.RawJSON) {
		GinkgoHelper()
		added, err := s.EnqueueIntent(f.ctx, op, e)
		Expect(err).NotTo(HaveOccurred())
		Expect(added).To(BeTrue(), "enqueue_intent %s is new", op)
	}
	intent := func(op string) *c.Intent {
		GinkgoHelper()
		in, err := s.Intent(f.ctx, op)
		Expect(err).NotTo(HaveOccurred())
		return in
	}
	// ids are the op ids of intents, in order.
	ids := func(in []c.Intent) []string {
		out := []string{}
		for _, i := range in {
			out = append(out, i.OpID)
		}
		return out
	}
	due := func(now time.Time, limit uint32) []string {
		GinkgoHelper()
		in, err := s.DueIntents(f.ctx, now, limit)
		Expect(err).NotTo(HaveOccurred())
		return ids(in)
	}
	flush := func() []string {
		GinkgoHelper()
		in, err := s.FlushOrder(f.ctx)
		Expect(err).NotTo(HaveOccurred())
		return ids(in)
	}
	pending := func() int64 {
		GinkgoHelper()
		n, err := s.PendingIntentCount(f.ctx)
		Expect(err).NotTo(HaveOccurred())
		return n
	}
	acted := func(ok bool, err error) bool {
		GinkgoHelper()
		Expect(err).NotTo(HaveOccurred())
		return ok
	}
	session := func(task string) *c.SessionRecord {
		GinkgoHelper()
		r, err := s.GetSession(f.ctx, task)
		Expect(err).NotTo(HaveOccurred())
		return r
	}
	active := func() []c.LiveSession {
		GinkgoHelper()
		l, err := s.ActiveSessions(f.ctx)
		Expect(err).NotTo(HaveOccurred())
		return l
	}
	task := func(id string) *c.Task {
		GinkgoHelper()
		t, err := s.Task(f.ctx, id)
		Expect(err).NotTo(HaveOccurred())
		return t
	}
	openTasks := func(limit uint32) []string {
		GinkgoHelper()
		ts, err := s.OpenTasks(f.ctx, limit)
		Expect(err).NotTo(HaveOccurred())
		out := []string{}
		for _, t := range ts {
			out = append(out, t.TaskID)
		}
		return out
	}
	known := func(id string) bool {
		GinkgoHelper()
		k, err := s.TaskIsKnown(f.ctx, id)
		Expect(err).NotTo(HaveOccurred())
		return k
	}
	head := func() int64 {
		GinkgoHelper()
		n, err := s.EventHead(f.ctx)
		Expect(err).NotTo(HaveOccurred())
		return n
	}
	// tuple is a session tuple at (generation, seq) filed under session id
	// sid (through backend_ref).
	tuple := func(sid string, gen, seq uint64, agent, resource string) c.VersionedSession {
		return c.VersionedSession{
			Generation: gen, Seq: seq, AgentState: agent, DeliveryState: "delivering", ResourceState: resource,
			RecoverySubstate: "none", DesiredJSON: `{"want":"run"}`, ObservedJSON: fmt.Sprintf(`{"seen":%d}`, seq),
			BackendRef: fmt.Sprintf(`{"backend":"acp","task_id":%q}`, sid), MismatchCount: int64(seq), UpdatedAt: at(time.Duration(seq) * time.Second),
		}
	}
	upsert := func(t string, v c.VersionedSession) bool {
		GinkgoHelper()
		return acted(s.UpsertSession(f.ctx, t, v))
	}
	// fillIntents enqueues n intents, all due at the spec's origin.
	fillIntents := func(n int) {
		GinkgoHelper()
		for i := range n {
			enqueue(fmt.Sprintf("bulk-%04d", i), spec.RawJSON(`{}`))
		}
	}

	// observed is what the specs can see of the store, to show that a failed
	// operation changed nothing.
	type observed struct {
		Intents   []*c.Intent
		Due       []c.Intent
		Pending   int64
		EventHead int64
		Tasks     []*c.Task
		Open      []string
		Sessions  []*c.SessionRecord
		Active    []c.LiveSession
	}
	state := func() observed {
		GinkgoHelper()
		d, err := s.DueIntents(f.ctx, at(1000*time.Hour), c.MaxLimit)
		Expect(err).NotTo(HaveOccurred())
		return observed{
			Intents: []*c.Intent{intent(opA), intent(opB), intent(opC)}, Due: d, Pending: pending(),
			EventHead: head(), Tasks: []*c.Task{task(taskA), task(taskB)}, Open: openTasks(0),
			Sessions: []*c.SessionRecord{session(taskA), session(taskB)}, Active: active(),
		}
	}
	refused := func(before observed, err error, kind error) {
		GinkgoHelper()
		Expect(err).To(MatchError(kind))
		Expect(state()).To(Equal(before), "a failed operation changes nothing")
	}
	// declines checks that an operation answered false and changed nothing
	// since before: declines(before)(s.Op(...)).
	declines := func(before observed) func(bool, error) {
		return func(ok bool, err error) {
			GinkgoHelper()
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse(), "the operation answers false")
			Expect(state()).To(Equal(before), "an operation that did not act changes nothing")
		}
	}

	BeforeEach(func() {
		if h.Client == nil {
			Skip("backend does not implement the client store")
		}
		f = newFresh(h, "client.db")
		s = open(f.path)
	})

	Describe("enqueue_intent", func() {
		It("adds a pending intent with attempt 0, due now, and answers true", func() {
			f.clock.Advance(1500 * time.Millisecond)
			enqueue(opA, env(taskA))
			in := intent(opA)
			Expect(in).NotTo(BeNil())
			Expect(in.OpID).To(Equal(opA))
			Expect(in.Envelope).To(MatchJSON(env(taskA)))
			Expect(in.Attempt).To(BeZero())
			Expect(in.State).To(Equal(c.IntentPending))
			Expect(in.Receipt).To(BeNil())
			Expect(in.LastError).To(BeEmpty())
			for _, t := range []time.Time{in.NextAttemptAt, in.CreatedAt, in.UpdatedAt} {
				Expect(t).To(BeTemporally("==", at(1500*time.Millisecond)))
			}
			Expect(pending()).To(Equal(int64(1)))
		})
		It("leaves an existing op_id exactly as it was (attempt, state, times) and answers false", func() {
			enqueue(opA, env(taskA))
			f.clock.Advance(time.Second)
			Expect(acted(s.BumpIntent(f.ctx, opA, at(30*time.Second), "refused"))).To(BeTrue())
			enqueue(opB, env(taskB))
			Expect(acted(s.AcceptIntent(f.ctx, opB, spec.RawJSON(`{"ok":true}`)))).To(BeTrue())
			f.clock.Advance(time.Second)
			before := state()
			declines(before)(s.EnqueueIntent(f.ctx, opA, env("another task")))
			declines(before)(s.EnqueueIntent(f.ctx, opB, env(taskB)))
			Expect(intent(opA).Attempt).To(Equal(int64(1)), "the retry budget is not reset")
		})
		It("refuses an envelope that is not JSON with invalid_argument", func() {
			enqueue(opB, env(taskB))
			before := state()
			_, err := s.EnqueueIntent(f.ctx, opA, spec.RawJSON(`{"causality":`))
			refused(before, err, c.ErrInvalidArgument)
		})
	})

	Describe("intent", func() {
		It("returns nil for an op_id never enqueued", func() {
			Expect(intent(opA)).To(BeNil())
		})
	})

	Describe("due_intents", func() {
		It("returns a live intent once its next attempt time has come: not just before, at it and after", func() {
			enqueue(opA, env(taskA))
			Expect(due(at(-time.Millisecond), 0)).To(BeEmpty())
			Expect(due(at(0), 0)).To(Equal([]string{opA}))
			Expect(due(at(time.Millisecond), 0)).To(Equal([]string{opA}))
			Expect(acted(s.BumpIntent(f.ctx, opA, at(10*time.Second), "later"))).To(BeTrue())
			Expect(due(at(10*time.Second-time.Millisecond), 0)).To(BeEmpty())
			Expect(due(at(10*time.Second), 0)).To(Equal([]string{opA}))
			in, err := s.DueIntents(f.ctx, at(10*time.Second), 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(in[0].State).To(Equal(c.IntentRetrying))
		})
		It("returns no accepted or exhausted intent", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			enqueue(opC, env(taskB))
			Expect(acted(s.AcceptIntent(f.ctx, opA, spec.RawJSON(`1`)))).To(BeTrue())
			Expect(acted(s.ExhaustIntent(f.ctx, opB, "gave up"))).To(BeTrue())
			Expect(due(at(time.Hour), 0)).To(Equal([]string{opC}))
		})
		It("orders by next attempt time, then creation time, then enqueue order", func() {
			enqueue("first", env(taskA))
			enqueue("deferred", env(taskA))
			f.clock.Advance(time.Second)
			enqueue("zulu", env(taskA))
			enqueue("alpha", env(taskA))
			Expect(acted(s.DeferIntent(f.ctx, "deferred", at(time.Second), "offline"))).To(BeTrue())
			Expect(due(at(time.Second), 0)).To(Equal([]string{"first", "deferred", "zulu", "alpha"}))
		})
		It("orders times by their sub-second part too", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskA))
			enqueue(opC, env(taskA))
			Expect(acted(s.DeferIntent(f.ctx, opA, at(1900*time.Millisecond), "x"))).To(BeTrue())
			Expect(acted(s.BumpIntent(f.ctx, opB, at(1200*time.Millisecond), "x"))).To(BeTrue())
			Expect(acted(s.DeferIntent(f.ctx, opC, at(1001*time.Millisecond), "x"))).To(BeTrue())
			Expect(due(at(2*time.Second), 0)).To(Equal([]string{opC, opB, opA}))
			Expect(due(at(1500*time.Millisecond), 0)).To(Equal([]string{opC, opB}))
		})
		It("takes at most limit rows: 0 means 100, and never more than 500", func() {
			fillIntents(501)
			Expect(due(at(0), 3)).To(Equal([]string{"bulk-0000", "bulk-0001", "bulk-0002"}))
			Expect(due(at(0), 0)).To(HaveLen(100))
			Expect(due(at(0), 500)).To(HaveLen(500))
			all := due(at(0), 501)
			Expect(all).To(HaveLen(500))
			Expect(all[499]).To(Equal("bulk-0499"))
			Expect(due(at(0), 10_000)).To(HaveLen(500))
		})
	})

	Describe("bump_intent", func() {
		It("adds one attempt, moves the intent to retrying with the new time and error, and answers true", func() {
			enqueue(opA, env(taskA))
			f.clock.Advance(2 * time.Second)
			Expect(acted(s.BumpIntent(f.ctx, opA, at(7*time.Second), "server said no"))).To(BeTrue())
			in := intent(opA)
			Expect(in.Attempt).To(Equal(int64(1)))
			Expect(in.State).To(Equal(c.IntentRetrying))
			Expect(in.NextAttemptAt).To(BeTemporally("==", at(7*time.Second)))
			Expect(in.LastError).To(Equal("server said no"))
			Expect(in.UpdatedAt).To(BeTemporally("==", at(2*time.Second)))
			Expect(in.CreatedAt).To(BeTemporally("==", at(0)))
			Expect(acted(s.BumpIntent(f.ctx, opA, at(9*time.Second), "again"))).To(BeTrue())
			Expect(intent(opA).Attempt).To(Equal(int64(2)))
		})
		It("acts on no settled intent: an accepted or exhausted intent never comes back to life", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			Expect(acted(s.AcceptIntent(f.ctx, opA, spec.RawJSON(`{"receipt":1}`)))).To(BeTrue())
			Expect(acted(s.ExhaustIntent(f.ctx, opB, "ceiling"))).To(BeTrue())
			f.clock.Advance(time.Second)
			before := state()
			declines(before)(s.BumpIntent(f.ctx, opA, at(0), "late refusal"))
			declines(before)(s.BumpIntent(f.ctx, opB, at(0), "late refusal"))
			Expect(pending()).To(BeZero())
		})
		It("answers false for an op_id never enqueued", func() {
			declines(state())(s.BumpIntent(f.ctx, opC, at(0), "x"))
		})
	})

	Describe("defer_intent", func() {
		It("moves the next attempt time and error without consuming an attempt", func() {
			enqueue(opA, env(taskA))
			f.clock.Advance(time.Second)
			Expect(acted(s.DeferIntent(f.ctx, opA, at(5*time.Second), "link down"))).To(BeTrue())
			in := intent(opA)
			Expect(in.Attempt).To(BeZero())
			Expect(in.State).To(Equal(c.IntentRetrying))
			Expect(in.NextAttemptAt).To(BeTemporally("==", at(5*time.Second)))
			Expect(in.LastError).To(Equal("link down"))
			Expect(in.UpdatedAt).To(BeTemporally("==", at(time.Second)))
			Expect(acted(s.BumpIntent(f.ctx, opA, at(6*time.Second), "refused"))).To(BeTrue())
			Expect(acted(s.DeferIntent(f.ctx, opA, at(8*time.Second), "link down again"))).To(BeTrue())
			Expect(intent(opA).Attempt).To(Equal(int64(1)), "only the refusal counted")
		})
		It("acts on no settled intent: an accepted or exhausted intent never comes back to life", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			Expect(acted(s.AcceptIntent(f.ctx, opA, spec.RawJSON(`{"receipt":1}`)))).To(BeTrue())
			Expect(acted(s.ExhaustIntent(f.ctx, opB, "ceiling"))).To(BeTrue())
			before := state()
			declines(before)(s.DeferIntent(f.ctx, opA, at(0), "link down"))
			declines(before)(s.DeferIntent(f.ctx, opB, at(0), "link down"))
			declines(before)(s.DeferIntent(f.ctx, opC, at(0), "never enqueued"))
		})
	})

	Describe("accept_intent", func() {
		It("settles a pending or retrying intent as accepted with its receipt, and answers true", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			Expect(acted(s.BumpIntent(f.ctx, opB, at(0), "refused"))).To(BeTrue())
			f.clock.Advance(time.Second)
			for _, op := range []string{opA, opB} {
				Expect(acted(s.AcceptIntent(f.ctx, op, spec.RawJSON(`{"seq": 42}`)))).To(BeTrue())
				in := intent(op)
				Expect(in.State).To(Equal(c.IntentAccepted))
				Expect(in.Receipt).To(MatchJSON(`{"seq":42}`))
				Expect(in.UpdatedAt).To(BeTemporally("==", at(time.Second)))
			}
			Expect(intent(opB).Attempt).To(Equal(int64(1)))
			Expect(pending()).To(BeZero())
			Expect(due(at(time.Hour), 0)).To(BeEmpty())
		})
		It("acts only on a live intent: a second accept or an accept after exhaust answers false", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			Expect(acted(s.AcceptIntent(f.ctx, opA, spec.RawJSON(`"first"`)))).To(BeTrue())
			Expect(acted(s.ExhaustIntent(f.ctx, opB, "ceiling"))).To(BeTrue())
			before := state()
			declines(before)(s.AcceptIntent(f.ctx, opA, spec.RawJSON(`"second"`)))
			declines(before)(s.AcceptIntent(f.ctx, opB, spec.RawJSON(`"late"`)))
			declines(before)(s.AcceptIntent(f.ctx, opC, spec.RawJSON(`"none"`)))
		})
		It("refuses a receipt that is not JSON with invalid_argument", func() {
			enqueue(opA, env(taskA))
			_, err := s.AcceptIntent(f.ctx, opA, spec.RawJSON(`not json`))
			refused(state(), err, c.ErrInvalidArgument)
		})
	})

	Describe("exhaust_intent", func() {
		It("settles a live intent as exhausted, keeping its attempt and recording the error", func() {
			enqueue(opA, env(taskA))
			Expect(acted(s.BumpIntent(f.ctx, opA, at(0), "one"))).To(BeTrue())
			Expect(acted(s.BumpIntent(f.ctx, opA, at(0), "two"))).To(BeTrue())
			f.clock.Advance(time.Second)
			Expect(acted(s.ExhaustIntent(f.ctx, opA, "attempt ceiling reached"))).To(BeTrue())
			in := intent(opA)
			Expect(in.State).To(Equal(c.IntentExhausted))
			Expect(in.Attempt).To(Equal(int64(2)))
			Expect(in.LastError).To(Equal("attempt ceiling reached"))
			Expect(in.UpdatedAt).To(BeTemporally("==", at(time.Second)))
			Expect(pending()).To(BeZero())
		})
		It("acts on no settled intent", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			Expect(acted(s.AcceptIntent(f.ctx, opA, spec.RawJSON(`{}`)))).To(BeTrue())
			Expect(acted(s.ExhaustIntent(f.ctx, opB, "first"))).To(BeTrue())
			before := state()
			declines(before)(s.ExhaustIntent(f.ctx, opA, "late"))
			declines(before)(s.ExhaustIntent(f.ctx, opB, "second"))
			declines(before)(s.ExhaustIntent(f.ctx, opC, "never enqueued"))
		})
	})

	Describe("delete_intent", func() {
		It("removes an intent in any state and answers true; a second delete answers false", func() {
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			Expect(acted(s.ExhaustIntent(f.ctx, opB, "x"))).To(BeTrue())
			for _, op := range []string{opA, opB} {
				Expect(acted(s.DeleteIntent(f.ctx, op))).To(BeTrue())
				Expect(intent(op)).To(BeNil())
			}
			Expect(pending()).To(BeZero())
			declines(state())(s.DeleteIntent(f.ctx, opA))
		})
		It("lets a deleted op_id be enqueued again, as new", func() {
			enqueue(opA, env(taskA))
			Expect(acted(s.BumpIntent(f.ctx, opA, at(time.Hour), "x"))).To(BeTrue())
			Expect(acted(s.DeleteIntent(f.ctx, opA))).To(BeTrue())
			enqueue(opA, env(taskA))
			Expect(intent(opA).Attempt).To(BeZero())
		})
	})

	Describe("pending_intent_count", func() {
		It("counts pending and retrying intents, due or not, and no settled one", func() {
			Expect(pending()).To(BeZero())
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskB))
			enqueue(opC, env(taskB))
			Expect(acted(s.BumpIntent(f.ctx, opB, at(time.Hour), "not due for an hour"))).To(BeTrue())
			Expect(pending()).To(Equal(int64(3)))
			Expect(acted(s.AcceptIntent(f.ctx, opA, spec.RawJSON(`{}`)))).To(BeTrue())
			Expect(acted(s.ExhaustIntent(f.ctx, opC, "x"))).To(BeTrue())
			Expect(pending()).To(Equal(int64(1)))
		})
	})

	Describe("flush_order", func() {
		It("returns what is due at the store's own clock, in due order", func() {
			enqueue(opA, env(taskA))
			f.clock.Advance(time.Second)
			enqueue(opB, env(taskB))
			Expect(acted(s.DeferIntent(f.ctx, opA, at(5*time.Second), "offline"))).To(BeTrue())
			Expect(flush()).To(Equal([]string{opB}))
			f.clock.Advance(4*time.Second - time.Millisecond)
			Expect(flush()).To(Equal([]string{opB}))
			f.clock.Advance(time.Millisecond)
			Expect(flush()).To(Equal([]string{opB, opA}))
		})
		It("takes at most 100 rows, oldest first", func() {
			fillIntents(101)
			got := flush()
			Expect(got).To(HaveLen(100))
			Expect(got[0]).To(Equal("bulk-0000"))
			Expect(got[99]).To(Equal("bulk-0099"))
		})
	})

	Describe("append_event", func() {
		It("returns strictly increasing sequence numbers, the first being 1", func() {
			var last int64
			for i := range 5 {
				seq, err := s.AppendEvent(f.ctx, "tick", spec.RawJSON(fmt.Sprint(i)))
				Expect(err).NotTo(HaveOccurred())
				if i == 0 {
					Expect(seq).To(Equal(int64(1)))
				}
				Expect(seq).To(BeNumerically(">", last))
				last = seq
			}
			Expect(head()).To(Equal(last))
		})
		It("refuses data that is not JSON with invalid_argument and appends nothing", func() {
			_, err := s.AppendEvent(f.ctx, "tick", spec.RawJSON(`{`))
			refused(state(), err, c.ErrInvalidArgument)
		})
	})

	Describe("events_since", func() {
		It("returns the strictly later events in order, with type, data and time", func() {
			var seqs []int64
			for i := range 4 {
				f.clock.Advance(250 * time.Millisecond)
				seq, err := s.AppendEvent(f.ctx, fmt.Sprint("type-", i), spec.RawJSON(fmt.Sprintf(`{"n":%d}`, i)))
				Expect(err).NotTo(HaveOccurred())
				seqs = append(seqs, seq)
			}
			evs, err := s.EventsSince(f.ctx, seqs[1], 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(evs).To(HaveLen(2))
			for i, e := range evs {
				Expect(e.Seq).To(Equal(seqs[2+i]))
				Expect(e.Type).To(Equal(fmt.Sprint("type-", 2+i)))
				Expect(e.Data).To(MatchJSON(fmt.Sprintf(`{"n":%d}`, 2+i)))
				Expect(e.CreatedAt).To(BeTemporally("==", at(time.Duration(3+i)*250*time.Millisecond)))
			}
			evs, err = s.EventsSince(f.ctx, seqs[3], 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(evs).To(BeEmpty())
		})
		It("takes at most limit events: 0 means 100, and never more than 500", func() {
			for i := range 501 {
				_, err := s.AppendEvent(f.ctx, "bulk", spec.RawJSON(fmt.Sprint(i)))
				Expect(err).NotTo(HaveOccurred())
			}
			count := func(limit uint32) int {
				GinkgoHelper()
				evs, err := s.EventsSince(f.ctx, 0, limit)
				Expect(err).NotTo(HaveOccurred())
				return len(evs)
			}
			Expect(count(2)).To(Equal(2))
			Expect(count(0)).To(Equal(100))
			Expect(count(501)).To(Equal(500))
		})
	})

	Describe("event_head", func() {
		It("is 0 with no events, then the last sequence number", func() {
			Expect(head()).To(BeZero())
			seq, err := s.AppendEvent(f.ctx, "one", spec.RawJSON(`null`))
			Expect(err).NotTo(HaveOccurred())
			Expect(head()).To(Equal(seq))
		})
	})

	Describe("put_out_head", func() {
		outHead := func(t string) *string {
			GinkgoHelper()
			v, err := s.OutHead(f.ctx, t)
			Expect(err).NotTo(HaveOccurred())
			return v
		}
		It("reads back what was stored, the latest put winning", func() {
			Expect(outHead(taskA)).To(BeNil())
			Expect(s.PutOutHead(f.ctx, taskA, "first head")).To(Succeed())
			Expect(s.PutOutHead(f.ctx, taskA, "second head")).To(Succeed())
			Expect(s.PutOutHead(f.ctx, taskB, "other")).To(Succeed())
			Expect(outHead(taskA)).To(HaveValue(Equal("second head")))
			Expect(outHead(taskB)).To(HaveValue(Equal("other")))
		})
		It("keeps a head of 200 code points whole and cuts a longer one to its first 200 and an ellipsis", func() {
			exact := strings.Repeat("é", 200)
			Expect(s.PutOutHead(f.ctx, taskA, exact)).To(Succeed())
			Expect(outHead(taskA)).To(HaveValue(Equal(exact)))
			long := strings.Repeat("é", 150) + strings.Repeat("x", 60)
			Expect(s.PutOutHead(f.ctx, taskB, long)).To(Succeed())
			Expect(outHead(taskB)).To(HaveValue(Equal(strings.Repeat("é", 150) + strings.Repeat("x", 50) + "…")))
		})
	})

	Describe("put_prose", func() {
		It("reads back the role's prose, spec hash and time cached, the latest put winning", func() {
			p, err := s.Prose(f.ctx, "reviewer")
			Expect(err).NotTo(HaveOccurred())
			Expect(p).To(BeNil())
			Expect(s.PutProse(f.ctx, "reviewer", "old prose", "h1")).To(Succeed())
			f.clock.Advance(3 * time.Second)
			Expect(s.PutProse(f.ctx, "reviewer", "new prose", "h2")).To(Succeed())
			p, err = s.Prose(f.ctx, "reviewer")
			Expect(err).NotTo(HaveOccurred())
			Expect(p).NotTo(BeNil())
			Expect(p.Prose).To(Equal("new prose"))
			Expect(p.SpecHash).To(Equal("h2"))
			Expect(p.CachedAt).To(BeTemporally("==", at(3*time.Second)))
		})
	})

	Describe("put_config", func() {
		It("reads back the value of a key, the latest put winning, and nil for a key never put", func() {
			Expect(s.PutConfig(f.ctx, "server", "a")).To(Succeed())
			Expect(s.PutConfig(f.ctx, "server", "b")).To(Succeed())
			v, err := s.Config(f.ctx, "server")
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(HaveValue(Equal("b")))
			v, err = s.Config(f.ctx, "missing")
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(BeNil())
		})
	})

	Describe("upsert_session", func() {
		It("writes a new session, opens its binding and answers true", func() {
			f.clock.Advance(time.Second)
			v := tuple(sessS, 1, 5, c.AgentReady, c.ResourceOpen)
			Expect(upsert(taskA, v)).To(BeTrue())
			r := session(taskA)
			Expect(r).NotTo(BeNil())
			Expect(r.SessionID).To(Equal(sessS))
			Expect(r.TaskID).To(Equal(taskA))
			Expect(r.UpdatedAt).To(BeTemporally("==", v.UpdatedAt))
			got := r.VersionedSession
			got.UpdatedAt = v.UpdatedAt
			Expect(got).To(Equal(v))
			Expect(active()).To(Equal([]c.LiveSession{{SessionID: sessS, TaskID: taskA}}))
			Expect(known(taskA)).To(BeTrue())
		})
		It("files the session under the task when backend_ref names no task_id", func() {
			v := tuple("", 1, 1, c.AgentIdle, c.ResourceOpen)
			v.BackendRef = `{"backend":"exec"}`
			Expect(upsert(taskA, v)).To(BeTrue())
			Expect(session(taskA).SessionID).To(Equal(taskA))
			v.BackendRef = `not json`
			Expect(upsert(taskB, v)).To(BeTrue())
			Expect(session(taskB).SessionID).To(Equal(taskB))
		})
		It("writes only a strictly newer (generation, seq): an equal or older pair changes nothing and answers false", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 5, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			before := state()
			declines(before)(s.UpsertSession(f.ctx, taskA, tuple(sessS, 1, 5, c.AgentWorking, c.ResourceOpen)))
			declines(before)(s.UpsertSession(f.ctx, taskA, tuple(sessS, 1, 4, c.AgentWorking, c.ResourceOpen)))
			declines(before)(s.UpsertSession(f.ctx, taskA, tuple(sessS, 0, 9, c.AgentWorking, c.ResourceOpen)))
			Expect(upsert(taskA, tuple(sessS, 1, 6, c.AgentWorking, c.ResourceOpen))).To(BeTrue())
			Expect(session(taskA).AgentState).To(Equal(c.AgentWorking))
		})
		It("lets a newer generation win whatever its seq", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 5, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			Expect(upsert(taskA, tuple(sessS, 2, 0, c.AgentBooting, c.ResourceOpen))).To(BeTrue())
			r := session(taskA)
			Expect([]uint64{r.Generation, r.Seq}).To(Equal([]uint64{2, 0}))
			Expect(r.AgentState).To(Equal(c.AgentBooting))
		})
		It("moves the session to the task it is written for, closing its other open binding", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 1, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			Expect(upsert(taskB, tuple(sessS, 1, 2, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			Expect(active()).To(Equal([]c.LiveSession{{SessionID: sessS, TaskID: taskB}}))
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskA))).To(BeFalse(), "the binding to the first task was closed")
			Expect(session(taskA).SessionID).To(Equal(sessS), "the first task still reads its session")
		})
		It("opens no binding when the gate refuses the write", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 5, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			declines(state())(s.UpsertSession(f.ctx, taskB, tuple(sessS, 1, 5, c.AgentReady, c.ResourceOpen)))
			Expect(session(taskB)).To(BeNil())
			Expect(known(taskB)).To(BeFalse())
		})
	})

	Describe("bump_session_version", func() {
		It("moves only the pair of the task's session, and its updated_at to now", func() {
			v := tuple(sessS, 1, 5, c.AgentIdle, c.ResourceOpen)
			Expect(upsert(taskA, v)).To(BeTrue())
			f.clock.Advance(time.Minute)
			Expect(acted(s.BumpSessionVersion(f.ctx, taskA, 1, 6))).To(BeTrue())
			r := session(taskA)
			Expect([]uint64{r.Generation, r.Seq}).To(Equal([]uint64{1, 6}))
			Expect(r.UpdatedAt).To(BeTemporally("==", at(time.Minute)))
			got, want := r.VersionedSession, v
			got.Generation, got.Seq, got.UpdatedAt = 0, 0, time.Time{}
			want.Generation, want.Seq, want.UpdatedAt = 0, 0, time.Time{}
			Expect(got).To(Equal(want), "the rest of the tuple stays")
		})
		It("refuses an equal or older pair under the same gate, and takes a newer generation whatever its seq", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 5, c.AgentIdle, c.ResourceOpen))).To(BeTrue())
			before := state()
			declines(before)(s.BumpSessionVersion(f.ctx, taskA, 1, 5))
			declines(before)(s.BumpSessionVersion(f.ctx, taskA, 1, 4))
			declines(before)(s.BumpSessionVersion(f.ctx, taskA, 0, 99))
			Expect(acted(s.BumpSessionVersion(f.ctx, taskA, 2, 0))).To(BeTrue())
			Expect(session(taskA).Generation).To(Equal(uint64(2)))
		})
		It("answers false for a task with no session", func() {
			declines(state())(s.BumpSessionVersion(f.ctx, taskB, 9, 9))
		})
	})

	Describe("get_session", func() {
		It("answers through the task's open binding, else its latest one", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 1, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			Expect(upsert(taskB, tuple(sessT, 1, 1, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			Expect(acted(s.BindTask(f.ctx, sessT, taskA))).To(BeTrue())
			r := session(taskA)
			Expect(r.SessionID).To(Equal(sessT), "the latest open binding of the task")
			Expect(r.TaskID).To(Equal(taskA))
			Expect(acted(s.ReleaseBinding(f.ctx, sessT, taskA))).To(BeTrue())
			Expect(session(taskA).SessionID).To(Equal(sessS), "an open binding wins over a later released one")
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(session(taskA).SessionID).To(Equal(sessT), "with none open, the latest binding")
		})
		It("returns nil for a task with no binding, or bound to a session with no tuple", func() {
			Expect(session(taskA)).To(BeNil())
			Expect(acted(s.BindTask(f.ctx, "no-tuple", taskA))).To(BeTrue())
			Expect(session(taskA)).To(BeNil())
		})
	})

	Describe("bind_task", func() {
		It("opens a binding and closes the session's other open binding", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 1, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			Expect(acted(s.BindTask(f.ctx, sessS, taskB))).To(BeTrue())
			Expect(active()).To(Equal([]c.LiveSession{{SessionID: sessS, TaskID: taskB}}))
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskA))).To(BeFalse(), "the first binding was closed by the second")
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskB))).To(BeTrue())
			Expect(active()).To(Equal([]c.LiveSession{{SessionID: sessS}}), "no binding left open")
		})
		It("answers false for a pair already open, and opens a released pair again", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 1, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			declines(state())(s.BindTask(f.ctx, sessS, taskA))
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(acted(s.BindTask(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(active()).To(Equal([]c.LiveSession{{SessionID: sessS, TaskID: taskA}}))
		})
		It("leaves other sessions' bindings to the same task open", func() {
			Expect(acted(s.BindTask(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(acted(s.BindTask(f.ctx, sessT, taskA))).To(BeTrue())
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(acted(s.ReleaseBinding(f.ctx, sessT, taskA))).To(BeTrue())
		})
	})

	Describe("release_binding", func() {
		It("releases an open binding once; a second call changes nothing", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 1, c.AgentIdle, c.ResourceOpen))).To(BeTrue())
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(active()).To(Equal([]c.LiveSession{{SessionID: sessS}}))
			declines(state())(s.ReleaseBinding(f.ctx, sessS, taskA))
			Expect(session(taskA).SessionID).To(Equal(sessS), "a released binding still answers for its task")
		})
		It("answers false for a pair never bound", func() {
			declines(state())(s.ReleaseBinding(f.ctx, sessS, taskB))
		})
	})

	Describe("active_sessions", func() {
		It("claims booting, ready and idle sessions whose resource is open, and reports closed ready or idle ones suspended", func() {
			for _, row := range []struct{ sid, agent, resource string }{
				{"s1-booting-open", c.AgentBooting, c.ResourceOpen},
				{"s2-ready-open", c.AgentReady, c.ResourceOpen},
				{"s3-idle-open", c.AgentIdle, c.ResourceOpen},
				{"s4-working-open", c.AgentWorking, c.ResourceOpen},
				{"s5-gone-open", c.AgentGone, c.ResourceOpen},
				{"s6-booting-closed", c.AgentBooting, c.ResourceClosed},
				{"s7-ready-closed", c.AgentReady, c.ResourceClosed},
				{"s8-idle-closed", c.AgentIdle, c.ResourceClosed},
				{"s9-gone-closed", c.AgentGone, c.ResourceClosed},
			} {
				Expect(upsert("task-"+row.sid, tuple(row.sid, 1, 1, row.agent, row.resource))).To(BeTrue())
			}
			Expect(acted(s.ReleaseBinding(f.ctx, "s3-idle-open", "task-s3-idle-open"))).To(BeTrue())
			Expect(active()).To(Equal([]c.LiveSession{
				{SessionID: "s1-booting-open", TaskID: "task-s1-booting-open"},
				{SessionID: "s2-ready-open", TaskID: "task-s2-ready-open"},
				{SessionID: "s3-idle-open"},
				{SessionID: "s7-ready-closed", TaskID: "task-s7-ready-closed", Suspended: true},
				{SessionID: "s8-idle-closed", TaskID: "task-s8-idle-closed", Suspended: true},
			}))
		})
		It("never claims a session once it has exited", func() {
			Expect(upsert(taskA, tuple(sessS, 1, 1, c.AgentIdle, c.ResourceClosed))).To(BeTrue())
			Expect(active()).To(HaveLen(1))
			Expect(upsert(taskA, tuple(sessS, 1, 2, c.AgentGone, c.ResourceClosed))).To(BeTrue())
			Expect(active()).To(BeEmpty())
		})
	})

	Describe("open_task", func() {
		It("opens a new task pending, now, with its chain, and answers true", func() {
			f.clock.Advance(time.Second)
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA, ParentTask: "parent", Hop: 2, Attempt: 1}, c.KindRelay))).To(BeTrue())
			t := task(taskA)
			Expect(t).NotTo(BeNil())
			Expect(t.TaskID).To(Equal(taskA))
			Expect(t.Kind).To(Equal(c.KindRelay))
			Expect(t.ParentTask).To(Equal("parent"))
			Expect([]int64{t.Hop, t.Attempt}).To(Equal([]int64{2, 1}))
			Expect(t.State).To(Equal(c.TaskPending))
			Expect(t.OpenedAt).To(BeTemporally("==", at(time.Second)))
			Expect(t.SettledAt).To(BeNil())
		})
		It("re-opening refreshes the chain, keeps state and opening time, never lowers the attempt, and answers false", func() {
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA, Attempt: 3}, c.KindRoot))).To(BeTrue())
			f.clock.Advance(time.Second)
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA, ParentTask: "p2", Hop: 4, Attempt: 1}, c.KindRelay))).To(BeFalse())
			t := task(taskA)
			Expect(t.Kind).To(Equal(c.KindRelay))
			Expect(t.ParentTask).To(Equal("p2"))
			Expect(t.Hop).To(Equal(int64(4)))
			Expect(t.Attempt).To(Equal(int64(3)), "the attempt never runs backwards")
			Expect(t.OpenedAt).To(BeTemporally("==", at(0)))
			Expect(t.State).To(Equal(c.TaskPending))
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA, Attempt: 5}, c.KindRoot))).To(BeFalse())
			Expect(task(taskA).Attempt).To(Equal(int64(5)))
		})
		It("re-opening a settled task keeps its verdict and settle time", func() {
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA}, c.KindRoot))).To(BeTrue())
			f.clock.Advance(time.Second)
			Expect(acted(s.SettleTask(f.ctx, taskA, c.TaskCompleted))).To(BeTrue())
			f.clock.Advance(time.Second)
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA, Attempt: 1}, c.KindRoot))).To(BeFalse())
			t := task(taskA)
			Expect(t.State).To(Equal(c.TaskCompleted))
			Expect(t.SettledAt).To(HaveValue(BeTemporally("==", at(time.Second))))
			Expect(openTasks(0)).To(BeEmpty())
		})
		It("refuses a kind other than root or relay with invalid_argument", func() {
			_, err := s.OpenTask(f.ctx, c.Causality{Task: taskA}, "complete")
			refused(state(), err, c.ErrInvalidArgument)
		})
	})

	Describe("settle_task", func() {
		It("settles an open task with its verdict, now, and answers true", func() {
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA, Attempt: 2}, c.KindRoot))).To(BeTrue())
			f.clock.Advance(time.Second)
			Expect(acted(s.SettleTask(f.ctx, taskA, c.TaskFailed))).To(BeTrue())
			t := task(taskA)
			Expect(t.State).To(Equal(c.TaskFailed))
			Expect(t.SettledAt).To(HaveValue(BeTemporally("==", at(time.Second))))
			Expect(t.Attempt).To(Equal(int64(2)))
			Expect(openTasks(0)).To(BeEmpty())
		})
		It("lets the first terminal verdict win: a later one answers false and changes nothing", func() {
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA}, c.KindRoot))).To(BeTrue())
			Expect(acted(s.SettleTask(f.ctx, taskA, c.TaskCompleted))).To(BeTrue())
			f.clock.Advance(time.Second)
			before := state()
			declines(before)(s.SettleTask(f.ctx, taskA, c.TaskCancelled))
			declines(before)(s.SettleTask(f.ctx, taskA, c.TaskCompleted))
			Expect(task(taskA).State).To(Equal(c.TaskCompleted))
		})
		It("creates the record of a task never opened: no kind, no parent, opened and settled now", func() {
			f.clock.Advance(time.Second)
			Expect(acted(s.SettleTask(f.ctx, taskB, c.TaskCompleted))).To(BeTrue())
			t := task(taskB)
			Expect(t).NotTo(BeNil())
			Expect(t.Kind).To(BeEmpty())
			Expect(t.ParentTask).To(BeEmpty())
			Expect([]int64{t.Hop, t.Attempt}).To(Equal([]int64{0, 0}))
			Expect(t.State).To(Equal(c.TaskCompleted))
			Expect(t.OpenedAt).To(BeTemporally("==", at(time.Second)))
			Expect(t.SettledAt).To(HaveValue(BeTemporally("==", at(time.Second))))
			declines(state())(s.SettleTask(f.ctx, taskB, c.TaskFailed))
		})
		It("refuses a verdict that is not terminal with invalid_argument", func() {
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: taskA}, c.KindRoot))).To(BeTrue())
			for _, v := range []c.TaskState{c.TaskPending, "done", ""} {
				_, err := s.SettleTask(f.ctx, taskA, v)
				refused(state(), err, c.ErrInvalidArgument)
			}
		})
	})

	Describe("task", func() {
		It("returns nil for a task never opened or settled", func() {
			Expect(task(taskA)).To(BeNil())
		})
	})

	Describe("open_tasks", func() {
		It("lists the tasks not settled, oldest opening first, then in the order opened, at most limit", func() {
			f.clock.Advance(time.Second)
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: "zulu"}, c.KindRoot))).To(BeTrue())
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: "alpha"}, c.KindRoot))).To(BeTrue())
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: "settled"}, c.KindRoot))).To(BeTrue())
			f.clock.Advance(-500 * time.Millisecond)
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: "earlier"}, c.KindRoot))).To(BeTrue())
			Expect(acted(s.SettleTask(f.ctx, "settled", c.TaskCompleted))).To(BeTrue())
			Expect(acted(s.SettleTask(f.ctx, "never-opened", c.TaskCompleted))).To(BeTrue())
			Expect(openTasks(0)).To(Equal([]string{"earlier", "zulu", "alpha"}))
			Expect(openTasks(2)).To(Equal([]string{"earlier", "zulu"}))
		})
		It("reads 100 tasks for a limit of 0", func() {
			for i := range 101 {
				Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: fmt.Sprintf("t-%03d", i)}, c.KindRoot))).To(BeTrue())
			}
			got := openTasks(0)
			Expect(got).To(HaveLen(100))
			Expect(got[99]).To(Equal("t-099"))
			Expect(openTasks(101)).To(HaveLen(101))
		})
	})

	Describe("task_is_known", func() {
		It("is true for a task that has or had a binding, or that an intent's envelope names", func() {
			Expect(acted(s.BindTask(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(acted(s.ReleaseBinding(f.ctx, sessS, taskA))).To(BeTrue())
			Expect(known(taskA)).To(BeTrue())
			enqueue(opB, env(taskB))
			Expect(acted(s.AcceptIntent(f.ctx, opB, spec.RawJSON(`{}`)))).To(BeTrue())
			Expect(known(taskB)).To(BeTrue())
		})
		It("is false for a task nothing names, or named other than as causality.task", func() {
			enqueue(opA, spec.RawJSON(`{"task":"task-x","causality":{"parent_task":"task-y","task":7}}`))
			enqueue(opB, spec.RawJSON(`["task-x"]`))
			Expect(acted(s.OpenTask(f.ctx, c.Causality{Task: "task-z"}, c.KindRoot))).To(BeTrue())
			for _, t := range []string{"task-x", "task-y", "7", "task-z"} {
				Expect(known(t)).To(BeFalse(), "task %s", t)
			}
		})
	})

	Describe("task_attempt", func() {
		It("is the highest attempt among the intents naming the task, and 0 when none does", func() {
			attempt := func(t string) int64 {
				GinkgoHelper()
				n, err := s.TaskAttempt(f.ctx, t)
				Expect(err).NotTo(HaveOccurred())
				return n
			}
			Expect(attempt(taskA)).To(BeZero())
			enqueue(opA, env(taskA))
			enqueue(opB, env(taskA))
			enqueue(opC, env(taskB))
			for range 3 {
				Expect(acted(s.BumpIntent(f.ctx, opC, at(0), "x"))).To(BeTrue())
			}
			Expect(acted(s.BumpIntent(f.ctx, opB, at(0), "x"))).To(BeTrue())
			Expect(acted(s.BumpIntent(f.ctx, opB, at(0), "x"))).To(BeTrue())
			Expect(attempt(taskA)).To(Equal(int64(2)))
			Expect(attempt(taskB)).To(Equal(int64(3)))
			Expect(attempt("task-z")).To(BeZero())
		})
	})

	Describe("insert_fault", func() {
		It("returns increasing ids, and list_faults returns the task's faults in insertion order", func() {
			fault := func(t, reason string) c.Fault {
				return c.Fault{TaskID: t, SessionID: sessS, Generation: 1, Seq: 2, DesiredJSON: `{}`, ObservedJSON: `{"x":1}`,
					Intent: "complete", Attempt: 3, BackendRef: `{"backend":"acp"}`, Kind: "mismatch", Reason: reason,
					State: "open", CreatedAt: at(1234 * time.Millisecond)}
			}
			var last int64
			var want []c.Fault
			for i, fl := range []c.Fault{fault(taskA, "first"), fault(taskB, "other task"), fault(taskA, "second")} {
				fl.ID = 999
				id, err := s.InsertFault(f.ctx, fl)
				Expect(err).NotTo(HaveOccurred())
				Expect(id).To(BeNumerically(">", last), "fault %d", i)
				last = id
				fl.ID = id
				if fl.TaskID == taskA {
					want = append(want, fl)
				}
			}
			got, err := s.ListFaults(f.ctx, taskA)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(2))
			for i := range got {
				Expect(got[i].CreatedAt).To(BeTemporally("==", want[i].CreatedAt))
				got[i].CreatedAt = want[i].CreatedAt
			}
			Expect(got).To(Equal(want))
			none, err := s.ListFaults(f.ctx, "task-z")
			Expect(err).NotTo(HaveOccurred())
			Expect(none).To(BeEmpty())
		})
	})

	Describe("two handles on one database", func() {
		It("keep the outbox, the session gate, the bindings and the first verdict across handles, as two processes would", func() {
			need(h.Capabilities.SharedFiles, "shared-files", "two handles on one file")
			t := open(f.path)
			enqueue(opA, env(taskA))
			Expect(acted(t.EnqueueIntent(f.ctx, opA, env(taskB)))).To(BeFalse())
			Expect(acted(t.AcceptIntent(f.ctx, opA, spec.RawJSON(`{"by":"t"}`)))).To(BeTrue())
			Expect(acted(s.BumpIntent(f.ctx, opA, at(0), "late"))).To(BeFalse())
			Expect(intent(opA).State).To(Equal(c.IntentAccepted))

			Expect(upsert(taskA, tuple(sessS, 1, 5, c.AgentReady, c.ResourceOpen))).To(BeTrue())
			Expect(acted(t.UpsertSession(f.ctx, taskA, tuple(sessS, 1, 5, c.AgentWorking, c.ResourceOpen)))).To(BeFalse())
			Expect(acted(t.UpsertSession(f.ctx, taskB, tuple(sessS, 1, 6, c.AgentReady, c.ResourceOpen)))).To(BeTrue())
			Expect(active()).To(Equal([]c.LiveSession{{SessionID: sessS, TaskID: taskB}}))

			Expect(acted(t.SettleTask(f.ctx, taskA, c.TaskCompleted))).To(BeTrue())
			Expect(acted(s.SettleTask(f.ctx, taskA, c.TaskFailed))).To(BeFalse())
			Expect(task(taskA).State).To(Equal(c.TaskCompleted))
		})
	})

	Describe("open", func() {
		// foreign writes a SQLite file as the kit lays it out in
		// spec/client: a schema_meta row (when marker is not nil) and
		// another table with a row.
		foreign := func(path string, marker *string, version int64) []byte {
			GinkgoHelper()
			db, err := sql.Open("sqlite", "file:"+path)
			Expect(err).NotTo(HaveOccurred())
			defer db.Close()
			_, err = db.ExecContext(f.ctx, `CREATE TABLE intents(op_id TEXT PRIMARY KEY, env_json TEXT); INSERT INTO intents VALUES ('old', '{}')`)
			Expect(err).NotTo(HaveOccurred())
			if marker != nil {
				_, err = db.ExecContext(f.ctx, c.SchemaMetaDDL)
				Expect(err).NotTo(HaveOccurred())
				_, err = db.ExecContext(f.ctx, `INSERT INTO schema_meta(marker, version) VALUES (?, ?)`, *marker, version)
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(db.Close()).To(Succeed())
			b, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			return b
		}
		refusedAtOpen := func(path string, before []byte, names ...string) {
			GinkgoHelper()
			st, err := h.Client(f.ctx, Options{Path: path, Clock: f.clock})
			if err == nil {
				st.Close()
			}
			Expect(err).To(MatchError(c.ErrSchemaMismatch))
			for _, n := range names {
				Expect(err.Error()).To(ContainSubstring(n), "the error names both schemas")
			}
			after, rerr := os.ReadFile(path)
			Expect(rerr).NotTo(HaveOccurred())
			Expect(sha256.Sum256(after)).To(Equal(sha256.Sum256(before)), "the refused file is byte for byte as it was")
		}
		str := func(s string) *string { return &s }
		mine := fmt.Sprintf("%s version %d", c.SchemaMarker, c.SchemaVersion)

		It("refuses a file of another marker with schema_mismatch, naming both, and changes nothing in it", func() {
			need(h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			path := filepath.Join(GinkgoT().TempDir(), "server.db")
			before := foreign(path, str("onlyne-server"), c.SchemaVersion)
			refusedAtOpen(path, before, fmt.Sprintf("onlyne-server version %d", c.SchemaVersion), mine)
		})
		It("refuses a file of another version of its marker with schema_mismatch, naming both, and changes nothing in it", func() {
			need(h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			path := filepath.Join(GinkgoT().TempDir(), "old.db")
			old := int64(c.SchemaVersion - 1)
			before := foreign(path, str(c.SchemaMarker), old)
			refusedAtOpen(path, before, fmt.Sprintf("%s version %d", c.SchemaMarker, old), mine)
			path = filepath.Join(GinkgoT().TempDir(), "newer.db")
			before = foreign(path, str(c.SchemaMarker), c.SchemaVersion+1)
			refusedAtOpen(path, before, fmt.Sprintf("%s version %d", c.SchemaMarker, c.SchemaVersion+1), mine)
		})
		It("refuses a SQLite file that holds tables but no marker", func() {
			need(h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			path := filepath.Join(GinkgoT().TempDir(), "unmarked.db")
			before := foreign(path, nil, 0)
			refusedAtOpen(path, before, "version 0", mine)
		})
		It("writes its own marker and version into a new file, and opens that file again", func() {
			need(h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			Expect(s.Close()).To(Succeed())
			db, err := sql.Open("sqlite", "file:"+f.path)
			Expect(err).NotTo(HaveOccurred())
			var marker string
			var version int64
			Expect(db.QueryRowContext(f.ctx, `SELECT marker, version FROM schema_meta`).Scan(&marker, &version)).To(Succeed())
			Expect(db.Close()).To(Succeed())
			Expect([]any{marker, version}).To(Equal([]any{c.SchemaMarker, int64(c.SchemaVersion)}))
			s = open(f.path)
			enqueue(opA, env(taskA))
		})
		It("finds everything it acknowledged after it is closed and opened again", func() {
			need(h.Capabilities.Files, "files", "survival across reopen")
			enqueue(opA, env(taskA))
			Expect(acted(s.BumpIntent(f.ctx, opA, at(2500*time.Millisecond), "x"))).To(BeTrue())
			Expect(upsert(taskA, tuple(sessS, 1, 5, c.AgentReady, c.ResourceClosed))).To(BeTrue())
			Expect(acted(s.SettleTask(f.ctx, taskB, c.TaskCompleted))).To(BeTrue())
			_, err := s.AppendEvent(f.ctx, "one", spec.RawJSON(`{}`))
			Expect(err).NotTo(HaveOccurred())
			before := state()
			Expect(s.Close()).To(Succeed())
			s = open(f.path)
			Expect(state()).To(Equal(before))
			seq, err := s.AppendEvent(f.ctx, "two", spec.RawJSON(`{}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(seq).To(BeNumerically(">", before.EventHead))
		})
		It("waits for a database another connection holds write-locked, no longer than the caller's deadline", func() {
			waitsForALockedDatabase(h, f, h.Client, func(st c.Store) {
				Expect(acted(st.EnqueueIntent(f.ctx, opA, env(taskA)))).To(BeTrue())
			})
		})
	})
}

// clientCloseOnce lets a spec close its store early (to reopen the file)
// without the cleanup closing it a second time.
type clientCloseOnce struct {
	c.Store
	closed *bool
}

func (s *clientCloseOnce) Close() error {
	if *s.closed {
		return nil
	}
	*s.closed = true
	return s.Store.Close()
}
