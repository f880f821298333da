package adapters

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	// TypeWriteForeignSchema asks a backend that declares
	// client_schema_writer to write, at path, a new file of store that its
	// own open reads as carrying marker at version (answered null), so the
	// kit can check the schema gate whatever the backend's layout.
	TypeWriteForeignSchema = "write_foreign_schema"
)

// Request is one line the kit writes to the backend.
type Request struct {
	ID   uint64 `json:"id"`
	Type string `json:"type"`
	// Version is the kit's protocol version (hello), or the schema version
	// of the file to write (write_foreign_schema; absent means 0).
	Version int `json:"version,omitempty"`
	// Store names the contract (open, op, write_foreign_schema).
	Store string `json:"store,omitempty"`
	// Path is the database file to open; InMemory asks for a private
	// in-memory database instead (open). The file to write
	// (write_foreign_schema).
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
	// Marker is the schema marker of the file to write
	// (write_foreign_schema).
	Marker string `json:"marker,omitempty"`
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

// Capabilities are the optional features a backend declares in its hello
// (spec.Capabilities, inline), and the crash points it can be crashed at.
// The kit checks nothing a backend does not declare, and guesses nothing.
//
// Every capability is optional in the hello: one left out is not declared.
type Capabilities struct {
	spec.Capabilities
	// Yields: an op request that asks for them is paused at each yield
	// point (a line {"id": N, "yield": "<op>/<place>"}) until the kit sends
	// {"type": "resume", "id": N}.
	Yields bool `json:"yields,omitempty"`
	// CrashPoints lists, per store, the crash points arm_crash accepts.
	CrashPoints map[string][]string `json:"crash_points,omitempty"`
	// Stores gives a store capabilities of its own, in place of the ones
	// above (crash points aside: they are per store already), for a backend
	// whose stores differ: one store safe across processes, another
	// designed for one. Read a store's with Hello.CapabilitiesOf.
	Stores StoreCapabilityMap `json:"stores,omitempty"`
}

// StoreCapabilities are one store's own capabilities
// (capabilities.stores.<store> in the hello): every member of the
// backend-wide ones but crash_points and stores. Absent is not declared,
// as there.
type StoreCapabilities struct {
	spec.Capabilities
	Yields bool `json:"yields,omitempty"`
}

// StoreCapabilityMap is capabilities.stores: store name to its own
// capabilities, each decoded strictly, a failure naming the store.
type StoreCapabilityMap map[string]StoreCapabilities

func (m *StoreCapabilityMap) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("capabilities.stores: want an object of store name to capabilities: %v", err)
	}
	out := StoreCapabilityMap{}
	for _, store := range slices.Sorted(maps.Keys(raw)) {
		var c StoreCapabilities
		if err := strictUnmarshal(raw[store], &c); err != nil {
			return fmt.Errorf("capabilities.stores.%s: %v", store, err)
		}
		out[store] = c
	}
	*m = out
	return nil
}

// CapabilitiesOf is what the backend declares for store: the store's own
// capabilities when its hello gives them (capabilities.stores), else the
// backend-wide ones. Every check of a store reads its capabilities here.
func (h Hello) CapabilitiesOf(store string) Capabilities {
	c := h.Capabilities
	if own, ok := c.Stores[store]; ok {
		c.Capabilities, c.Yields = own.Capabilities, own.Yields
	}
	c.Stores = nil
	return c
}

// check says what is wrong with a hello beyond its shape: a store it does
// not declare given capabilities of its own ("" when nothing).
func (h Hello) check() string {
	for _, store := range slices.Sorted(maps.Keys(h.Capabilities.Stores)) {
		if !slices.Contains(h.Stores, store) {
			return fmt.Sprintf("capabilities.stores.%s: %q is not one of the stores the hello declares (%s)", store, store, strings.Join(h.Stores, ", "))
		}
	}
	return ""
}

// Opened is the backend's answer to open.
type Opened struct {
	Handle uint64 `json:"handle"`
}

// The protocol's own error kinds are spec's (spec.KindTable has them, each
// with its definiteness): bad_request is the one a backend sends; canceled,
// timeout, crashed and backend_failure the exec adapter makes up when a
// backend does not answer as the protocol says.

// strictUnmarshal is spec.StrictUnmarshal.
var strictUnmarshal = spec.StrictUnmarshal

// The operation codec: the one encoding of operations' arguments and
// results, both ways, that the exec adapter (the kit's side) and serve (the
// reference's side) use, and that docs/protocol.md's examples are made with.

// EncodeArgs is op's arguments as an op request carries them.
func EncodeArgs(op spec.Op) (json.RawMessage, error) { return Encode(op) }

// Encode is a value of the contracts (an operation, a result, one of their
// types) as it travels: encoding/json with the contracts' own marshalers
// (spec.RawJSON is a string holding its text; time.Time an RFC 3339
// string; []byte a base64 string).
func Encode(v any) (json.RawMessage, error) { return json.Marshal(v) }

// DecodeArgs is the operation of contract c named name, decoded from its
// arguments strictly (spec.Contract.DecodeOp).
func DecodeArgs(c spec.Contract, name string, args json.RawMessage) (spec.Op, error) {
	return c.DecodeOp(name, args)
}

// DecodeResult is op's result decoded strictly from a reply's result
// (spec.DecodeResult): unknown and missing fields are refused.
func DecodeResult(op spec.Op, raw json.RawMessage) (any, error) { return spec.DecodeResult(op, raw) }
