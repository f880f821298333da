package client

import (
	"context"
	"fmt"
	"time"

	"github.com/storecheck/storecheck/spec"
)

// The client operations as values, one per Store method. The result each one
// yields from Apply is named on it.

// EnqueueIntent yields bool.
type EnqueueIntent struct {
	OpID     string       `json:"op_id"`
	Envelope spec.RawJSON `json:"envelope"`
}

// GetIntent yields *Intent (nil when none). Its name is "intent".
type GetIntent struct {
	OpID string `json:"op_id"`
}

// DueIntents yields []Intent.
type DueIntents struct {
	Now   time.Time `json:"now"`
	Limit uint32    `json:"limit"`
}

// BumpIntent yields bool.
type BumpIntent struct {
	OpID          string    `json:"op_id"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error"`
}

// DeferIntent yields bool.
type DeferIntent struct {
	OpID          string    `json:"op_id"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error"`
}

// AcceptIntent yields bool.
type AcceptIntent struct {
	OpID    string       `json:"op_id"`
	Receipt spec.RawJSON `json:"receipt"`
}

// ExhaustIntent yields bool.
type ExhaustIntent struct {
	OpID      string `json:"op_id"`
	LastError string `json:"last_error"`
}

// DeleteIntent yields bool.
type DeleteIntent struct {
	OpID string `json:"op_id"`
}

// PendingIntentCount yields int64.
type PendingIntentCount struct{}

// FlushOrder yields []Intent.
type FlushOrder struct{}

// AppendEvent yields int64.
type AppendEvent struct {
	Type string       `json:"type"`
	Data spec.RawJSON `json:"data"`
}

// EventsSince yields []Event.
type EventsSince struct {
	Seq   int64  `json:"seq"`
	Limit uint32 `json:"limit"`
}

// EventHead yields int64.
type EventHead struct{}

// PutOutHead yields nil.
type PutOutHead struct {
	TaskID string `json:"task_id"`
	Head   string `json:"head"`
}

// GetOutHead yields *string. Its name is "out_head".
type GetOutHead struct {
	TaskID string `json:"task_id"`
}

// PutProse yields nil.
type PutProse struct {
	Role     string `json:"role"`
	Prose    string `json:"prose"`
	SpecHash string `json:"spec_hash"`
}

// GetProse yields *Prose. Its name is "prose".
type GetProse struct {
	Role string `json:"role"`
}

// PutConfig yields nil.
type PutConfig struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// GetConfig yields *string. Its name is "config".
type GetConfig struct {
	Key string `json:"key"`
}

// UpsertSession yields bool.
type UpsertSession struct {
	TaskID  string           `json:"task_id"`
	Version VersionedSession `json:"version"`
}

// BumpSessionVersion yields bool.
type BumpSessionVersion struct {
	TaskID     string `json:"task_id"`
	Generation uint64 `json:"generation"`
	Seq        uint64 `json:"seq"`
}

// GetSession yields *SessionRecord.
type GetSession struct {
	TaskID string `json:"task_id"`
}

// BindTask yields bool.
type BindTask struct {
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
}

// ReleaseBinding yields bool.
type ReleaseBinding struct {
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
}

// ActiveSessions yields []LiveSession.
type ActiveSessions struct{}

// OpenTask yields bool.
type OpenTask struct {
	Causality Causality `json:"causality"`
	Kind      string    `json:"kind"`
}

// SettleTask yields bool.
type SettleTask struct {
	TaskID string    `json:"task_id"`
	State  TaskState `json:"state"`
}

// GetTask yields *Task. Its name is "task".
type GetTask struct {
	TaskID string `json:"task_id"`
}

// OpenTasks yields []Task.
type OpenTasks struct {
	Limit uint32 `json:"limit"`
}

// TaskIsKnown yields bool.
type TaskIsKnown struct {
	TaskID string `json:"task_id"`
}

