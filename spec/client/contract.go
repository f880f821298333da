// Package client is the client store's contract, from onlyne's ClientStore
// and its SessionLedger (seeds/002).
//
// A client process keeps, in one local file: a durable outbox of intents it
// owes the server (due-time ordering, retry, defer, accept, exhaust); an event
// log; caches of the last output head, prose and config; the session tuples it
// holds, gated by (generation, seq); which delivery each session serves (its
// bindings); the record of each task, where the first terminal verdict wins;
// and the faults it found. The seed's comments name the bugs these rules
// prevent: a redelivered intent that reset its retry budget, a settled intent
// that came back to life, a transport failure that burned an attempt, a retry
// starved by a later arrival, a zombie session rewriting a verdict, a session
// still bound to work that is over.
//
// Every rule is stated on the Store method it governs and checked by a spec
// in spec/suite/client.go under the same operation name.
//
// # Time
//
// The store reads its clock (the one it was opened with) once per operation.
// Every time it keeps, read from its clock or handed in by a caller, is kept
// to the millisecond: times compare and order by their whole milliseconds
// since the Unix epoch, the sub-second part included, and read back as that
// millisecond in UTC.
//
// # The schema gate
//
// A client file carries a marker and a version (SchemaMarker, SchemaVersion).
// Opening a file that carries another marker or another version fails with
// ErrSchemaMismatch, whose message names both as "<marker> version <n>" (the
// file's and the store's), and changes nothing in the file. A file with no
// tables at all is new: the store writes its schema and marker into it. A
// SQLite file that holds tables but no marker (or a schema_meta table that
// does not hold exactly one row) is refused as "(no marker) version 0".
//
// A backend that keeps SQLite files declares the suite capability
// ClientSchemaTable when it keeps its marker as this contract lays it out:
// a table
//
//	CREATE TABLE schema_meta(marker TEXT NOT NULL, version INTEGER NOT NULL)
//
// holding exactly one row. The suite then writes files of another marker or
// version itself (SchemaMetaDDL) to check the gate.
package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/storecheck/storecheck/spec"
)

// StoreName is the contract's name in reports, flags and the wire protocol.
const StoreName = "client"

// The schema the store keeps and checks at open.
const (
	SchemaMarker  = "onlyne-client"
	SchemaVersion = 3
	// SchemaMetaDDL is the table a SQLite backend keeps its marker in.
	SchemaMetaDDL = `CREATE TABLE schema_meta(marker TEXT NOT NULL, version INTEGER NOT NULL)`
)

// Limits of the reads that take one.
const (
	// DefaultLimit is what a limit of 0 means.
	DefaultLimit = 100
	// MaxLimit caps every limit: a larger one reads this many.
	MaxLimit = 500
	// FlushBatchSize is how many due intents one flush pass takes: a queue
	// an offline client filled is read in bounded passes, so one pass never
	// holds the store for the length of the queue.
	FlushBatchSize = 100
)

// EffectiveLimit is the number of rows a read with limit takes.
func EffectiveLimit(limit uint32) int {
	switch {
	case limit == 0:
		return DefaultLimit
	case limit > MaxLimit:
		return MaxLimit
	}
	return int(limit)
}

// IntentState is where an intent is in its life. Pending and Retrying are
// live; Accepted and Exhausted are settled, and a settled intent never comes
// back to life.
type IntentState string

const (
	IntentPending   IntentState = "pending"
	IntentRetrying  IntentState = "retrying"
	IntentAccepted  IntentState = "accepted"
	IntentExhausted IntentState = "exhausted"
)

