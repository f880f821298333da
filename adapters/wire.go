package adapters

import (
	"encoding/json"

	"github.com/storecheck/storecheck/spec"
)

// The wire protocol (docs/protocol.md is its full description): one JSON
// object a line on the backend's stdin (requests) and stdout (replies), logs
// on stderr. Every request has an id; every reply names the id it answers,
// in any order.

// ProtocolVersion is the version of the wire protocol this kit speaks.
const ProtocolVersion = 1

// Request types.
const (
	TypeHello    = "hello"
	TypeOpen     = "open"
	TypeClose    = "close"
	TypeOp       = "op"
	TypeArmCrash = "arm_crash"
	// TypeResume lets an operation paused at a yield point go on. It names
	// the operation's request id and gets no reply.
	TypeResume = "resume"
)

// Request is one line the kit writes to the backend.
type Request struct {
	ID   uint64 `json:"id"`
	Type string `json:"type"`
	// Version is the kit's protocol version (hello).
	Version int `json:"version,omitempty"`
	// Store names the contract (open, op).
	Store string `json:"store,omitempty"`
	// Path is the database file to open; InMemory asks for a private
	// in-memory database instead (open).
	Path     string `json:"path,omitempty"`
	InMemory bool   `json:"in_memory,omitempty"`
	// Handle is an open database, as open answered it (op, close).
	Handle uint64 `json:"handle,omitempty"`
	// Op is the operation's stable name; Args its value's JSON encoding (op).
	Op   string          `json:"op,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// NowMS is the kit's clock in unix milliseconds (open, op): the only
	// time a backend may use.
	NowMS int64 `json:"now_ms,omitempty"`
	// TimeoutMS is how long the kit waits for this reply (open, op); a
	// backend should give up waiting for locks by then.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Point and Nth arm a crash point (arm_crash).
	Point string `json:"point,omitempty"`
	Nth   int    `json:"nth,omitempty"`
	// Yields asks the backend to pause the operation at each of its yield
	// points (op; only of a backend that declares yields).
	Yields bool `json:"yields,omitempty"`
}

// Reply is one line the backend writes: the id it answers and either a
// result or an error.
type Reply struct {
	ID     *uint64         `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *WireError      `json:"error,omitempty"`
	// Yield, instead of a result or an error, says the operation of
	// request ID reached the yield point it names ("<op>/<place>") and
	// waits for a resume.
	Yield string `json:"yield,omitempty"`
}

// WireError is a failed request: a kind from the contract's closed set (or
// bad_request), and a message for people.
type WireError struct {
	Kind    spec.Kind `json:"kind"`
	Message string    `json:"message"`
}

// Hello is the backend's answer to hello.
type Hello struct {
	Version      int          `json:"version"`
	Name         string       `json:"name"`
	Stores       []string     `json:"stores"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities are the optional features a backend declares in its hello.
// The kit checks nothing a backend does not declare, and guesses nothing.
//
// Every capability is optional in the hello: one left out is not declared.
type Capabilities struct {
	Files         bool `json:"files,omitempty"`
	SharedFiles   bool `json:"shared_files,omitempty"`
	InMemory      bool `json:"in_memory,omitempty"`
	SQLiteLocking bool `json:"sqlite_locking,omitempty"`
	// ClientSchemaTable: the kit may write a client store file of another
	// schema marker or version itself, to check the gate at open.
	ClientSchemaTable bool `json:"client_schema_table,omitempty"`
	// SnapshotRevision: how the continuity store computes snapshot
	// revisions, "sha256" (the default) or "opaque".
	SnapshotRevision string `json:"snapshot_revision,omitempty"`
	// Yields: an op request that asks for them is paused at each yield
	// point (a line {"id": N, "yield": "<op>/<place>"}) until the kit sends
	// {"type": "resume", "id": N}.
	Yields bool `json:"yields,omitempty"`
	// CrashPoints lists, per store, the crash points arm_crash accepts.
	CrashPoints map[string][]string `json:"crash_points,omitempty"`
}

// Opened is the backend's answer to open.
type Opened struct {
	Handle uint64 `json:"handle"`
}

// Error kinds of the protocol itself. bad_request is the one a backend
// sends; the others the kit's exec adapter makes up when a backend does not
// answer as the protocol says.
const (
	// ErrBadRequest: the backend could not take the request (not JSON, an
	// unknown type, store, operation or handle, bad args). Definite: the
	// backend did nothing.
	ErrBadRequest spec.Kind = "bad_request"
	// ErrCanceled: the caller stopped waiting (its context ended) before
	// the reply came. Indefinite.
	ErrCanceled spec.Kind = "canceled"
	// ErrTimeout: no reply within the per-operation timeout; the kit kills
	// the backend. Indefinite.
	ErrTimeout spec.Kind = "timeout"
	// ErrCrashed: the backend process exited (or was killed) with the
	// request in flight. Indefinite.
	ErrCrashed = spec.ErrCrashed
	// ErrBackendFailure: the backend broke the protocol (a line that is not
	// JSON, a reply to an unknown id, an unknown error kind, a result of the
	// wrong type, an endless line); the kit kills it. Indefinite.
	ErrBackendFailure spec.Kind = "backend_failure"
)

// KitKind describes one of the protocol's own error kinds.
type KitKind struct {
	Kind     spec.Kind
	Definite bool
	// SentBy is "backend" or "kit" (made up by the exec adapter).
	SentBy string
	Means  string
}

// KitKinds are the protocol's own error kinds, in a fixed order.
var KitKinds = []KitKind{
	{ErrBadRequest, true, "backend", "the request was malformed or named an unknown type, store, operation, handle or crash point; nothing happened"},
	{ErrCanceled, false, "kit", "the caller stopped waiting before the reply came"},
	{ErrTimeout, false, "kit", "no reply within the per-operation timeout; the backend is killed"},
	{ErrCrashed, false, "kit", "the backend process exited with the request in flight"},
	{ErrBackendFailure, false, "kit", "the backend broke the protocol; it is killed"},
}

// Definite reports whether an error of kind k means that the operation did
// not happen. Every contract kind is definite (a failed operation changes
// nothing); of the protocol's kinds only bad_request is. An error with no
// kind at all is indefinite.
func Definite(k spec.Kind) bool {
	for _, kk := range KitKinds {
		if kk.Kind == k {
			return kk.Definite
		}
	}
	for _, c := range Contracts {
		if c.HasKind(k) {
			return true
		}
	}
	return false
}

// strictUnmarshal is spec.StrictUnmarshal.
var strictUnmarshal = spec.StrictUnmarshal