// TaskAttempt yields int64.
type TaskAttempt struct {
	TaskID string `json:"task_id"`
}

// InsertFault yields int64.
type InsertFault struct {
	Fault Fault `json:"fault"`
}

// ListFaults yields []Fault.
type ListFaults struct {
	TaskID string `json:"task_id"`
}

func (EnqueueIntent) Name() string      { return "enqueue_intent" }
func (GetIntent) Name() string          { return "intent" }
func (DueIntents) Name() string         { return "due_intents" }
func (BumpIntent) Name() string         { return "bump_intent" }
func (DeferIntent) Name() string        { return "defer_intent" }
func (AcceptIntent) Name() string       { return "accept_intent" }
func (ExhaustIntent) Name() string      { return "exhaust_intent" }
func (DeleteIntent) Name() string       { return "delete_intent" }
func (PendingIntentCount) Name() string { return "pending_intent_count" }
func (FlushOrder) Name() string         { return "flush_order" }
func (AppendEvent) Name() string        { return "append_event" }
func (EventsSince) Name() string        { return "events_since" }
func (EventHead) Name() string          { return "event_head" }
func (PutOutHead) Name() string         { return "put_out_head" }
func (GetOutHead) Name() string         { return "out_head" }
func (PutProse) Name() string           { return "put_prose" }
func (GetProse) Name() string           { return "prose" }
func (PutConfig) Name() string          { return "put_config" }
func (GetConfig) Name() string          { return "config" }
func (UpsertSession) Name() string      { return "upsert_session" }
func (BumpSessionVersion) Name() string { return "bump_session_version" }
func (GetSession) Name() string         { return "get_session" }
func (BindTask) Name() string           { return "bind_task" }
func (ReleaseBinding) Name() string     { return "release_binding" }
func (ActiveSessions) Name() string     { return "active_sessions" }
func (OpenTask) Name() string           { return "open_task" }
func (SettleTask) Name() string         { return "settle_task" }
func (GetTask) Name() string            { return "task" }
func (OpenTasks) Name() string          { return "open_tasks" }
func (TaskIsKnown) Name() string        { return "task_is_known" }
func (TaskAttempt) Name() string        { return "task_attempt" }
func (InsertFault) Name() string        { return "insert_fault" }
func (ListFaults) Name() string         { return "list_faults" }

func (EnqueueIntent) Result() any      { return false }
func (GetIntent) Result() any          { return (*Intent)(nil) }
func (DueIntents) Result() any         { return ([]Intent)(nil) }
func (BumpIntent) Result() any         { return false }
func (DeferIntent) Result() any        { return false }
func (AcceptIntent) Result() any       { return false }
func (ExhaustIntent) Result() any      { return false }
func (DeleteIntent) Result() any       { return false }
func (PendingIntentCount) Result() any { return int64(0) }
func (FlushOrder) Result() any         { return ([]Intent)(nil) }
func (AppendEvent) Result() any        { return int64(0) }
func (EventsSince) Result() any        { return ([]Event)(nil) }
func (EventHead) Result() any          { return int64(0) }
func (PutOutHead) Result() any         { return nil }
func (GetOutHead) Result() any         { return (*string)(nil) }
func (PutProse) Result() any           { return nil }
func (GetProse) Result() any           { return (*Prose)(nil) }
func (PutConfig) Result() any          { return nil }
func (GetConfig) Result() any          { return (*string)(nil) }
func (UpsertSession) Result() any      { return false }
func (BumpSessionVersion) Result() any { return false }
func (GetSession) Result() any         { return (*SessionRecord)(nil) }
func (BindTask) Result() any           { return false }
func (ReleaseBinding) Result() any     { return false }
func (ActiveSessions) Result() any     { return ([]LiveSession)(nil) }
func (OpenTask) Result() any           { return false }
func (SettleTask) Result() any         { return false }
func (GetTask) Result() any            { return (*Task)(nil) }
func (OpenTasks) Result() any          { return ([]Task)(nil) }
func (TaskIsKnown) Result() any        { return false }
func (TaskAttempt) Result() any        { return int64(0) }
func (InsertFault) Result() any        { return int64(0) }
func (ListFaults) Result() any         { return ([]Fault)(nil) }

