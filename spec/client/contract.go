// Package client is the client store's contract, from onlyne's ClientStore
// and its SessionLedger (seeds/002_5e2281c7c755b9d2.txt).
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
// Every rule is in the rule table (Rules, rendered as docs/rules/client.md)
// with the seed line it comes from or, where the seed is silent, the latitude
// a backend has; each Store method below names the rules that govern it by
// ID, and the specs of spec/suite/client*.go name the rules they check.
//
// # Time
//
// The store reads its clock (the one it was opened with) once per operation.
// The times it keeps through the seed's rfc3339 helper (intents, prose, tasks,
// events) read back cut to the backend's precision, whole seconds or finer,
// and compare and order at that precision (client.time_precision: the seed
// does not show the helper). A session tuple's updated_at and a fault's
// created_at are the caller's, kept as the seed's unix seconds or finer
// (client.unix_seconds). The reference keeps every time to the millisecond.
//
// # The schema gate
//
// A client file carries a marker and a version (SchemaMarker, SchemaVersion).
// Opening a file that carries another marker or another version fails with
// ErrSchemaMismatch and changes nothing in the file (client.schema_mismatch);
// only the kind is compared, the message is the backend's. A file with
// nothing in it is new: the store writes its schema and marker into it
// (client.schema_new_file).
//
// Where the marker is kept is the backend's own (client.schema_layout; the
// seed's open_connection is not shown). The kit checks the gate in one of two
// ways. A backend that declares the capability client_schema_writer writes a
// file of another marker or version itself when the kit asks (the wire
// request write_foreign_schema, the harness function
// suite.Harness.WriteClientSchema), and the kit then opens it. A backend that
// declares client_schema_table keeps its marker as the kit lays it out, a
// table
//
//	CREATE TABLE schema_meta(marker TEXT NOT NULL, version INTEGER NOT NULL)
//
// holding exactly one row, and the kit writes such files itself
// (SchemaMetaDDL); such a backend also refuses a SQLite file that holds
// tables but no schema_meta row (client.schema_unmarked).
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

// Event is one entry of the event log. Seq is the backend's number: positive
// and greater than every earlier one (client.append_event.seq_increasing).
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
	BackendRef    string `json:"backend_ref"`
	MismatchCount int64  `json:"mismatch_count"`
	// UpdatedAt is the caller's time, kept as the seed's unix seconds or
	// finer (client.unix_seconds); it is also the bound_at of the binding
	// the write opens.
	UpdatedAt time.Time `json:"updated_at"`
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

// TerminalTaskStates are the contract's verdict words: every backend takes
// them (client.settle_task.verdict_words). A backend may take other words
// too, or refuse them.
var TerminalTaskStates = []TaskState{TaskCompleted, TaskFailed, TaskCancelled}

// Task kinds: how a delivery reached this role. Every backend takes these
// two; another kind may be taken or refused (client.open_task.kind_words).
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
	// Kind is the kind open_task was given; "" for a record settle_task
	// created.
	Kind       string     `json:"kind"`
	ParentTask string     `json:"parent_task"`
	Hop        int64      `json:"hop"`
	Attempt    int64      `json:"attempt"`
	State      TaskState  `json:"state"`
	OpenedAt   time.Time  `json:"opened_at"`
	SettledAt  *time.Time `json:"settled_at,omitempty"`
}

// Fault is one fault the client recorded. ID is the store's (greater than
// every earlier one, client.insert_fault.id_increasing); the rest is the
// caller's, kept as given (CreatedAt by client.unix_seconds).
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
	// ErrInvalidArgument: a value the backend does not take (an envelope,
	// receipt or event payload that is not JSON, a verdict or a task kind
	// outside its words). Where the seed cannot be handed such a value, a
	// backend may refuse it or keep it (client.payload_json,
	// client.open_task.kind_words, client.settle_task.verdict_words).
	ErrInvalidArgument spec.Kind = "invalid_argument"
	// ErrIO: the store could not do its work (open, query, commit).
	ErrIO spec.Kind = "io"
)

// Kinds is the closed set, in a fixed order.
var Kinds = []spec.Kind{ErrSchemaMismatch, ErrInvalidArgument, ErrIO}

// HeadPreviewRunes is the longest out-head the reference keeps whole.
const HeadPreviewRunes = 200

// HeadPreview is the reference's reading of the seed's head_preview, which
// the seed does not show: a head of at most HeadPreviewRunes code points is
// kept whole; a longer one is cut to its first HeadPreviewRunes code points
// followed by "…" (U+2026). Bytes that are not UTF-8 count one each and are
// kept as they are. It is not the contract: a backend's preview is any
// function of the head (client.put_out_head.preview).
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

