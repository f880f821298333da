// Package model states each contract a second time, as a pure sequential
// function over an immutable state: given a state, an operation and the time
// it ran at, every outcome the contract allows and the state each one leaves.
// It is the oracle of both the linearizability checker (porcupine searches
// for an order of a concurrent history that these steps explain) and the
// simulator (which steps it in the simulated order).
//
// Where a seed leaves a choice to the backend (an id format, which of two
// broken rules is reported first, how a hidden helper reads its input), a
// step answers several branches, one per defensible reading, and a checker
// keeps every state an answer allows: the nondeterministic model of
// porcupine, held as a set of states. Values a backend mints (a batch id, a
// claim token, an event sequence number) are holes in the expected outcome:
// any value the rule allows fits, and the state keeps the one the backend
// answered (see Hole and Unify).
package model

import (
	"encoding/json"
	"fmt"
	"slices"

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
// kind, and the same result (see spec.SameResult). Holes are not filled:
// use Unify to match an expected outcome that has them.
func (o Outcome) Same(p Outcome) bool {
	return o.Kind == p.Kind && (o.Kind != "" || spec.SameResult(o.Result, p.Result))
}

// Fail is the outcome of an operation refused with kind k.
func Fail(k spec.Kind) Outcome { return Outcome{Kind: k} }

// OK is the outcome of an operation that yielded v.
func OK(v any) Outcome { return Outcome{Result: v} }

// Branch is one answer the contract allows an operation, and the state that
// answer leaves.
type Branch struct {
	// Outcome is the answer. Its result may hold holes (see Hole): values
	// the backend chooses, bound from what it answered.
	Outcome Outcome
	// Next is the state after the operation answered Outcome. Holes in it
	// that the answer binds are filled in (see Binder); holes it does not
	// bind stay until a later answer shows them.
	Next State
	// Rule names the rule of the contract's table (spec.Rule.ID) that
	// decides this answer, for reports: "" when the operation's rules all
	// agree on it.
	Rule string
	// Distinct lists values some holes must not take: a minted id never
	// names a thing that already exists.
	Distinct []Distinct
	// Match, when set, judges an answer in place of Outcome (a value the
	// contract bounds but does not fix, such as "greater than every earlier
	// one"): whether got is allowed, and the values it binds to the holes
	// of Next (numbers as decimal text). Outcome then says in words what is
	// allowed, for reports.
	Match func(got Outcome) (map[string]string, bool)
}

// Distinct says that the values bound to Holes, taken together, must differ
// from every tuple of Taken.
type Distinct struct {
	Holes []string
	Taken [][]string
}

// Model is one contract as a sequential specification.
type Model interface {
	// Contract is the store the model states.
	Contract() spec.Contract
	// Init is the state of an empty store.
	Init() State
	// Step applies op, run at nowMS (unix milliseconds, from the injected
	// clock), to s: every answer the contract allows, at least one, each
	// with the state it leaves. It never changes s; a refused operation
	// leaves s itself.
	Step(s State, op spec.Op, nowMS int64) []Branch
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

// Binder is a state that can hold holes (values a backend minted that no
// answer has shown yet): Bind fills them in.
type Binder interface {
	Bind(values map[string]string) State
}

// Eventful is a model that names the rare events an operation reaches from a
// state (a lease taken over after its expiry, a verdict contested), so the
// simulator can count what its runs covered. got is what the backend
// answered.
type Eventful interface {
	Events(s State, op spec.Op, nowMS int64, got Outcome) []string
}

// Splitter is a model some of whose operations are not one atomic step: a
// read the seed runs as several statements outside any transaction, each of
// which may see another moment of the store. Parts cuts op into the atomic
// steps it runs as, in the order it runs them (nil: it is one step). Split
// cuts op, answered got, into those parts with the answer each gave; ok is
// false when got does not say what each part answered (the operation is
// then judged as one step). A checker lets each part take effect at its own
// point inside the operation's span, in order.
type Splitter interface {
	Parts(op spec.Op) []spec.Op
	Split(op spec.Op, got Outcome) (parts []spec.Op, outs []Outcome, ok bool)
}

// Configurable is a model some of whose readings a backend declares (a
// capability of its hello) rather than the model learns from its answers.
type Configurable interface {
	Configure(caps spec.Capabilities) Model
}

// For is m for a backend that declared caps.
func For(m Model, caps spec.Capabilities) Model {
	if c, ok := m.(Configurable); ok {
		return c.Configure(caps)
	}
	return m
}

// One is the single branch of an operation whose rules fix the answer.
func One(next State, out Outcome) []Branch { return []Branch{{Outcome: out, Next: next}} }

// Refused is the branches of an operation that breaks several rules at
// once whose order the seed does not fix: any of their kinds, each leaving s.
func Refused(s State, rule string, kinds ...spec.Kind) []Branch {
	var out []Branch
	for _, k := range kinds {
		if !slices.ContainsFunc(out, func(b Branch) bool { return b.Outcome.Kind == k }) {
			out = append(out, Branch{Outcome: Fail(k), Next: s, Rule: rule})
		}
	}
	return out
}

// Judge returns the states in which s, stepped by op at nowMS, answers got:
// one for each branch that allows it. When none does, it returns nil and
// every branch, so a report can say what was allowed.
func Judge(m Model, s State, op spec.Op, nowMS int64, got Outcome) ([]State, []Branch) {
	branches := m.Step(s, op, nowMS)
	var next []State
	for _, b := range branches {
		if n, ok := b.judge(got); ok {
			next = AppendState(next, n)
		}
	}
	if len(next) == 0 {
		return nil, branches
	}
	return next, nil
}

// judge is whether b allows got, and the state it then leaves.
func (b Branch) judge(got Outcome) (State, bool) {
	values, ok := b.Allows(got)
	if !ok {
		return nil, false
	}
	return Bind(b.Next, values), true
}

// Allows reports whether got is this branch's answer, and the values got
// binds to the branch's holes.
func (b Branch) Allows(got Outcome) (map[string]string, bool) {
	if b.Match != nil {
		return b.Match(got)
	}
	if b.Outcome.Kind != got.Kind {
		return nil, false
	}
	if b.Outcome.Kind != "" {
		return nil, true
	}
	values, ok := Unify(b.Outcome.Result, got.Result)
	if !ok {
		return nil, false
	}
	for _, d := range b.Distinct {
		if !d.allows(values) {
			return nil, false
		}
	}
	return values, true
}

// Bind fills the holes of s that values binds (s unchanged when it holds
// no holes or is not a Binder).
func Bind(s State, values map[string]string) State {
	if len(values) == 0 {
		return s
	}
	if bs, ok := s.(Binder); ok {
		return bs.Bind(values)
	}
	return s
}

func (d Distinct) allows(values map[string]string) bool {
	tuple := make([]string, len(d.Holes))
	for i, h := range d.Holes {
		v, ok := values[h]
		if !ok {
			return true // not answered now: nothing to compare
		}
		tuple[i] = v
	}
	for _, t := range d.Taken {
		if slices.Equal(t, tuple) {
			return false
		}
	}
	return true
}

// Effects are the states op may leave s in when its answer is unknown (an
// indefinite operation): s itself, for an operation that never happened,
// and each branch's state, for one that did. Holes the answer would have
// bound stay in the states.
func Effects(m Model, s State, op spec.Op, nowMS int64) []State {
	out := []State{s}
	for _, b := range m.Step(s, op, nowMS) {
		out = AppendState(out, b.Next)
	}
	return out
}

// Expect is the answer a model gives op from s when a caller needs one
// (a workload predicting what it will be told, a differential test): the
// first branch, which each model orders as the reference reads the seed.
func Expect(m Model, s State, op spec.Op, nowMS int64) (State, Outcome) {
	b := m.Step(s, op, nowMS)[0]
	return b.Next, b.Outcome
}

// AppendState adds s to states unless an equal state is there already.
func AppendState(states []State, s State) []State {
	for _, t := range states {
		if t.Hash() == s.Hash() && t.Equal(s) {
			return states
		}
	}
	return append(states, s)
}

// Allowed describes the answers branches allow, one line each, with the
// rule that decides them: what a report tells a backend that answered
// something else.
func Allowed(branches []Branch) []string { return allowed(branches, true) }

// AllowedAnswers is Allowed without the rules: for an answer that breaks
// none (a bad_request: NoRuleOfTheContract), where naming them would read
// as blame.
func AllowedAnswers(branches []Branch) []string { return allowed(branches, false) }

func allowed(branches []Branch, rules bool) []string {
	var out []string
	for _, b := range branches {
		line := b.Outcome.String()
		if rules && b.Rule != "" {
			line += " (rule " + b.Rule + ")"
		}
		if !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

// Rules are the rules the branches name, in order, without repeats.
func Rules(branches []Branch) []string {
	var out []string
	for _, b := range branches {
		if b.Rule != "" && !slices.Contains(out, b.Rule) {
			out = append(out, b.Rule)
		}
	}
	return out
}

// Describe is an answer with its rule, for a trace.
func (b Branch) Describe() string {
	if b.Rule == "" {
		return b.Outcome.String()
	}
	return b.Outcome.String() + " [" + b.Rule + "]"
}

// Follow is Judge over a set of states: the states, among every state one of
// states leaves, that allow got. When none does it returns nil and every
// branch the states allowed.
func Follow(m Model, states []State, op spec.Op, nowMS int64, got Outcome) ([]State, []Branch) {
	var next []State
	var allowed []Branch
	for _, s := range states {
		ns, branches := Judge(m, s, op, nowMS, got)
		for _, n := range ns {
			next = AppendState(next, n)
		}
		allowed = append(allowed, branches...)
	}
	if len(next) == 0 {
		return nil, allowed
	}
	return next, nil
}