// Ops lists one zero value of every operation, in the contract's order.
var Ops = []spec.Op{EnqueueIntent{}, GetIntent{}, DueIntents{}, BumpIntent{}, DeferIntent{},
	AcceptIntent{}, ExhaustIntent{}, DeleteIntent{}, PendingIntentCount{}, FlushOrder{},
	AppendEvent{}, EventsSince{}, EventHead{}, PutOutHead{}, GetOutHead{}, PutProse{}, GetProse{},
	PutConfig{}, GetConfig{}, UpsertSession{}, BumpSessionVersion{}, GetSession{}, BindTask{},
	ReleaseBinding{}, ActiveSessions{}, OpenTask{}, SettleTask{}, GetTask{}, OpenTasks{},
	TaskIsKnown{}, TaskAttempt{}, InsertFault{}, ListFaults{}}

// Apply performs op on s and returns the op's result value.
func Apply(ctx context.Context, s Store, op spec.Op) (any, error) {
	switch o := op.(type) {
	case EnqueueIntent:
		return s.EnqueueIntent(ctx, o.OpID, o.Envelope)
	case GetIntent:
		return s.Intent(ctx, o.OpID)
	case DueIntents:
		return s.DueIntents(ctx, o.Now, o.Limit)
	case BumpIntent:
		return s.BumpIntent(ctx, o.OpID, o.NextAttemptAt, o.LastError)
	case DeferIntent:
		return s.DeferIntent(ctx, o.OpID, o.NextAttemptAt, o.LastError)
	case AcceptIntent:
		return s.AcceptIntent(ctx, o.OpID, o.Receipt)
	case ExhaustIntent:
		return s.ExhaustIntent(ctx, o.OpID, o.LastError)
	case DeleteIntent:
		return s.DeleteIntent(ctx, o.OpID)
	case PendingIntentCount:
		return s.PendingIntentCount(ctx)
	case FlushOrder:
		return s.FlushOrder(ctx)
	case AppendEvent:
		return s.AppendEvent(ctx, o.Type, o.Data)
	case EventsSince:
		return s.EventsSince(ctx, o.Seq, o.Limit)
	case EventHead:
		return s.EventHead(ctx)
	case PutOutHead:
		return nil, s.PutOutHead(ctx, o.TaskID, o.Head)
	case GetOutHead:
		return s.OutHead(ctx, o.TaskID)
	case PutProse:
		return nil, s.PutProse(ctx, o.Role, o.Prose, o.SpecHash)
	case GetProse:
		return s.Prose(ctx, o.Role)
	case PutConfig:
		return nil, s.PutConfig(ctx, o.Key, o.Value)
	case GetConfig:
		return s.Config(ctx, o.Key)
	case UpsertSession:
		return s.UpsertSession(ctx, o.TaskID, o.Version)
	case BumpSessionVersion:
		return s.BumpSessionVersion(ctx, o.TaskID, o.Generation, o.Seq)
	case GetSession:
		return s.GetSession(ctx, o.TaskID)
	case BindTask:
		return s.BindTask(ctx, o.SessionID, o.TaskID)
	case ReleaseBinding:
		return s.ReleaseBinding(ctx, o.SessionID, o.TaskID)
	case ActiveSessions:
		return s.ActiveSessions(ctx)
	case OpenTask:
		return s.OpenTask(ctx, o.Causality, o.Kind)
	case SettleTask:
		return s.SettleTask(ctx, o.TaskID, o.State)
	case GetTask:
		return s.Task(ctx, o.TaskID)
	case OpenTasks:
		return s.OpenTasks(ctx, o.Limit)
	case TaskIsKnown:
		return s.TaskIsKnown(ctx, o.TaskID)
	case TaskAttempt:
		return s.TaskAttempt(ctx, o.TaskID)
	case InsertFault:
		return s.InsertFault(ctx, o.Fault)
	case ListFaults:
		return s.ListFaults(ctx, o.TaskID)
	}
	return nil, fmt.Errorf("client: %T is not a client operation", op)
}