// SessionIDFor is the id a session tuple is filed under, as the seed's
// backend_parts reads it (client.upsert_session.session_id): the "task_id"
// member of backendRef when backendRef is a JSON object whose "task_id" is
// a string (the empty string too), else the task the tuple was written for
// (a client-held session shares its id with the delivery that opened it).
func SessionIDFor(task, backendRef string) string {
	var ref map[string]json.RawMessage
	if json.Unmarshal([]byte(backendRef), &ref) == nil {
		var id string
		if raw, ok := ref["task_id"]; ok && json.Unmarshal(raw, &id) == nil && len(raw) > 0 && raw[0] == '"' {
			return id
		}
	}
	return task
}

// Store is the client contract. Every method is one operation and one step
// of the store; a failed operation changes nothing; two stores open on one
// file (as two processes) keep every rule between them
// (client.one_transaction). Each method names the rules (spec.Rule IDs of
// Rules) that govern it; "silent" marks a rule where the seed is silent and
// the backend has latitude.
//
// # Bindings
//
// A binding says a session serves a task; it is open until released. A
// session has at most one open binding: opening one closes the session's
// other open binding (client.bind_task.opens). The session of a task (the
// seed's SESSION_ID_FOR_TASK, which it does not show) is the session of one
// of the task's bindings, chosen by the backend's reading, the same every
// time (client.get_session.binding_choice, silent): the most recently opened
// binding, or the one with the latest bound_at (the tuple's updated_at on
// upsert, now on bind; ties within one second go either way), each with open
// bindings first or not. The reference takes the most recently opened open
// binding, else the most recently opened one. Under every reading a session
// that served one delivery and then another still answers for the first.
type Store interface {
	// EnqueueIntent adds an intent: state pending, attempt 0, due now,
	// created and updated now; it answers true (client.enqueue_intent.new).
	// An op_id already in the outbox (in any state) is left exactly as it
	// was and the call answers false: a redelivered intent never resets its
	// retry budget (client.enqueue_intent.existing_untouched). An envelope
	// that is not JSON is refused with ErrInvalidArgument or kept verbatim
	// (client.payload_json, silent; client.refusal_order, silent).
	EnqueueIntent(ctx context.Context, opID string, envelope spec.RawJSON) (bool, error)

	// Intent returns one outbox row, or nil (client.intent.read, silent: the
	// seed reads rows only through due_intents; this read makes every state
	// observable).
	Intent(ctx context.Context, opID string) (*Intent, error)

	// DueIntents returns the pending and retrying intents whose next attempt
	// time is at or before now (client.due_intents.due), ordered by next
	// attempt time, then creation time, then enqueue order, so that the row
	// that waited longest comes first (client.due_intents.order; times at
	// the backend's precision, client.time_precision, silent); at most
	// EffectiveLimit(limit) of them (client.due_intents.limit).
	DueIntents(ctx context.Context, now time.Time, limit uint32) ([]Intent, error)

	// BumpIntent records a refusal: attempt + 1, state retrying, the given
	// next attempt time and last error, updated now
	// (client.bump_intent.refusal). It acts only on a pending or retrying
	// intent and answers whether it did; on a settled or missing intent it
	// changes nothing and answers false (client.bump_intent.live_only). The
	// caller owns the attempt ceiling (it calls exhaust_intent).
	BumpIntent(ctx context.Context, opID string, nextAttemptAt time.Time, lastError string) (bool, error)

	// DeferIntent pushes the next attempt without consuming the budget: a
	// transport failure is not the server refusing the message. State
	// retrying, the given time and last error, updated now, attempt
	// unchanged (client.defer_intent.keeps_attempt). Only a pending or
	// retrying intent; answers whether it acted (client.defer_intent.live_only).
	DeferIntent(ctx context.Context, opID string, nextAttemptAt time.Time, lastError string) (bool, error)

	// AcceptIntent settles an intent as accepted with the server's receipt,
	// updated now (client.accept_intent.settles). Only a pending or retrying
	// intent; answers whether it acted (client.accept_intent.live_only). A
	// receipt that is not JSON: client.payload_json and
	// client.refusal_order (silent).
	AcceptIntent(ctx context.Context, opID string, receipt spec.RawJSON) (bool, error)

	// ExhaustIntent settles an intent as exhausted with its last error,
	// attempt unchanged, updated now (client.exhaust_intent.settles). Only a
	// pending or retrying intent; answers whether it acted
	// (client.exhaust_intent.live_only).
	ExhaustIntent(ctx context.Context, opID string, lastError string) (bool, error)

	// DeleteIntent removes an intent in any state and answers whether there
	// was one (client.delete_intent.removes).
	DeleteIntent(ctx context.Context, opID string) (bool, error)

	// PendingIntentCount counts the pending and retrying intents, due or not
	// (client.pending_intent_count.live).
	PendingIntentCount(ctx context.Context) (int64, error)

	// FlushOrder is DueIntents at the store's now with limit FlushBatchSize
	// (client.flush_order.now_and_batch).
	FlushOrder(ctx context.Context) ([]Intent, error)

	// AppendEvent appends an event created now and returns its sequence
	// number: positive and greater than every earlier one
	// (client.append_event.seq_increasing, silent: the first need not be 1
	// nor the steps 1). Data that is not JSON: client.payload_json (silent).
	AppendEvent(ctx context.Context, eventType string, data spec.RawJSON) (int64, error)

	// EventsSince returns the events whose sequence is strictly greater than
	// seq, in sequence order (client.events_since.after_seq, silent), at
	// most limit of them: exactly that many when there are, for a limit
	// from 1 to 100; a prefix for a limit of 0 or above 100
	// (client.events_since.limit, silent).
	EventsSince(ctx context.Context, seq int64, limit uint32) ([]Event, error)

	// EventHead is the last event's sequence number, 0 when there is none
	// (client.event_head.last, silent).
	EventHead(ctx context.Context) (int64, error)

	// PutOutHead caches the seed's head_preview(head) as the task's
	// out-head, replacing any earlier one (client.put_out_head.latest_wins).
	// The preview is any function of the head (client.put_out_head.preview,
	// silent; the reference keeps HeadPreview). (The seed answers a bool
	// that an upsert makes always true; the contract drops it.)
	PutOutHead(ctx context.Context, taskID, head string) error

	// OutHead is the task's cached out-head, or nil
	// (client.put_out_head.latest_wins).
	OutHead(ctx context.Context, taskID string) (*string, error)

	// PutProse caches a role's prose and spec hash, cached now, replacing
	// any earlier one (client.put_prose.latest_wins).
	PutProse(ctx context.Context, role, prose, specHash string) error

	// Prose is the role's cached prose, or nil (client.put_prose.latest_wins).
	Prose(ctx context.Context, role string) (*Prose, error)

	// PutConfig caches a config value under key, replacing any earlier one
	// (client.put_config.latest_wins).
	PutConfig(ctx context.Context, key, value string) error

	// Config is the cached value of key, or nil (client.put_config.latest_wins).
	Config(ctx context.Context, key string) (*string, error)

	// UpsertSession writes the tuple of the session SessionIDFor(taskID,
	// v.BackendRef) (client.upsert_session.session_id) when the session has
	// none yet, or when (v.Generation, v.Seq) is strictly newer than the
	// stored pair, compared lexicographically; an equal or older pair
	// changes nothing (client.upsert_session.gate). A write keeps the tuple
	// as given (client.upsert_session.tuple_kept; updated_at by
	// client.unix_seconds) and opens the binding of that session to taskID,
	// closing the session's other open binding, in the same step
	// (client.upsert_session.binds). Answers whether it wrote.
	UpsertSession(ctx context.Context, taskID string, v VersionedSession) (bool, error)

	// BumpSessionVersion moves only the (generation, seq) pair of the task's
	// session (see Bindings), and its updated_at to now, under the same gate
	// as UpsertSession; the rest of the tuple stays. Answers whether it
	// moved; false when the task has no session
	// (client.bump_session_version.pair_only;
	// client.get_session.binding_choice, silent).
	BumpSessionVersion(ctx context.Context, taskID string, generation, seq uint64) (bool, error)

	// GetSession returns the tuple of the task's session (see Bindings),
	// with TaskID the task asked about, or nil
	// (client.get_session.through_binding; client.get_session.binding_choice,
	// silent).
	GetSession(ctx context.Context, taskID string) (*SessionRecord, error)

	// BindTask opens the binding of session to task now and closes the
	// session's other open binding. A released pair opens again. Answers
	// true when a binding opened, false when the pair was already open (and
	// then nothing changes) (client.bind_task.opens). The close and the open
	// may be two steps (client.bind_task.two_statements, silent).
	BindTask(ctx context.Context, sessionID, taskID string) (bool, error)

	// ReleaseBinding releases the pair's binding when it is open and answers
	// true; a released or missing binding changes nothing and answers false
	// (client.release_binding.once).
	ReleaseBinding(ctx context.Context, sessionID, taskID string) (bool, error)

	// ActiveSessions are the sessions this client can still recover, for
	// the hello claim, ordered by session id: those whose agent state is
	// booting, ready or idle and whose resource state is not closed; and
	// those whose resource state is closed while their agent is ready or
	// idle, reported Suspended (client.active_sessions.claimed). TaskID is
	// the task of the session's open binding, "" for none
	// (client.active_sessions.open_task).
	ActiveSessions(ctx context.Context) ([]LiveSession, error)

	// OpenTask opens the record of c.Task: a new record is pending, opened
	// now, with the chain (kind, parent, hop, attempt) given
	// (client.open_task.new). Re-opening an existing record refreshes the
	// chain but keeps its state, opening time, settle time and verdict, and
	// takes the larger attempt, so the count never runs backwards
	// (client.open_task.refresh). Both answer true: the record was written.
	// root and relay are taken; another kind is taken or refused with
	// ErrInvalidArgument (client.open_task.kind_words, silent).
	OpenTask(ctx context.Context, c Causality, kind string) (bool, error)

	// SettleTask records the task's verdict, settled now. The first terminal
	// verdict wins: a task already settled keeps its record and the call
	// answers false (client.settle_task.first_wins). A task never opened
	// gets its record here (no kind, no parent, hop and attempt 0, opened
	// and settled now), so no verdict is dropped
	// (client.settle_task.never_opened). The words of TerminalTaskStates
	// are taken; another word is taken or refused with ErrInvalidArgument
	// (client.settle_task.verdict_words, silent; client.refusal_order).
	SettleTask(ctx context.Context, taskID string, state TaskState) (bool, error)

	// Task is the task's record, or nil when none was opened or settled
	// (client.task.read).
	Task(ctx context.Context, taskID string) (*Task, error)

	// OpenTasks are the tasks not settled, oldest opening first (then in
	// the order their records were made: client.open_tasks.order), at most
	// EffectiveLimit(limit) (client.open_tasks.limit).
	OpenTasks(ctx context.Context, limit uint32) ([]Task, error)

	// TaskIsKnown is true when the task has, or had, a binding, or when an
	// intent's envelope names it (client.task_is_known.binding_or_intent;
	// client.envelope_task). The two are read in two statements
	// (client.task_is_known.two_statements).
	TaskIsKnown(ctx context.Context, taskID string) (bool, error)

	// TaskAttempt is the highest attempt among the intents whose envelope
	// names the task, 0 when there is none (client.task_attempt.max).
	TaskAttempt(ctx context.Context, taskID string) (int64, error)

	// InsertFault records a fault (its ID ignored) and returns its id,
	// greater than every earlier one (client.insert_fault.id_increasing).
	InsertFault(ctx context.Context, f Fault) (int64, error)

	// ListFaults are the task's faults in id order (client.list_faults.order).
	ListFaults(ctx context.Context, taskID string) ([]Fault, error)

	// Close releases the store. Operations after Close fail.
	Close() error
}