// Intent is one row of the outbox.
type Intent struct {
	OpID string `json:"op_id"`
	// Envelope is the message owed to the server, a JSON value. It reads
	// back JSON-equal to what was enqueued.
	Envelope spec.RawJSON `json:"envelope"`
	// Attempt counts the refusals the intent has taken (bump_intent).
	Attempt       int64       `json:"attempt"`
	State         IntentState `json:"state"`
	NextAttemptAt time.Time   `json:"next_attempt_at"`
	// Receipt is the server's answer, once accepted (nil before).
	Receipt spec.RawJSON `json:"receipt,omitempty"`
	// LastError is the last error recorded by bump, defer or exhaust ("" for
	// none).
	LastError string    `json:"last_error"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Event is one entry of the event log.
type Event struct {
	Seq       int64        `json:"seq"`
	Type      string       `json:"type"`
	Data      spec.RawJSON `json:"data"`
	CreatedAt time.Time    `json:"created_at"`
}

// Prose is a role's cached prose and the hash of the spec it came from.
type Prose struct {
	Prose    string    `json:"prose"`
	SpecHash string    `json:"spec_hash"`
	CachedAt time.Time `json:"cached_at"`
}

// VersionedSession is one session tuple as its holder writes it. The store
// does not interpret the state words or the JSON texts, except where
// active_sessions and SessionIDFor say so.
type VersionedSession struct {
	Generation       uint64 `json:"generation"`
	Seq              uint64 `json:"seq"`
	AgentState       string `json:"agent_state"`
	DeliveryState    string `json:"delivery_state"`
	ResourceState    string `json:"resource_state"`
	RecoverySubstate string `json:"recovery_substate"`
	DesiredJSON      string `json:"desired_json"`
	ObservedJSON     string `json:"observed_json"`
	// BackendRef is the reference the backend that runs the session answers
	// to, as JSON text; SessionIDFor reads the session's id from it.
	BackendRef    string    `json:"backend_ref"`
	MismatchCount int64     `json:"mismatch_count"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// SessionRecord is a stored session tuple, with the session's id and the
// delivery the caller asked about.
type SessionRecord struct {
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
	VersionedSession
}

// LiveSession is one session active_sessions claims.
type LiveSession struct {
	SessionID string `json:"session_id"`
	// TaskID is the task of the session's open binding, "" when it has none.
	TaskID    string `json:"task_id"`
	Suspended bool   `json:"suspended"`
}

// Agent and resource words active_sessions reads.
const (
	AgentBooting   = "booting"
	AgentReady     = "ready"
	AgentIdle      = "idle"
	AgentWorking   = "working"
	AgentGone      = "gone"
	ResourceOpen   = "open"
	ResourceClosed = "closed"
)

// TaskState is how a task ended, or TaskPending while it is open.
type TaskState string

const (
	TaskPending   TaskState = "pending"
	TaskCompleted TaskState = "completed"
	TaskFailed    TaskState = "failed"
	TaskCancelled TaskState = "cancelled"
)

// TerminalTaskStates are the verdicts settle_task accepts.
var TerminalTaskStates = []TaskState{TaskCompleted, TaskFailed, TaskCancelled}

// Task kinds: how a delivery reached this role.
const (
	KindRoot  = "root"
	KindRelay = "relay"
)

// Causality is the chain a delivery arrived on: its task, the parent task
// ("" for none), its depth and the redelivery count.
type Causality struct {
	Task       string `json:"task"`
	ParentTask string `json:"parent_task"`
	Hop        uint32 `json:"hop"`
	Attempt    uint32 `json:"attempt"`
}

// Task is one task's record.
type Task struct {
	TaskID string `json:"task_id"`
	// Kind is root or relay; "" for a record settle_task created.
	Kind       string     `json:"kind"`
	ParentTask string     `json:"parent_task"`
	Hop        int64      `json:"hop"`
	Attempt    int64      `json:"attempt"`
	State      TaskState  `json:"state"`
	OpenedAt   time.Time  `json:"opened_at"`
	SettledAt  *time.Time `json:"settled_at,omitempty"`
}

// Fault is one fault the client recorded. ID is the store's; the rest is the
// caller's, kept as given.
type Fault struct {
	ID           int64     `json:"id"`
	TaskID       string    `json:"task_id"`
	SessionID    string    `json:"session_id"`
	Generation   int64     `json:"generation"`
	Seq          int64     `json:"seq"`
	DesiredJSON  string    `json:"desired_json"`
	ObservedJSON string    `json:"observed_json"`
	Intent       string    `json:"intent"`
	Attempt      int64     `json:"attempt"`
	BackendRef   string    `json:"backend_ref"`
	Kind         string    `json:"kind"`
	Reason       string    `json:"reason"`
	State        string    `json:"state"`
	CreatedAt    time.Time `json:"created_at"`
}

// The contract's closed set of error kinds.
const (
	// ErrSchemaMismatch: the file carries another marker or version.
	ErrSchemaMismatch spec.Kind = "schema_mismatch"
	// ErrInvalidArgument: a value the contract does not accept (an envelope,
	// receipt or event payload that is not JSON, a verdict that is not
	// terminal, a task kind other than root or relay).
	ErrInvalidArgument spec.Kind = "invalid_argument"
	// ErrIO: the store could not do its work (open, query, commit).
	ErrIO spec.Kind = "io"
)

// Kinds is the closed set, in a fixed order.
var Kinds = []spec.Kind{ErrSchemaMismatch, ErrInvalidArgument, ErrIO}

// HeadPreviewRunes is the longest out-head the cache keeps whole.
const HeadPreviewRunes = 200

// HeadPreview is what put_out_head keeps of a head (the seed's head_preview,
// which it does not show): a head of at most HeadPreviewRunes code points is
// kept whole; a longer one is cut to its first HeadPreviewRunes code points
// followed by "…" (U+2026). Bytes that are not UTF-8 count one each and are
// kept as they are.
func HeadPreview(head string) string {
	n := 0
	for i := range head {
		if n == HeadPreviewRunes {
			return head[:i] + "…"
		}
		n++
	}
	return head
}

// SessionIDFor is the id a session tuple is filed under (the seed's
// backend_parts): the "task_id" member of backendRef when backendRef is a
// JSON object whose "task_id" is a non-empty string, else the task the tuple
// was written for (a client-held session shares its id with the delivery
// that opened it).
func SessionIDFor(task, backendRef string) string {
	var ref struct {
		TaskID any `json:"task_id"`
	}
	if json.Unmarshal([]byte(backendRef), &ref) == nil {
		if id, ok := ref.TaskID.(string); ok && id != "" {
			return id
		}
	}
	return task
}

// Store is the client contract. Every method is one operation and one
// transaction; a failed operation changes nothing. Two stores open on one
// file (as two processes) keep every rule between them.
//
// # Bindings
//
// A binding says a session serves a task; it is open until released. A
// session has at most one open binding: opening one closes the session's
// other open binding. The session of a task (the seed's SESSION_ID_FOR_TASK)
// is the session of the task's most recently opened binding that is still
// open, or, when none is open, of its most recently opened binding: a session
// that served one delivery and then another still answers for the first.
type Store interface {
	// EnqueueIntent adds an intent: state pending, attempt 0, due now,
	// created and updated now; it answers true. An op_id already in the
	// outbox (in any state) is left exactly as it was (envelope, attempt,
	// state, times) and the call answers false: a redelivered intent never
	// resets its retry budget. An envelope that is not JSON:
	// ErrInvalidArgument.
	EnqueueIntent(ctx context.Context, opID string, envelope spec.RawJSON) (bool, error)

	// Intent returns one outbox row, or nil. (The seed reads rows only
	// through due_intents; this read makes every state observable.)
	Intent(ctx context.Context, opID string) (*Intent, error)

	// DueIntents returns the pending and retrying intents whose next attempt
	// time is at or before now, ordered by next attempt time, then creation
	// time, then enqueue order; at most EffectiveLimit(limit) of them. The
	// row that waited longest comes first whatever the sub-second part of
	// its time, so no retry is starved by later arrivals.
	DueIntents(ctx context.Context, now time.Time, limit uint32) ([]Intent, error)

	// BumpIntent records a refusal: attempt + 1, state retrying, the given
	// next attempt time and last error, updated now. It acts only on a
	// pending or retrying intent and answers whether it did; on a settled or
	// missing intent it changes nothing and answers false. The caller owns
	// the attempt ceiling (it calls exhaust_intent).
	BumpIntent(ctx context.Context, opID string, nextAttemptAt time.Time, lastError string) (bool, error)

	// DeferIntent pushes the next attempt without consuming the budget: a
	// transport failure is not the server refusing the message. State
	// retrying, the given time and last error, updated now, attempt
	// unchanged. Only a pending or retrying intent; answers whether it acted.
	DeferIntent(ctx context.Context, opID string, nextAttemptAt time.Time, lastError string) (bool, error)

	// AcceptIntent settles an intent as accepted with the server's receipt
	// (a JSON value, else ErrInvalidArgument), updated now. Only a pending
	// or retrying intent; answers whether it acted.
	AcceptIntent(ctx context.Context, opID string, receipt spec.RawJSON) (bool, error)

	// ExhaustIntent settles an intent as exhausted with its last error,
	// attempt unchanged, updated now. Only a pending or retrying intent;
	// answers whether it acted.
	ExhaustIntent(ctx context.Context, opID string, lastError string) (bool, error)

	// DeleteIntent removes an intent in any state and answers whether there
	// was one.
	DeleteIntent(ctx context.Context, opID string) (bool, error)

	// PendingIntentCount counts the pending and retrying intents, due or not.
	PendingIntentCount(ctx context.Context) (int64, error)

	// FlushOrder is DueIntents at the store's now with limit FlushBatchSize.
	FlushOrder(ctx context.Context) ([]Intent, error)

	// AppendEvent appends an event (data a JSON value, else
	// ErrInvalidArgument) created now, and returns its sequence number:
	// strictly greater than every earlier one, the first being 1.
	AppendEvent(ctx context.Context, eventType string, data spec.RawJSON) (int64, error)

	// EventsSince returns the events whose sequence is strictly greater than
	// seq, in sequence order, at most EffectiveLimit(limit).
	EventsSince(ctx context.Context, seq int64, limit uint32) ([]Event, error)

	// EventHead is the last event's sequence number, 0 when there is none.
	EventHead(ctx context.Context) (int64, error)

	// PutOutHead caches HeadPreview(head) as the task's out-head, replacing
	// any earlier one. (The seed answers a bool that an upsert makes always
	// true; the contract drops it.)
	PutOutHead(ctx context.Context, taskID, head string) error

	// OutHead is the task's cached out-head, or nil.
	OutHead(ctx context.Context, taskID string) (*string, error)

	// PutProse caches a role's prose and spec hash, cached now, replacing
	// any earlier one.
	PutProse(ctx context.Context, role, prose, specHash string) error

	// Prose is the role's cached prose, or nil.
	Prose(ctx context.Context, role string) (*Prose, error)

	// PutConfig caches a config value under key, replacing any earlier one.
	PutConfig(ctx context.Context, key, value string) error

	// Config is the cached value of key, or nil.
	Config(ctx context.Context, key string) (*string, error)

	// UpsertSession writes the tuple of the session SessionIDFor(taskID,
	// v.BackendRef) when the session has none yet, or when (v.Generation,
	// v.Seq) is strictly newer than the stored pair, compared
	// lexicographically (a newer generation wins whatever its seq); an equal
	// or older pair changes nothing. A write also opens the binding of that
	// session to taskID (closing the session's other open binding). Answers
	// whether it wrote.
	UpsertSession(ctx context.Context, taskID string, v VersionedSession) (bool, error)

	// BumpSessionVersion moves only the (generation, seq) pair of the task's
	// session (see Bindings), and its updated_at to now, under the same gate
	// as UpsertSession; the rest of the tuple stays. Answers whether it
	// moved; false when the task has no session.
	BumpSessionVersion(ctx context.Context, taskID string, generation, seq uint64) (bool, error)

	// GetSession returns the tuple of the task's session (see Bindings),
	// with TaskID the task asked about, or nil.
	GetSession(ctx context.Context, taskID string) (*SessionRecord, error)

	// BindTask opens the binding of session to task now and closes the
	// session's other open binding. A released pair opens again. Answers
	// true when a binding opened, false when the pair was already open (and
	// then nothing changes).
	BindTask(ctx context.Context, sessionID, taskID string) (bool, error)

	// ReleaseBinding releases the pair's binding when it is open and answers
	// true; a released or missing binding changes nothing and answers false.
	ReleaseBinding(ctx context.Context, sessionID, taskID string) (bool, error)

	// ActiveSessions are the sessions this client can still recover, for
	// the hello claim, ordered by session id: those whose agent state is
	// booting, ready or idle and whose resource state is not closed; and
	// those whose resource state is closed while their agent is ready or
	// idle, reported Suspended (the work they hold is still owed). A working
	// session (its plugin died with the process), a booting one whose
	// resource closed, and an exited one (agent gone) are never claimed.
	// TaskID is the task of the session's open binding ("" for none).
	ActiveSessions(ctx context.Context) ([]LiveSession, error)

	// OpenTask opens the record of c.Task: a new record is pending, opened
	// now, with the chain (kind, parent, hop, attempt) given; answers true.
	// Re-opening an existing record refreshes the chain but keeps its state,
	// opening time, settle time and verdict, and takes the larger attempt,
	// so the count never runs backwards; answers false. kind must be root or
	// relay, else ErrInvalidArgument.
	OpenTask(ctx context.Context, c Causality, kind string) (bool, error)

	// SettleTask records the task's verdict (one of TerminalTaskStates, else
	// ErrInvalidArgument), settled now. The first terminal verdict wins: a
	// task already settled keeps its record and the call answers false. A
	// task never opened gets its record here (no kind, no parent, hop and
	// attempt 0, opened and settled now), so no verdict is dropped.
	SettleTask(ctx context.Context, taskID string, state TaskState) (bool, error)

	// Task is the task's record, or nil when none was opened or settled.
	Task(ctx context.Context, taskID string) (*Task, error)

	// OpenTasks are the tasks not settled, oldest opening first (then in
	// the order opened), at most EffectiveLimit(limit).
	OpenTasks(ctx context.Context, limit uint32) ([]Task, error)

	// TaskIsKnown is true when the task has, or had, a binding, or when an
	// intent's envelope names it as causality.task (a JSON string).
	TaskIsKnown(ctx context.Context, taskID string) (bool, error)

	// TaskAttempt is the highest attempt among the intents whose envelope
	// names the task as causality.task, 0 when there is none.
	TaskAttempt(ctx context.Context, taskID string) (int64, error)

	// InsertFault records a fault (its ID ignored) and returns its id,
	// greater than every earlier one.
	InsertFault(ctx context.Context, f Fault) (int64, error)

	// ListFaults are the task's faults in insertion order.
	ListFaults(ctx context.Context, taskID string) ([]Fault, error)

	// Close releases the store. Operations after Close fail.
	Close() error
}
