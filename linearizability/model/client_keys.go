package model

// How the client model splits into independent parts, and the keys each
// operation touches.

import (
	"fmt"
	"slices"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Parts are the steps of the client operations the seed does not run as one
// statement: task_is_known's two reads, and bind_task's close of the
// session's other binding and the bind.
func (m Client) Parts(op spec.Op) []spec.Op {
	switch o := op.(type) {
	case cli.TaskIsKnown:
		if m.AtomicReads {
			return nil
		}
		return []spec.Op{knownByBinding{o.TaskID}, knownByIntent{o.TaskID}}
	case cli.BindTask:
		return []spec.Op{bindClose{o.SessionID, o.TaskID}, o}
	}
	return nil
}

// Split cuts a false task_is_known into its two reads (a true one is true
// at the moment of the read that found it, since a binding is never
// removed, and is judged as one step), and a bind_task into its two steps.
func (m Client) Split(op spec.Op, got Outcome) ([]spec.Op, []Outcome, bool) {
	if got.Kind != "" {
		return nil, nil, false
	}
	switch o := op.(type) {
	case cli.TaskIsKnown:
		if got.Result == false && !m.AtomicReads {
			return []spec.Op{knownByBinding{o.TaskID}, knownByIntent{o.TaskID}}, []Outcome{OK(false), OK(false)}, true
		}
	case cli.BindTask:
		return []spec.Op{bindClose{o.SessionID, o.TaskID}, o}, []Outcome{OK(nil), got}, true
	}
	return nil, nil, false
}

// Keys partitions a client history. The store is many small stores side by
// side, and each key below names one of them:
//
//   - intent:<op_id>: the operations on one outbox row. The due scans and
//     pending_intent_count read every row: intent:*. A row's enqueue order
//     is global, but only those scans read it.
//   - names:<task>: the intents whose envelope names the task, which
//     task_is_known and task_attempt read. enqueue_intent carries the key of
//     the task its envelope names (by either occurrence of a member named
//     twice); the later operations on that row (a bump changes its attempt,
//     a delete its presence) carry only intent:<op_id>, which joins them to
//     that enqueue.
//   - events, faults: each one sequence, whose numbers every append takes
//     from: never split.
//   - out_head:<task>, prose:<role>, config:<key>: independent caches; but
//     the tasks that were put one head share its preview, which the model
//     learns (client.put_out_head.preview): put_out_head also carries
//     preview:<head>, and out_head joins it through the put.
//   - session:<id> and bound:<task>: a session's tuple and its bindings. An
//     operation that names both (upsert_session, bind_task,
//     release_binding) joins them. get_session and bump_session_version
//     name only the task: every session they may reach (under any reading
//     of SESSION_ID_FOR_TASK) is bound to the task by an earlier operation
//     of the history that named both, so they join that session through
//     it; closing a session's other binding (of another task) is joined
//     through that binding's opening, which named the session.
//     active_sessions reads every session and its open binding: session:*
//     (every binding's opening named its session).
//   - task:<id>: a task's record. open_tasks reads every record: task:*.
//     The kinds and verdicts a backend takes are learned per part.
//
// So a history splits at least into the outbox, the sessions, the tasks,
// the event log, the faults and each cache; and, without the scans, per
// row, per task and per group of sessions and tasks bound together.
func (Client) Keys(op spec.Op) []string {
	switch o := op.(type) {
	case cli.EnqueueIntent:
		keys := []string{"intent:" + o.OpID}
		for _, last := range []bool{false, true} {
			if t, ok := envelopeTask(o.Envelope, last); ok && !slices.Contains(keys, "names:"+t) {
				keys = append(keys, "names:"+t)
			}
		}
		return keys
	case cli.GetIntent:
		return []string{"intent:" + o.OpID}
	case cli.BumpIntent:
		return []string{"intent:" + o.OpID}
	case cli.DeferIntent:
		return []string{"intent:" + o.OpID}
	case cli.AcceptIntent:
		return []string{"intent:" + o.OpID}
	case cli.ExhaustIntent:
		return []string{"intent:" + o.OpID}
	case cli.DeleteIntent:
		return []string{"intent:" + o.OpID}
	case cli.TaskAttempt:
		return []string{"names:" + o.TaskID}
	case cli.TaskIsKnown:
		return []string{"names:" + o.TaskID, "bound:" + o.TaskID}
	case knownByBinding:
		return []string{"bound:" + o.TaskID}
	case knownByIntent:
		return []string{"names:" + o.TaskID}
	case cli.AppendEvent, cli.EventsSince, cli.EventHead:
		return []string{"events"}
	case cli.InsertFault, cli.ListFaults:
		return []string{"faults"}
	case cli.PutOutHead:
		return []string{"out_head:" + o.TaskID, fmt.Sprintf("preview:%q", o.Head)}
	case cli.GetOutHead:
		return []string{"out_head:" + o.TaskID}
	case cli.PutProse:
		return []string{"prose:" + o.Role}
	case cli.GetProse:
		return []string{"prose:" + o.Role}
	case cli.PutConfig:
		return []string{"config:" + o.Key}
	case cli.GetConfig:
		return []string{"config:" + o.Key}
	case cli.UpsertSession:
		return []string{"session:" + cli.SessionIDFor(o.TaskID, o.Version.BackendRef), "bound:" + o.TaskID}
	case cli.BindTask:
		return []string{"session:" + o.SessionID, "bound:" + o.TaskID}
	case bindClose:
		return []string{"session:" + o.SessionID, "bound:" + o.TaskID}
	case cli.ReleaseBinding:
		return []string{"session:" + o.SessionID, "bound:" + o.TaskID}
	case cli.GetSession:
		return []string{"bound:" + o.TaskID}
	case cli.BumpSessionVersion:
		return []string{"bound:" + o.TaskID}
	case cli.OpenTask:
		return []string{"task:" + o.Causality.Task}
	case cli.SettleTask:
		return []string{"task:" + o.TaskID}
	case cli.GetTask:
		return []string{"task:" + o.TaskID}
	case cli.DueIntents, cli.FlushOrder, cli.PendingIntentCount:
		return []string{"intent:*"}
	case cli.ActiveSessions:
		return []string{"session:*"}
	case cli.OpenTasks:
		return []string{"task:*"}
	}
	return nil
}