// Vocabularies are the contract's word sets (spec.Vocabulary).
var Vocabularies = []spec.Vocabulary{
	{Name: "IntentState", Fields: []string{"Intent.state"}, Words: []spec.Word{
		{Word: string(IntentPending), Means: "live: enqueued, never bumped"},
		{Word: string(IntentRetrying), Means: "live: bumped or deferred at least once"},
		{Word: string(IntentAccepted), Means: "settled: accepted (with its receipt); never live again"},
		{Word: string(IntentExhausted), Means: "settled: given up; never live again"},
	}, Note: "The store assigns these; a backend answers no other word."},
	{Name: "TaskState", Fields: []string{"settle_task.state", "Task.state"}, Words: []spec.Word{
		{Word: string(TaskPending), Means: "the task is open (the state `open_task` gives it)"},
		{Word: string(TaskCompleted), Means: "a verdict: the task completed"},
		{Word: string(TaskFailed), Means: "a verdict: the task failed"},
		{Word: string(TaskCancelled), Means: "a verdict: the task was cancelled"},
	}, Open: RuleSettleVerdictWords, Note: "`completed`, `failed` and `cancelled` are the verdicts."},
	{Name: "task kinds", Fields: []string{"open_task.kind", "Task.kind"}, Words: []spec.Word{
		{Word: KindRoot, Means: "the delivery started the chain at this role"},
		{Word: KindRelay, Means: "the delivery was relayed to this role"},
	}, Open: RuleOpenTaskKinds},
	{Name: "agent states", Fields: []string{"VersionedSession.agent_state"}, Free: true, Words: []spec.Word{
		{Word: AgentBooting, Means: "claimed by `active_sessions` unless its resource is closed"},
		{Word: AgentReady, Means: "claimed by `active_sessions`; suspended when its resource is closed"},
		{Word: AgentIdle, Means: "claimed by `active_sessions`; suspended when its resource is closed"},
		{Word: AgentWorking, Means: "never claimed"},
		{Word: AgentGone, Means: "exited: never claimed"},
	}, Note: "(client.active_sessions.claimed)"},
	{Name: "resource states", Fields: []string{"VersionedSession.resource_state"}, Free: true, Words: []spec.Word{
		{Word: ResourceOpen, Means: "open (any word but `closed` reads as open)"},
		{Word: ResourceClosed, Means: "closed: a ready or idle agent's session is claimed suspended, a booting one's is not claimed"},
	}, Note: "(client.active_sessions.claimed)"},
}
