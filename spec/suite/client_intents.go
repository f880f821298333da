package suite

import (
	"fmt"
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// The outbox of intents: enqueued, due, retried, settled and deleted.
func clientIntentSpecs(fx *clientFixture) {
	Describe("enqueue_intent", func() {
		It("adds a pending intent with attempt 0, due now, and answers true", Rules("client.enqueue_intent.new", cli.RuleTimePrecision), func() {
			fx.clock.Advance(1500 * time.Millisecond)
			fx.enqueue(opA, fx.env(taskA))
			in := fx.intent(opA)
			Expect(in).NotTo(BeNil())
			Expect(in.OpID).To(Equal(opA))
			Expect(in.Envelope).To(MatchJSON(fx.env(taskA)))
			Expect(in.Attempt).To(BeZero())
			Expect(in.State).To(Equal(cli.IntentPending))
			Expect(in.Receipt).To(BeNil())
			Expect(in.LastError).To(BeEmpty())
			for _, t := range []time.Time{in.NextAttemptAt, in.CreatedAt, in.UpdatedAt} {
				Expect(t).To(keptAs(fx.at(1500*time.Millisecond)), because("client.enqueue_intent.new", "due, created and updated now"))
			}
			Expect(fx.pending()).To(Equal(int64(1)))
		})
		It("leaves an existing op_id exactly as it was (attempt, state, times) and answers false", Rules("client.enqueue_intent.existing_untouched"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(30*time.Second), "refused"))).To(BeTrue())
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opB, spec.RawJSON(`{"ok":true}`)))).To(BeTrue())
			fx.clock.Advance(time.Second)
			before := fx.state()
			fx.declines(before)(fx.s.EnqueueIntent(fx.ctx, opA, fx.env("another task")))
			fx.declines(before)(fx.s.EnqueueIntent(fx.ctx, opB, fx.env(taskB)))
			Expect(fx.intent(opA).Attempt).To(Equal(int64(1)), "the retry budget is not reset")
		})
		It("refuses an envelope that is not JSON with invalid_argument, or keeps it verbatim", Rules(cli.RulePayloadJSON), func() {
			fx.enqueue(opB, fx.env(taskB))
			before := fx.state()
			added, err := fx.s.EnqueueIntent(fx.ctx, opA, spec.RawJSON(`{"causality":`))
			if err != nil {
				fx.refused(before, err, cli.ErrInvalidArgument)
				return
			}
			Expect(added).To(BeTrue(), because(cli.RulePayloadJSON, "a new op_id kept verbatim is added"))
			Expect(string(fx.intent(opA).Envelope)).To(Equal(`{"causality":`), because(cli.RulePayloadJSON, "kept verbatim"))
		})
	})

	Describe("intent", func() {
		It("returns nil for an op_id never enqueued", Rules("client.intent.read"), func() {
			Expect(fx.intent(opA)).To(BeNil())
		})
	})

	Describe("due_intents", func() {
		It("returns a live intent once its next attempt time has come: not just before, at it and after", Rules("client.due_intents.due"), Bound("client.due_intents.due#deadline", spec.Below, spec.At, spec.Above), func() {
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.due(fx.at(-time.Millisecond), 0)).To(BeEmpty())
			Expect(fx.due(fx.at(0), 0)).To(Equal([]string{opA}))
			Expect(fx.due(fx.at(time.Millisecond), 0)).To(Equal([]string{opA}))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(10*time.Second), "later"))).To(BeTrue())
			Expect(fx.due(fx.at(10*time.Second-time.Millisecond), 0)).To(BeEmpty())
			Expect(fx.due(fx.at(10*time.Second), 0)).To(Equal([]string{opA}))
			in, err := fx.s.DueIntents(fx.ctx, fx.at(10*time.Second), 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(in[0].State).To(Equal(cli.IntentRetrying))
		})
		It("returns no accepted or exhausted intent", Rules("client.due_intents.due"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			fx.enqueue(opC, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`1`)))).To(BeTrue())
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opB, "gave up"))).To(BeTrue())
			Expect(fx.due(fx.at(time.Hour), 0)).To(Equal([]string{opC}))
		})
		It("orders by next attempt time, then creation time, then enqueue order", Rules("client.due_intents.order"), func() {
			fx.enqueue("first", fx.env(taskA))
			fx.enqueue("deferred", fx.env(taskA))
			fx.clock.Advance(time.Second)
			fx.enqueue("zulu", fx.env(taskA))
			fx.enqueue("alpha", fx.env(taskA))
			Expect(fx.acted(fx.s.DeferIntent(fx.ctx, "deferred", fx.at(time.Second), "offline"))).To(BeTrue())
			Expect(fx.due(fx.at(time.Second), 0)).To(Equal([]string{"first", "deferred", "zulu", "alpha"}))
		})
		It("orders times by their sub-second part when the store keeps one, and within a whole second by creation and enqueue order when it does not", Rules("client.due_intents.order", cli.RuleTimePrecision), func() {
			// Times at the edges of one second: a whole second beside
			// fractional ones, a sub-millisecond part a store of
			// milliseconds drops, and times that sort one way as instants
			// and another as text (".1" before ".15", "…:01Z" after
			// "…:01.5Z"), so that a store comparing text cannot pass.
			deadlines := []struct {
				op string
				at time.Duration
			}{
				{opA, 1900 * time.Millisecond},
				{opB, 1200 * time.Millisecond},
				{opC, 1001 * time.Millisecond},
				{"op-whole", time.Second},
				{"op-fifteen", 1150 * time.Millisecond},
				{"op-tenth", 1100 * time.Millisecond},
				{"op-submilli", time.Second + 500*time.Microsecond},
			}
			var enqueued []string
			for i, d := range deadlines {
				fx.enqueue(d.op, fx.env(taskA))
				enqueued = append(enqueued, d.op)
				retry := fx.s.DeferIntent
				if i%2 == 1 {
					retry = fx.s.BumpIntent
				}
				Expect(fx.acted(retry(fx.ctx, d.op, fx.at(d.at), "x"))).To(BeTrue())
			}
			next := fx.intent(opA).NextAttemptAt
			Expect(next).To(keptAs(fx.at(1900 * time.Millisecond)))
			Expect(fx.intent("op-submilli").NextAttemptAt).To(keptAs(fx.at(time.Second + 500*time.Microsecond)))
			if subSecond(next) {
				// The whole second and the sub-millisecond part tie at the
				// millisecond, and the enqueue order puts the whole second
				// first; finer, it is first anyway.
				Expect(fx.due(fx.at(2*time.Second), 0)).To(Equal([]string{"op-whole", "op-submilli", opC, "op-tenth", "op-fifteen", opB, opA}),
					because("client.due_intents.order", "the store keeps the sub-second part of a deadline, so it orders by it, as instants"))
				Expect(fx.due(fx.at(1500*time.Millisecond), 0)).To(Equal([]string{"op-whole", "op-submilli", opC, "op-tenth", "op-fifteen", opB}), because("client.due_intents.due"))
				Expect(fx.due(fx.at(time.Second+500*time.Microsecond), 0)).To(Equal([]string{"op-whole", "op-submilli"}),
					because("client.due_intents.due", "at a now half a millisecond into second 1, the deadlines of its first millisecond are due and no later one"))
				return
			}
			Expect(fx.due(fx.at(2*time.Second), 0)).To(Equal(enqueued),
				because(cli.RuleTimePrecision, "the store keeps whole seconds: the deadlines tie, and the enqueue order decides"))
			Expect(fx.due(fx.at(1500*time.Millisecond), 0)).To(Equal(enqueued),
				because(cli.RuleTimePrecision, "at whole seconds every deadline of second 1 is due within it"))
			Expect(fx.due(fx.at(time.Second+500*time.Microsecond), 0)).To(Equal(enqueued),
				because(cli.RuleTimePrecision, "at whole seconds every deadline of second 1 is due within it"))
		})
		It("takes 100 rows for a limit of 0 (of 99, 100 and 101 due), and at most 500 for any limit (499, 500 and 501 asked of 501 due)", Rules("client.due_intents.limit"),
			Bound("client.due_intents.limit#default", spec.Below, spec.At, spec.Above), Bound("client.due_intents.limit#cap", spec.Below, spec.At, spec.Above), func() {
				const deflt, limitCap = "client.due_intents.limit#default", "client.due_intents.limit#cap"
				read := func(limit uint32, want int, bound, what string) {
					GinkgoHelper()
					firstRows(fx.due(fx.at(0), limit), want, bound, fmt.Sprintf("%s, limit %d", what, limit))
				}
				fx.fillIntents(0, 99)
				read(0, 99, deflt, "99 due, one below the default")
				fx.fillIntents(99, 100)
				read(0, 100, deflt, "100 due, at the default")
				fx.fillIntents(100, 101)
				read(0, 100, deflt, "101 due, one above the default")
				read(3, 3, limitCap, "101 due")
				fx.fillIntents(101, 501)
				read(499, 499, limitCap, "501 due, one below the cap")
				read(500, 500, limitCap, "501 due, at the cap")
				read(501, 500, limitCap, "501 due, one above the cap")
				read(math.MaxUint32, 500, limitCap, "501 due, the largest limit (which a backend narrowing it to 32 signed bits reads as -1, no limit to SQLite)")
			})
	})

	Describe("bump_intent", func() {
		It("adds one attempt, moves the intent to retrying with the new time and error, and answers true", Rules("client.bump_intent.refusal"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.clock.Advance(2 * time.Second)
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(7*time.Second), "server said no"))).To(BeTrue())
			in := fx.intent(opA)
			Expect(in.Attempt).To(Equal(int64(1)))
			Expect(in.State).To(Equal(cli.IntentRetrying))
			Expect(in.NextAttemptAt).To(keptAs(fx.at(7 * time.Second)))
			Expect(in.LastError).To(Equal("server said no"))
			Expect(in.UpdatedAt).To(keptAs(fx.at(2*time.Second)), because("client.bump_intent.refusal", "updated now"))
			Expect(in.CreatedAt).To(keptAs(fx.at(0)))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(9*time.Second), "again"))).To(BeTrue())
			Expect(fx.intent(opA).Attempt).To(Equal(int64(2)))
		})
		It("acts on no settled intent: an accepted or exhausted intent never comes back to life", Rules("client.bump_intent.live_only"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`{"receipt":1}`)))).To(BeTrue())
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opB, "ceiling"))).To(BeTrue())
			fx.clock.Advance(time.Second)
			before := fx.state()
			fx.declines(before)(fx.s.BumpIntent(fx.ctx, opA, fx.at(0), "late refusal"))
			fx.declines(before)(fx.s.BumpIntent(fx.ctx, opB, fx.at(0), "late refusal"))
			Expect(fx.pending()).To(BeZero())
		})
		It("answers false for an op_id never enqueued", Rules("client.bump_intent.live_only"), func() {
			fx.declines(fx.state())(fx.s.BumpIntent(fx.ctx, opC, fx.at(0), "x"))
		})
		// No seed bounds the count, but a store may keep it in fewer bits
		// than the seed's INTEGER (issue 26 item 6): 256 refusals read back
		// 256, not 0, wherever the attempt is read.
		// refusals bumps a fresh intent n times and reads the count back
		// wherever the attempt is read.
		refusals := func(n int) {
			fx.enqueue(opA, fx.env(taskA))
			for range n {
				Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(0), "refused"))).To(BeTrue())
			}
			Expect(fx.intent(opA).Attempt).To(Equal(int64(n)), "intent")
			due, err := fx.s.DueIntents(fx.ctx, fx.at(0), 1)
			Expect(err).NotTo(HaveOccurred())
			Expect(due).To(HaveLen(1))
			Expect(due[0].Attempt).To(Equal(int64(n)), "due_intents")
		}
		It("counts refusals past what 8 bits keep: the 256th reads attempt 256", Rules("client.bump_intent.refusal", "client.intent.read"), func() {
			refusals(spec.Counter8 + 1)
		})
		// The same past what 16 bits keep: 65,536 refusals, one call and
		// one transaction each (bump_intent is the count's only writer, and
		// the seed has no bulk form), so a long spec.
		It("counts refusals past what 16 bits keep: the 65,536th reads attempt 65,536", Long, Rules("client.bump_intent.refusal", "client.intent.read"), func() {
			long("65,536 calls of bump_intent, a transaction each")
			refusals(spec.Counter16 + 1)
		})
	})

	Describe("defer_intent", func() {
		It("moves the next attempt time and error without consuming an attempt", Rules("client.defer_intent.keeps_attempt"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.DeferIntent(fx.ctx, opA, fx.at(5*time.Second), "link down"))).To(BeTrue())
			in := fx.intent(opA)
			Expect(in.Attempt).To(BeZero())
			Expect(in.State).To(Equal(cli.IntentRetrying))
			Expect(in.NextAttemptAt).To(keptAs(fx.at(5 * time.Second)))
			Expect(in.LastError).To(Equal("link down"))
			Expect(in.UpdatedAt).To(keptAs(fx.at(time.Second)))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(6*time.Second), "refused"))).To(BeTrue())
			Expect(fx.acted(fx.s.DeferIntent(fx.ctx, opA, fx.at(8*time.Second), "link down again"))).To(BeTrue())
			Expect(fx.intent(opA).Attempt).To(Equal(int64(1)), "only the refusal counted")
		})
		It("acts on no settled intent: an accepted or exhausted intent never comes back to life", Rules("client.defer_intent.live_only"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`{"receipt":1}`)))).To(BeTrue())
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opB, "ceiling"))).To(BeTrue())
			before := fx.state()
			fx.declines(before)(fx.s.DeferIntent(fx.ctx, opA, fx.at(0), "link down"))
			fx.declines(before)(fx.s.DeferIntent(fx.ctx, opB, fx.at(0), "link down"))
			fx.declines(before)(fx.s.DeferIntent(fx.ctx, opC, fx.at(0), "never enqueued"))
		})
	})

	Describe("accept_intent", func() {
		It("settles a pending or retrying intent as accepted with its receipt, and answers true", Rules("client.accept_intent.settles"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opB, fx.at(0), "refused"))).To(BeTrue())
			fx.clock.Advance(time.Second)
			for _, op := range []string{opA, opB} {
				Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, op, spec.RawJSON(`{"seq": 42}`)))).To(BeTrue())
				in := fx.intent(op)
				Expect(in.State).To(Equal(cli.IntentAccepted))
				Expect(in.Receipt).To(MatchJSON(`{"seq":42}`))
				Expect(in.UpdatedAt).To(keptAs(fx.at(time.Second)))
			}
			Expect(fx.intent(opB).Attempt).To(Equal(int64(1)))
			Expect(fx.pending()).To(BeZero())
			Expect(fx.due(fx.at(time.Hour), 0)).To(BeEmpty())
		})
		It("acts only on a live intent: a second accept or an accept after exhaust answers false", Rules("client.accept_intent.live_only"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`"first"`)))).To(BeTrue())
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opB, "ceiling"))).To(BeTrue())
			before := fx.state()
			fx.declines(before)(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`"second"`)))
			fx.declines(before)(fx.s.AcceptIntent(fx.ctx, opB, spec.RawJSON(`"late"`)))
			fx.declines(before)(fx.s.AcceptIntent(fx.ctx, opC, spec.RawJSON(`"none"`)))
		})
		It("refuses a receipt that is not JSON with invalid_argument, or keeps it verbatim", Rules(cli.RulePayloadJSON), func() {
			fx.enqueue(opA, fx.env(taskA))
			before := fx.state()
			acted, err := fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`not json`))
			if err != nil {
				fx.refused(before, err, cli.ErrInvalidArgument)
				return
			}
			Expect(acted).To(BeTrue(), because(cli.RulePayloadJSON, "a live intent accepted with its receipt kept verbatim"))
			in := fx.intent(opA)
			Expect(in.State).To(Equal(cli.IntentAccepted))
			Expect(string(in.Receipt)).To(Equal(`not json`), because(cli.RulePayloadJSON, "kept verbatim"))
		})
		It("answers invalid_argument or false to a receipt that is not JSON for an intent already settled, and changes nothing", Rules(cli.RuleRefusalOrder), func() {
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`{}`)))).To(BeTrue())
			before := fx.state()
			acted, err := fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`not json`))
			if err != nil {
				fx.refused(before, err, cli.ErrInvalidArgument)
				return
			}
			Expect(acted).To(BeFalse(), because(cli.RuleRefusalOrder, "the refusal or the decline"))
			Expect(fx.state()).To(Equal(before), because(cli.RuleRefusalOrder, "either way nothing changes"))
		})
	})

	Describe("exhaust_intent", func() {
		It("settles a live intent as exhausted, keeping its attempt and recording the error", Rules("client.exhaust_intent.settles"), func() {
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(0), "one"))).To(BeTrue())
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(0), "two"))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opA, "attempt ceiling reached"))).To(BeTrue())
			in := fx.intent(opA)
			Expect(in.State).To(Equal(cli.IntentExhausted))
			Expect(in.Attempt).To(Equal(int64(2)))
			Expect(in.LastError).To(Equal("attempt ceiling reached"))
			Expect(in.UpdatedAt).To(keptAs(fx.at(time.Second)))
			Expect(fx.pending()).To(BeZero())
		})
		It("acts on no settled intent", Rules("client.exhaust_intent.live_only"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`{}`)))).To(BeTrue())
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opB, "first"))).To(BeTrue())
			before := fx.state()
			fx.declines(before)(fx.s.ExhaustIntent(fx.ctx, opA, "late"))
			fx.declines(before)(fx.s.ExhaustIntent(fx.ctx, opB, "second"))
			fx.declines(before)(fx.s.ExhaustIntent(fx.ctx, opC, "never enqueued"))
		})
	})

	Describe("delete_intent", func() {
		It("removes an intent in any state and answers true; a second delete answers false", Rules("client.delete_intent.removes"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opB, "x"))).To(BeTrue())
			for _, op := range []string{opA, opB} {
				Expect(fx.acted(fx.s.DeleteIntent(fx.ctx, op))).To(BeTrue())
				Expect(fx.intent(op)).To(BeNil())
			}
			Expect(fx.pending()).To(BeZero())
			fx.declines(fx.state())(fx.s.DeleteIntent(fx.ctx, opA))
		})
		It("lets a deleted op_id be enqueued again, as new", Rules("client.delete_intent.removes", "client.enqueue_intent.new"), func() {
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(time.Hour), "x"))).To(BeTrue())
			Expect(fx.acted(fx.s.DeleteIntent(fx.ctx, opA))).To(BeTrue())
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.intent(opA).Attempt).To(BeZero())
		})
	})

	Describe("pending_intent_count", func() {
		It("counts pending and retrying intents, due or not, and no settled one", Rules("client.pending_intent_count.live"), func() {
			Expect(fx.pending()).To(BeZero())
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskB))
			fx.enqueue(opC, fx.env(taskB))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opB, fx.at(time.Hour), "not due for an hour"))).To(BeTrue())
			Expect(fx.pending()).To(Equal(int64(3)))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opA, spec.RawJSON(`{}`)))).To(BeTrue())
			Expect(fx.acted(fx.s.ExhaustIntent(fx.ctx, opC, "x"))).To(BeTrue())
			Expect(fx.pending()).To(Equal(int64(1)))
		})
	})

	Describe("flush_order", func() {
		It("returns what is due at the store's own clock, in due order", Rules("client.flush_order.now_and_batch"), func() {
			fx.enqueue(opA, fx.env(taskA))
			fx.clock.Advance(time.Second)
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.DeferIntent(fx.ctx, opA, fx.at(5*time.Second), "offline"))).To(BeTrue())
			Expect(fx.flush()).To(Equal([]string{opB}))
			fx.clock.Advance(4*time.Second - time.Millisecond)
			Expect(fx.flush()).To(Equal([]string{opB}))
			fx.clock.Advance(time.Millisecond)
			Expect(fx.flush()).To(Equal([]string{opB, opA}))
		})
		It("takes every due row of 99 or 100, and the oldest 100 of 101", Rules("client.flush_order.now_and_batch"), Bound("client.flush_order.now_and_batch#batch", spec.Below, spec.At, spec.Above), func() {
			filled := 0
			for _, n := range []int{99, 100, 101} {
				fx.fillIntents(filled, n)
				filled = n
				firstRows(fx.flush(), min(n, cli.FlushBatchSize), "client.flush_order.now_and_batch#batch", fmt.Sprintf("%d due at the store's now", n))
			}
		})
	})
}