// Proxy is a Store whose every call becomes an operation value handed to an
// Applier: a process over the wire, a recorder, a fault injector. It is how
// the suite and the checkers drive any backend through one seam.
type Proxy struct {
	Target spec.Applier
}

var _ Store = Proxy{}

// call applies op and answers its result as T; do applies an op that yields
// nothing.
func call[T any](ctx context.Context, c Proxy, op spec.Op) (T, error) {
	return spec.Call[T](ctx, c.Target, StoreName, op)
}

func (c Proxy) do(ctx context.Context, op spec.Op) error { return spec.Do(ctx, c.Target, op) }

func (c Proxy) EnqueueIntent(ctx context.Context, opID string, env spec.RawJSON) (bool, error) {
	return call[bool](ctx, c, EnqueueIntent{OpID: opID, Envelope: env})
}

func (c Proxy) Intent(ctx context.Context, opID string) (*Intent, error) {
	return call[*Intent](ctx, c, GetIntent{OpID: opID})
}

func (c Proxy) DueIntents(ctx context.Context, now time.Time, limit uint32) ([]Intent, error) {
	return call[[]Intent](ctx, c, DueIntents{Now: now, Limit: limit})
}

func (c Proxy) BumpIntent(ctx context.Context, opID string, next time.Time, lastError string) (bool, error) {
	return call[bool](ctx, c, BumpIntent{OpID: opID, NextAttemptAt: next, LastError: lastError})
}

func (c Proxy) DeferIntent(ctx context.Context, opID string, next time.Time, lastError string) (bool, error) {
	return call[bool](ctx, c, DeferIntent{OpID: opID, NextAttemptAt: next, LastError: lastError})
}

func (c Proxy) AcceptIntent(ctx context.Context, opID string, receipt spec.RawJSON) (bool, error) {
	return call[bool](ctx, c, AcceptIntent{OpID: opID, Receipt: receipt})
}

func (c Proxy) ExhaustIntent(ctx context.Context, opID string, lastError string) (bool, error) {
	return call[bool](ctx, c, ExhaustIntent{OpID: opID, LastError: lastError})
}

func (c Proxy) DeleteIntent(ctx context.Context, opID string) (bool, error) {
	return call[bool](ctx, c, DeleteIntent{OpID: opID})
}

func (c Proxy) PendingIntentCount(ctx context.Context) (int64, error) {
	return call[int64](ctx, c, PendingIntentCount{})
}

func (c Proxy) FlushOrder(ctx context.Context) ([]Intent, error) {
	return call[[]Intent](ctx, c, FlushOrder{})
}

func (c Proxy) AppendEvent(ctx context.Context, eventType string, data spec.RawJSON) (int64, error) {
	return call[int64](ctx, c, AppendEvent{Type: eventType, Data: data})
}

func (c Proxy) EventsSince(ctx context.Context, seq int64, limit uint32) ([]Event, error) {
	return call[[]Event](ctx, c, EventsSince{Seq: seq, Limit: limit})
}

func (c Proxy) EventHead(ctx context.Context) (int64, error) {
	return call[int64](ctx, c, EventHead{})
}

func (c Proxy) PutOutHead(ctx context.Context, taskID, head string) error {
	return c.do(ctx, PutOutHead{TaskID: taskID, Head: head})
}

func (c Proxy) OutHead(ctx context.Context, taskID string) (*string, error) {
	return call[*string](ctx, c, GetOutHead{TaskID: taskID})
}

