package client

import (
	cli "github.com/storecheck/storecheck/spec/client"
)

// Rules are the decisions of the contract this store takes on what it has
// read, each stated once: a plain function of the values it decides on, or,
// where the store decides in SQL, the condition or expression it puts in a
// statement. The store decides by the Rules it was opened with
// (Options.Rules); a nil (or "") rule is the contract's, so Rules{} is the
// contract. Breaking one rule is how storecheck's own selftest builds a
// deliberately broken store (internal/bugs): the reference itself knows of
// no bug.
type Rules struct {
	// SchemaMatches (open): a file is this store's when it carries the
	// contract's schema marker and version, both.
	SchemaMatches func(marker string, version int64) bool
	// Retryable (bump_intent, defer_intent): the intents a retry or a
	// deferral acts on, as a condition on intents: the live ones; settled
	// (accepted, exhausted) intents stay settled.
	Retryable string
	// DueOrder (due_intents, flush_order): the order of due intents: by next
	// attempt time to the millisecond, then creation, then insertion.
	DueOrder string
	// Due (due_intents.due, flush_order): the condition on intents, with one
	// parameter, now, of the ones that are due: their next attempt time is
	// at or before now.
	Due string
	// DueLimit (due_intents.limit): how many due intents a read of limit
	// asked returns at most: 0 is the default, and never more than the cap.
	DueLimit func(asked uint32) int
	// FlushBatch (flush_order.now_and_batch): how many due intents one
	// flush pass takes at most.
	FlushBatch int
	// OpenTasksLimit (open_tasks.limit): how many open tasks a read of
	// limit asked returns at most: 0 is the default, and never more than
	// the cap.
	OpenTasksLimit func(asked uint32) int
	// EventsLimit (events_since.limit): how many events a read of limit
	// asked returns at most: exactly limit from 1 to 100; the reference
	// reads 0 and a larger limit as sql_limit does.
	EventsLimit func(asked uint32) int
	// WriteEvent (append_event.seq_increasing): the statement that appends
	// an event (type, data_json, created_at), numbering it above every
	// earlier one.
	WriteEvent string
	// WriteFault (insert_fault.id_increasing): the statement that inserts
	// a fault (its columns but id, in the table's order), giving it an id
	// above every earlier one.
	WriteFault string
	// VerdictOpen (settle_task): the condition on the stored task under
	// which a verdict is written: it has none yet; the first terminal
	// verdict wins.
	VerdictOpen string
	// ReopenAttempt (open_task): the attempt a re-opened task keeps, as an
	// expression over its column attempt and one parameter, the presented
	// attempt: it never goes down.
	ReopenAttempt string
	// Newer (upsert_session, bump_session_version): the session gate: a
	// (generation, seq) is written only when it is strictly after the stored
	// pair, lexicographically.
	Newer func(gen, seq, storedGen, storedSeq uint64) bool
	// ClosedOnBind (bind_task, upsert_session): which of the session's other
	// open bindings opening the binding of taskID closes, as a condition on
	// session_tasks with its parameters: all of them (a session is bound to
	// one task at a time).
	ClosedOnBind func(taskID string) (cond string, args []any)
	// Active (active_sessions): the condition on sessions of the ones still
	// owed work: booting, ready or idle, and not closed unless the agent is
	// ready or idle (suspended).
	Active string
}

// complete is r with every unset rule the contract's.
func (r Rules) complete() Rules {
	if r.SchemaMatches == nil {
		r.SchemaMatches = func(marker string, version int64) bool {
			return marker == cli.SchemaMarker && version == cli.SchemaVersion
		}
	}
	if r.Retryable == "" {
		r.Retryable = `state IN ('pending', 'retrying')`
	}
	if r.DueOrder == "" {
		r.DueOrder = `next_attempt_at, created_at, rowid`
	}
	if r.Due == "" {
		r.Due = `next_attempt_at <= ?`
	}
	if r.DueLimit == nil {
		r.DueLimit = cli.EffectiveLimit
	}
	if r.FlushBatch == 0 {
		r.FlushBatch = cli.FlushBatchSize
	}
	if r.OpenTasksLimit == nil {
		r.OpenTasksLimit = cli.EffectiveLimit
	}
	if r.EventsLimit == nil {
		r.EventsLimit = cli.EffectiveLimit
	}
	if r.WriteEvent == "" {
		r.WriteEvent = `INSERT INTO events (type, data_json, created_at) VALUES (?1, ?2, ?3)`
	}
	if r.WriteFault == "" {
		r.WriteFault = `INSERT INTO faults (task_id, session_id, generation, seq, desired_json, observed_json,
			intent, attempt, backend_ref, kind, reason, state, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`
	}
	if r.VerdictOpen == "" {
		r.VerdictOpen = `task.settled_at IS NULL`
	}
	if r.ReopenAttempt == "" {
		r.ReopenAttempt = `MAX(attempt, ?)`
	}
	if r.Newer == nil {
		r.Newer = func(gen, seq, storedGen, storedSeq uint64) bool {
			return gen > storedGen || (gen == storedGen && seq > storedSeq)
		}
	}
	if r.ClosedOnBind == nil {
		r.ClosedOnBind = func(taskID string) (string, []any) { return `task_id <> ?`, []any{taskID} }
	}
	if r.Active == "" {
		r.Active = `agent_state IN ('booting', 'ready', 'idle') AND (resource_state <> 'closed' OR agent_state IN ('ready', 'idle'))`
	}
	return r
}
