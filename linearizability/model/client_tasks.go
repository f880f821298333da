package model

// Tasks: opening, settling, and what is known of one.

import (
	"cmp"
	"slices"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

type ctask struct {
	Kind, Parent string
	Hop, Attempt int64
	State        cli.TaskState
	Opened       int64
	Settled      int64
	IsSettled    bool
	// Order is the insertion order (rowid) among open records, which
	// open_tasks reads; a settled record keeps none (0).
	Order int64
}

func (t ctask) value(id string, d int64) cli.Task {
	out := cli.Task{TaskID: id, Kind: t.Kind, ParentTask: t.Parent, Hop: t.Hop, Attempt: t.Attempt, State: t.State, OpenedAt: at(t.Opened, d)}
	if t.IsSettled {
		st := at(t.Settled, d)
		out.SettledAt = &st
	}
	return out
}

// knownByBinding and knownByIntent are the two statements task_is_known
// runs (client.task_is_known.two_statements): whether the task has or had a
// binding, and whether an intent names it. Split cuts a false answer into
// them.
type knownByBinding struct{ TaskID string }
type knownByIntent struct{ TaskID string }

func (knownByBinding) Name() string { return "task_is_known/bindings" }
func (knownByBinding) Result() any  { return false }
func (knownByIntent) Name() string  { return "task_is_known/intents" }
func (knownByIntent) Result() any   { return false }

// stepTasks answers the operations on tasks; false: op is not one of them.
func (m Client) stepTasks(s ClientState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case cli.OpenTask:
		return s.openTask(o, now), true

	case cli.SettleTask:
		return s.settleTask(o, now), true

	case cli.GetTask:
		t, ok := s.tasks.get(o.TaskID)
		if !ok {
			return One(s, OK((*cli.Task)(nil))), true
		}
		return s.timed(func(d int64) any { v := t.value(o.TaskID, d); return &v }), true

	case cli.OpenTasks:
		var ids []string
		for id, t := range s.tasks.all() {
			if !t.IsSettled {
				ids = append(ids, id)
			}
		}
		return s.timed(func(d int64) any {
			slices.SortFunc(ids, func(a, b string) int {
				x, y := s.tasks.at(a), s.tasks.at(b)
				return cmp.Or(cmp.Compare(cut(x.Opened, d), cut(y.Opened, d)), cmp.Compare(x.Order, y.Order))
			})
			var out []cli.Task
			for _, id := range ids[:min(len(ids), cli.EffectiveLimit(o.Limit))] {
				out = append(out, s.tasks.at(id).value(id, d))
			}
			return out
		}), true

	case cli.TaskIsKnown:
		for k := range s.bindings {
			if k.Task == o.TaskID {
				return One(s, OK(true)), true
			}
		}
		return s.byEnvelope(func(first bool) any {
			for _, in := range s.intents.all() {
				if in.names(o.TaskID, first) {
					return true
				}
			}
			return false
		}), true

	case knownByBinding:
		for k := range s.bindings {
			if k.Task == o.TaskID {
				return One(s, OK(true)), true
			}
		}
		return One(s, OK(false)), true

	case knownByIntent:
		return s.byEnvelope(func(first bool) any {
			for _, in := range s.intents.all() {
				if in.names(o.TaskID, first) {
					return true
				}
			}
			return false
		}), true

	case cli.TaskAttempt:
		return s.byEnvelope(func(first bool) any {
			var attempt int64
			for _, in := range s.intents.all() {
				if in.names(o.TaskID, first) {
					attempt = max(attempt, in.Attempt)
				}
			}
			return attempt
		}), true
	}
	return nil, false
}

func (s ClientState) openTask(o cli.OpenTask, now int64) []Branch {
	cz := o.Causality
	act := func(s ClientState) ClientState {
		if t, ok := s.tasks.get(cz.Task); ok {
			t.Kind, t.Parent, t.Hop, t.Attempt = o.Kind, cz.ParentTask, int64(cz.Hop), max(t.Attempt, int64(cz.Attempt))
			return s.withTask(cz.Task, t)
		}
		var order int64
		for _, t := range s.tasks.all() {
			if !t.IsSettled {
				order = max(order, t.Order)
			}
		}
		return s.withTask(cz.Task, ctask{Kind: o.Kind, Parent: cz.ParentTask, Hop: int64(cz.Hop), Attempt: int64(cz.Attempt),
			State: cli.TaskPending, Opened: now, Order: order + 1})
	}
	if o.Kind == cli.KindRoot || o.Kind == cli.KindRelay {
		b := One(act(s), OK(true))
		if _, ok := s.tasks.get(cz.Task); ok {
			b[0].Rule = cli.RuleOpenTaskRefresh
		}
		return b
	}
	key := "kind:" + o.Kind
	taken, known := s.word(key)
	switch {
	case known && taken:
		return One(act(s), OK(true))
	case known:
		return Refused(s, cli.RuleOpenTaskKinds, cli.ErrInvalidArgument)
	}
	return []Branch{
		learning(s, invalid(), cli.RuleOpenTaskKinds, map[string]string{learnWord + key: "0"}),
		{Outcome: OK(true), Next: act(s.withWord(key, true)), Rule: cli.RuleOpenTaskKinds},
	}
}

func (s ClientState) settleTask(o cli.SettleTask, now int64) []Branch {
	t, exists := s.tasks.get(o.TaskID)
	settled := exists && t.IsSettled
	act := func(s ClientState) []Branch {
		if settled {
			return One(s, OK(false))
		}
		t := t
		if !exists {
			t = ctask{Opened: now}
		}
		t.State, t.Settled, t.IsSettled, t.Order = o.State, now, true, 0
		b := One(s.withTask(o.TaskID, t), OK(true))
		if !exists {
			b[0].Rule = "client.settle_task.never_opened"
		}
		return b
	}
	if slices.Contains(cli.TerminalTaskStates, o.State) {
		return act(s)
	}
	key := "verdict:" + string(o.State)
	taken, known := s.word(key)
	switch {
	case known && taken:
		return act(s)
	case known && settled:
		return []Branch{{Outcome: invalid(), Next: s, Rule: cli.RuleRefusalOrder}, {Outcome: OK(false), Next: s, Rule: cli.RuleRefusalOrder}}
	case known:
		return Refused(s, cli.RuleSettleVerdictWords, cli.ErrInvalidArgument)
	case settled:
		// The answer false does not tell whether the word is taken.
		return []Branch{learning(s, invalid(), cli.RuleSettleVerdictWords, map[string]string{learnWord + key: "0"}),
			{Outcome: OK(false), Next: s, Rule: cli.RuleRefusalOrder}}
	}
	b := act(s.withWord(key, true))
	b[0].Rule = cli.RuleSettleVerdictWords
	return append([]Branch{learning(s, invalid(), cli.RuleSettleVerdictWords, map[string]string{learnWord + key: "0"})}, b...)
}