func (c Proxy) PutProse(ctx context.Context, role, prose, specHash string) error {
	return c.do(ctx, PutProse{Role: role, Prose: prose, SpecHash: specHash})
}

func (c Proxy) Prose(ctx context.Context, role string) (*Prose, error) {
	return call[*Prose](ctx, c, GetProse{Role: role})
}

func (c Proxy) PutConfig(ctx context.Context, key, value string) error {
	return c.do(ctx, PutConfig{Key: key, Value: value})
}

func (c Proxy) Config(ctx context.Context, key string) (*string, error) {
	return call[*string](ctx, c, GetConfig{Key: key})
}

func (c Proxy) UpsertSession(ctx context.Context, taskID string, v VersionedSession) (bool, error) {
	return call[bool](ctx, c, UpsertSession{TaskID: taskID, Version: v})
}

func (c Proxy) BumpSessionVersion(ctx context.Context, taskID string, generation, seq uint64) (bool, error) {
	return call[bool](ctx, c, BumpSessionVersion{TaskID: taskID, Generation: generation, Seq: seq})
}

func (c Proxy) GetSession(ctx context.Context, taskID string) (*SessionRecord, error) {
	return call[*SessionRecord](ctx, c, GetSession{TaskID: taskID})
}

func (c Proxy) BindTask(ctx context.Context, sessionID, taskID string) (bool, error) {
	return call[bool](ctx, c, BindTask{SessionID: sessionID, TaskID: taskID})
}

func (c Proxy) ReleaseBinding(ctx context.Context, sessionID, taskID string) (bool, error) {
	return call[bool](ctx, c, ReleaseBinding{SessionID: sessionID, TaskID: taskID})
}

func (c Proxy) ActiveSessions(ctx context.Context) ([]LiveSession, error) {
	return call[[]LiveSession](ctx, c, ActiveSessions{})
}

func (c Proxy) OpenTask(ctx context.Context, cz Causality, kind string) (bool, error) {
	return call[bool](ctx, c, OpenTask{Causality: cz, Kind: kind})
}

func (c Proxy) SettleTask(ctx context.Context, taskID string, state TaskState) (bool, error) {
	return call[bool](ctx, c, SettleTask{TaskID: taskID, State: state})
}

func (c Proxy) Task(ctx context.Context, taskID string) (*Task, error) {
	return call[*Task](ctx, c, GetTask{TaskID: taskID})
}

func (c Proxy) OpenTasks(ctx context.Context, limit uint32) ([]Task, error) {
	return call[[]Task](ctx, c, OpenTasks{Limit: limit})
}

func (c Proxy) TaskIsKnown(ctx context.Context, taskID string) (bool, error) {
	return call[bool](ctx, c, TaskIsKnown{TaskID: taskID})
}

func (c Proxy) TaskAttempt(ctx context.Context, taskID string) (int64, error) {
	return call[int64](ctx, c, TaskAttempt{TaskID: taskID})
}

func (c Proxy) InsertFault(ctx context.Context, f Fault) (int64, error) {
	return call[int64](ctx, c, InsertFault{Fault: f})
}

func (c Proxy) ListFaults(ctx context.Context, taskID string) ([]Fault, error) {
	return call[[]Fault](ctx, c, ListFaults{TaskID: taskID})
}

// Close closes the target when it can be closed.
func (c Proxy) Close() error { return spec.CloseTarget(c.Target) }

// Contract describes the client store to the generic parts of the kit.
var Contract = spec.Contract{Name: StoreName, Ops: Ops, Kinds: Kinds, Rules: Rules, Vocabularies: Vocabularies, Refusals: Refusals,
	DurabilityDeclared: true}

// Crash ends the target as a killed process would (see adapters.Crasher),
// when it can; otherwise it closes it.
func (c Proxy) Crash() error { return spec.CrashTarget(c.Target) }
