package model

// Sessions and their bindings to tasks.

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// csession is a session tuple.
type csession struct {
	Generation, Seq                                        uint64
	Agent, Delivery, Resource, Recovery, Desired, Observed string
	BackendRef                                             string
	Mismatch                                               int64
	Updated                                                int64
}

type bindKey struct{ Session, Task string }

// cbinding is a binding: whether it is open, its place in the order of
// openings of the task's bindings (only the order among one task's bindings
// is read), and its bound_at (kept only while a bound_at reading of
// SESSION_ID_FOR_TASK is possible).
type cbinding struct {
	Open    bool
	Seq     int64
	BoundAt int64
}

func (v csession) record(id, task string, d int64) *cli.SessionRecord {
	return &cli.SessionRecord{SessionID: id, TaskID: task, VersionedSession: cli.VersionedSession{
		Generation: v.Generation, Seq: v.Seq, AgentState: v.Agent, DeliveryState: v.Delivery, ResourceState: v.Resource,
		RecoverySubstate: v.Recovery, DesiredJSON: v.Desired, ObservedJSON: v.Observed, BackendRef: v.BackendRef,
		MismatchCount: v.Mismatch, UpdatedAt: at(v.Updated, d)}}
}

// referenceSession is the task's session by the reference's reading.
func (s ClientState) referenceSession(task string) string {
	t := s
	t.reads = readOpenFirstLatest
	_, order := t.candidates(task)
	if len(order) == 0 {
		return ""
	}
	return order[0]
}

// openBinding opens (session, task) at boundAt and closes the session's
// other open binding; unchanged (and false) when the pair is open already.
func (s ClientState) openBinding(session, task string, boundAt int64) (ClientState, bool) {
	k := bindKey{session, task}
	if b, ok := s.bindings[k]; ok && b.Open {
		return s, false
	}
	changes := map[bindKey]cbinding{}
	for o, b := range s.bindings {
		if o.Session == session && o.Task != task && b.Open {
			b.Open = false
			changes[o] = b
		}
	}
	// The task's bindings keep their order of opening as ranks 1..n (the
	// pair opened now last), so that two histories that opened them in one
	// order are one state.
	var others []bindKey
	for o := range s.bindings {
		if o.Task == task && o != k {
			others = append(others, o)
		}
	}
	slices.SortFunc(others, func(a, b bindKey) int { return cmp.Compare(s.bindings[a].Seq, s.bindings[b].Seq) })
	for i, o := range others {
		b, ok := changes[o]
		if !ok {
			b = s.bindings[o]
		}
		if b.Seq != int64(i+1) {
			b.Seq = int64(i + 1)
			changes[o] = b
		}
	}
	// bound_at is read to the second (the seed keeps it so), and only while
	// a bound_at reading of SESSION_ID_FOR_TASK is possible.
	boundAt = cut(boundAt, 1e9)
	if s.reads&readsBoundAt == 0 {
		boundAt = 0
	}
	changes[k] = cbinding{Open: true, Seq: int64(len(others) + 1), BoundAt: boundAt}
	return s.withBindings(changes), true
}

// closeOthers closes the session's open bindings to other tasks than task.
func (s ClientState) closeOthers(session, task string) ClientState {
	changes := map[bindKey]cbinding{}
	for o, b := range s.bindings {
		if o.Session == session && o.Task != task && b.Open {
			b.Open = false
			changes[o] = b
		}
	}
	if len(changes) == 0 {
		return s
	}
	return s.withBindings(changes)
}

// otherOpenBinding reports whether the session has an open binding to
// another task than task.
func (s ClientState) otherOpenBinding(session, task string) bool {
	for k, b := range s.bindings {
		if k.Session == session && k.Task != task && b.Open {
			return true
		}
	}
	return false
}

func newer(gen, seq, storedGen, storedSeq uint64) bool {
	return gen > storedGen || gen == storedGen && seq > storedSeq
}

// bindClose is the first of the two steps bind_task may take
// (client.bind_task.two_statements): the session's other open binding
// closed. The second is bind_task itself.
type bindClose struct{ SessionID, TaskID string }

func (bindClose) Name() string { return "bind_task/close_others" }
func (bindClose) Result() any  { return nil }

