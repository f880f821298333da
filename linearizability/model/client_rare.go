package model

// The rare events a client run reaches, counted so a report shows what a run
// explored.

import (
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// The rare client events the simulator must reach: each one a rule of the
// contract taken on its interesting branch.
const (
	EventVerdictContested     = "first verdict contested: a second settle refused"
	EventSettleBeforeOpen     = "settle racing open: a task settled before it was opened"
	EventOpenAfterSettle      = "a task opened after its verdict kept the verdict"
	EventSettledIntentTouched = "settled intent bumped or deferred without effect"
	EventRedeliveryKeptBudget = "redelivered intent kept its retry budget"
	EventDueSameMillisecond   = "intents due at the same millisecond"
	EventDueScanCut           = "a due scan stopped at its limit"
	EventDeferKeptAttempt     = "a defer kept the attempt"
	EventSessionGateEqual     = "session write refused by the gate: equal (generation, seq)"
	EventSessionGateOlder     = "session write refused by the gate: older (generation, seq)"
	EventNewerGenerationLower = "a newer generation won with a lower seq"
	EventRebindClosedOther    = "a rebind closed another binding"
	EventReleasedTwice        = "a binding released twice"
	EventSuspendedClaimed     = "a suspended session claimed"
	EventReopenKeptAttempt    = "a re-opened task kept its higher attempt"
)

// ClientEvents are the rare events, in a fixed order.
var ClientEvents = []string{EventVerdictContested, EventSettleBeforeOpen, EventOpenAfterSettle,
	EventSettledIntentTouched, EventRedeliveryKeptBudget, EventDueSameMillisecond, EventDueScanCut,
	EventDeferKeptAttempt, EventSessionGateEqual, EventSessionGateOlder, EventNewerGenerationLower,
	EventRebindClosedOther, EventReleasedTwice, EventSuspendedClaimed, EventReopenKeptAttempt}

// Events names the rare client events op reaches from s.
func (m Client) Events(st State, op spec.Op, nowMS int64, out Outcome) []string {
	s := st.(ClientState)
	if out.Kind != "" {
		return nil
	}
	var ev []string
	add := func(cond bool, e string) {
		if cond {
			ev = append(ev, e)
		}
	}
	gate := func(gen, seq uint64, cur csession) {
		add(gen == cur.Generation && seq == cur.Seq, EventSessionGateEqual)
		add(!newer(gen, seq, cur.Generation, cur.Seq) && (gen != cur.Generation || seq != cur.Seq), EventSessionGateOlder)
		add(gen > cur.Generation && seq < cur.Seq, EventNewerGenerationLower)
	}
	dueTies := func(due []cli.Intent, limit int, all int) {
		for i := 1; i < len(due); i++ {
			if due[i].NextAttemptAt.Equal(due[i-1].NextAttemptAt) {
				add(true, EventDueSameMillisecond)
				break
			}
		}
		add(len(due) == limit && all > limit, EventDueScanCut)
	}
	d := firstPrec(s.prec)
	switch o := op.(type) {
	case cli.SettleTask:
		t, ok := s.tasks.get(o.TaskID)
		add(ok && t.IsSettled, EventVerdictContested)
		add(!ok, EventSettleBeforeOpen)
	case cli.OpenTask:
		t, ok := s.tasks.get(o.Causality.Task)
		add(ok && t.IsSettled, EventOpenAfterSettle)
		add(ok && t.Attempt > int64(o.Causality.Attempt), EventReopenKeptAttempt)
	case cli.BumpIntent:
		in, ok := s.intents.get(o.OpID)
		add(ok && !in.live(), EventSettledIntentTouched)
	case cli.DeferIntent:
		in, ok := s.intents.get(o.OpID)
		add(ok && !in.live(), EventSettledIntentTouched)
		add(ok && in.live() && in.Attempt > 0, EventDeferKeptAttempt)
	case cli.EnqueueIntent:
		in, ok := s.intents.get(o.OpID)
		add(ok && in.Attempt > 0, EventRedeliveryKeptBudget)
	case cli.DueIntents:
		due, _ := out.Result.([]cli.Intent)
		dueTies(due, cli.EffectiveLimit(o.Limit), len(s.due(nsOf(o.Now), cli.MaxLimit+1, d)))
	case cli.FlushOrder:
		due, _ := out.Result.([]cli.Intent)
		dueTies(due, cli.FlushBatchSize, len(s.due(msNS(nowMS), cli.FlushBatchSize+1, d)))
	case cli.UpsertSession:
		id := cli.SessionIDFor(o.TaskID, o.Version.BackendRef)
		if cur, ok := s.sessions[id]; ok {
			gate(o.Version.Generation, o.Version.Seq, cur)
		}
		if b := s.bindings[bindKey{id, o.TaskID}]; out.Result == true && !b.Open {
			add(s.otherOpenBinding(id, o.TaskID), EventRebindClosedOther)
		}
	case cli.BumpSessionVersion:
		if cur, ok := s.sessions[s.referenceSession(o.TaskID)]; ok {
			gate(o.Generation, o.Seq, cur)
		}
	case cli.BindTask:
		add(out.Result == true && s.otherOpenBinding(o.SessionID, o.TaskID), EventRebindClosedOther)
	case cli.ReleaseBinding:
		b, ok := s.bindings[bindKey{o.SessionID, o.TaskID}]
		add(ok && !b.Open, EventReleasedTwice)
	case cli.ActiveSessions:
		live, _ := out.Result.([]cli.LiveSession)
		for _, l := range live {
			if l.Suspended {
				add(true, EventSuspendedClaimed)
				break
			}
		}
	}
	return append(ev, clientSizes(s, op, nowMS, out)...)
}
