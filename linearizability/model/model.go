// Package model states each contract a second time, as a pure sequential
// function over an immutable state: given a state, an operation and the time
// it ran at, the next state and the one outcome the contract allows. It is the
// oracle of both the linearizability checker (porcupine searches for an order
// of a concurrent history that these steps explain) and the simulator (which
// steps it in the simulated order).
package model

import (
	"encoding/json"
	"fmt"

	"github.com/storecheck/storecheck/spec"
)

// Outcome is what an operation answered: a result, or an error kind.
type Outcome struct {
	Result any
	Kind   spec.Kind
}

func (o Outcome) String() string {
	if o.Kind != "" {
		return string(o.Kind)
	}
	if o.Result == nil {
		return "ok"
	}
	// JSON, not %v: pointers print as addresses, and map order would leak
	// into traces; encoding/json sorts keys.
	b, err := json.Marshal(o.Result)
	if err != nil {
		return fmt.Sprintf("%v", o.Result)
	}
	return string(b)
}

// Same reports whether two outcomes are the same to the contract: the same
// kind, and the same result (see spec.SameResult).
func (o Outcome) Same(p Outcome) bool {
	return o.Kind == p.Kind && (o.Kind != "" || spec.SameResult(o.Result, p.Result))
}

// Fail is the outcome of an operation refused with kind k.
func Fail(k spec.Kind) Outcome { return Outcome{Kind: k} }

// OK is the outcome of an operation that yielded v.
func OK(v any) Outcome { return Outcome{Result: v} }

// Model is one contract as a sequential specification.
type Model interface {
	// Contract is the store the model states.
	Contract() spec.Contract
	// Init is the state of an empty store.
	Init() State
	// Step applies op, run at nowMS (unix milliseconds, from the injected
	// clock), to s. It never changes s. A refused operation returns s itself.
	Step(s State, op spec.Op, nowMS int64) (State, Outcome)
	// Keys names what op reads or writes, so that a history splits into
	// independent parts; a key "<prefix>*" names every key of that prefix
	// (a scan of a table); nil means the operation may touch anything.
	Keys(op spec.Op) []string
}

// State is a model's state: immutable, comparable with Equal, hashable.
type State interface {
	Equal(State) bool
	Hash() uint64
	String() string
}

// Eventful is a model that names the rare events an operation reaches from a
// state (a lease taken over after its expiry, a verdict contested), so the
// simulator can count what its runs covered.
type Eventful interface {
	Events(s State, op spec.Op, nowMS int64) []string
}