// stepSessions answers the operations on sessions and bindings; false: op is not one of them.
func (m Client) stepSessions(s ClientState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case cli.UpsertSession:
		v := o.Version
		id := cli.SessionIDFor(o.TaskID, v.BackendRef)
		if cur, ok := s.sessions[id]; ok && !newer(v.Generation, v.Seq, cur.Generation, cur.Seq) {
			return One(s, OK(false)), true
		}
		s = s.withSession(id, csession{Generation: v.Generation, Seq: v.Seq, Agent: v.AgentState, Delivery: v.DeliveryState,
			Resource: v.ResourceState, Recovery: v.RecoverySubstate, Desired: v.DesiredJSON, Observed: v.ObservedJSON,
			BackendRef: v.BackendRef, Mismatch: v.MismatchCount, Updated: nsOf(v.UpdatedAt)})
		s, _ = s.openBinding(id, o.TaskID, nsOf(v.UpdatedAt))
		return One(s, OK(true)), true

	case cli.BumpSessionVersion:
		return s.bumpSession(o, now), true

	case cli.GetSession:
		return s.getSession(o.TaskID), true

	case cli.BindTask:
		next, opened := s.openBinding(o.SessionID, o.TaskID, now)
		return One(next, OK(opened)), true

	case bindClose:
		return One(s.closeOthers(o.SessionID, o.TaskID), OK(nil)), true

	case cli.ReleaseBinding:
		k := bindKey{o.SessionID, o.TaskID}
		b, ok := s.bindings[k]
		if !ok || !b.Open {
			return One(s, OK(false)), true
		}
		b.Open = false
		return One(s.withBindings(map[bindKey]cbinding{k: b}), OK(true)), true

	case cli.ActiveSessions:
		var out []cli.LiveSession
		for _, id := range slices.Sorted(maps.Keys(s.sessions)) {
			v := s.sessions[id]
			recoverable := v.Agent == cli.AgentReady || v.Agent == cli.AgentIdle
			if !(recoverable || v.Agent == cli.AgentBooting && v.Resource != cli.ResourceClosed) {
				continue
			}
			l := cli.LiveSession{SessionID: id, Suspended: v.Resource == cli.ResourceClosed}
			for k, b := range s.bindings {
				if k.Session == id && b.Open {
					l.TaskID = k.Task
				}
			}
			out = append(out, l)
		}
		return One(s, OK(out)), true
	}
	return nil, false
}

// ----- sessions: which binding answers for a task -----

// getSession is get_session: one branch per distinct answer the readings of
// SESSION_ID_FOR_TASK and the precisions of updated_at still possible give,
// the reference's first. Each branch keeps the readings and precisions that
// give its answer: the sessions that give one answer at the same precisions
// share a branch.
func (s ClientState) getSession(task string) []Branch {
	cands, order := s.candidates(task)
	if len(order) == 0 {
		return One(s, OK((*cli.SessionRecord)(nil)))
	}
	type group struct {
		answer      *cli.SessionRecord
		reads, prec uint8
	}
	var groups []group
	for _, sess := range order {
		v, ok := s.sessions[sess]
		var mine []group
		for _, p := range precisions {
			if s.unixPrec&p.bit == 0 {
				continue
			}
			var a *cli.SessionRecord
			if ok {
				a = v.record(sess, task, p.ns)
			}
			if i := slices.IndexFunc(mine, func(g group) bool { return spec.SameResult(g.answer, a) }); i >= 0 {
				mine[i].prec |= p.bit
				continue
			}
			mine = append(mine, group{answer: a, reads: cands[sess], prec: p.bit})
		}
		for _, g := range mine {
			if i := slices.IndexFunc(groups, func(h group) bool { return h.prec == g.prec && spec.SameResult(h.answer, g.answer) }); i >= 0 {
				groups[i].reads |= g.reads
				continue
			}
			groups = append(groups, g)
		}
	}
	if len(groups) == 1 {
		g := groups[0]
		return One(s.withReads(g.reads).withUnixPrec(g.prec), OK(g.answer))
	}
	rule := cli.RuleBindingChoice
	if len(order) == 1 {
		rule = cli.RuleUnixSeconds
	}
	var out []Branch
	for _, g := range groups {
		out = append(out, learning(s, OK(g.answer), rule, map[string]string{learnReads: strconv.Itoa(int(g.reads)), learnUnix: strconv.Itoa(int(g.prec))}))
	}
	return out
}

// bumpSession is bump_session_version: one branch per session the task's
// session may be; the ones that answer false (the gate refused, or the
// session has no tuple) are one branch.
func (s ClientState) bumpSession(o cli.BumpSessionVersion, now int64) []Branch {
	cands, order := s.candidates(o.TaskID)
	var out []Branch
	var refused uint8
	for _, sess := range order {
		cur, ok := s.sessions[sess]
		if !ok || !newer(o.Generation, o.Seq, cur.Generation, cur.Seq) {
			refused |= cands[sess]
			continue
		}
		cur.Generation, cur.Seq, cur.Updated = o.Generation, o.Seq, now
		out = append(out, Branch{Outcome: OK(true), Next: s.withReads(cands[sess]).withSession(sess, cur), Rule: cli.RuleBindingChoice})
	}
	if len(order) == 0 {
		return One(s, OK(false))
	}
	if refused != 0 {
		b := learning(s, OK(false), cli.RuleBindingChoice, map[string]string{learnReads: strconv.Itoa(int(refused))})
		if len(order) > 0 && cands[order[0]]&refused != 0 {
			out = append([]Branch{b}, out...)
		} else {
			out = append(out, b)
		}
	}
	if len(out) == 1 {
		out[0].Rule = ""
	}
	return out
}
