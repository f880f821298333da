package adapters

import (
	"context"
	"sync"

	"github.com/storecheck/storecheck/spec"
)

// Answers counts the answers operations got, by store and by cell of the
// store's coverage matrix ("<operation>:<answer>", spec.CellKey): what a
// layer reached. It is safe for concurrent use.
type Answers struct {
	mu     sync.Mutex
	counts map[string]map[string]int
}

// Add counts the answer op of store got: its result, or its error. What
// the kit made up (a crash, a timeout, a fault it injected before the
// backend) is no answer of the backend and is not counted.
func (a *Answers) Add(c spec.Contract, op spec.Op, result any, err error) {
	key, ok := c.AnswerCell(op, result, spec.OutcomeKind(err))
	if !ok || spec.IsNotSent(err) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.counts == nil {
		a.counts = map[string]map[string]int{}
	}
	if a.counts[c.Name] == nil {
		a.counts[c.Name] = map[string]int{}
	}
	a.counts[c.Name][key]++
}

// Of is a copy of store's counts.
func (a *Answers) Of(store string) map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.counts[store] {
		out[k] = v
	}
	return out
}

// Counting is b with every answer of every Target it opens counted in a:
// what a layer that opens its stores through it (the suite) reached. The
// Targets forward Crash and Arm, and b's schema writer, so the layer sees
// the backend it would see without the count.
func Counting(b Driver, a *Answers) Driver { return countingBackend{b, a} }

type countingBackend struct {
	Driver
	answers *Answers
}

func (b countingBackend) Open(ctx context.Context, store string, o spec.OpenOptions) (Target, error) {
	t, err := b.Driver.Open(ctx, store, o)
	if err != nil {
		return t, err
	}
	c, _ := b.Driver.Contract(store)
	return countingTarget{Target: t, contract: c, answers: b.answers}, nil
}

// WriteForeignSchema forwards to b's schema writer (a backend without one
// writes no file: the capability it declares says so first).
func (b countingBackend) WriteForeignSchema(ctx context.Context, store, path, marker string, version int) error {
	w, ok := b.Driver.(SchemaWriter)
	if !ok {
		return spec.Errorf(spec.ErrBadRequest, "write_foreign_schema: the backend writes no %q file", store)
	}
	return w.WriteForeignSchema(ctx, store, path, marker, version)
}

type countingTarget struct {
	Target
	contract spec.Contract
	answers  *Answers
}

func (t countingTarget) Apply(ctx context.Context, op spec.Op) (any, error) {
	res, err := t.Target.Apply(ctx, op)
	t.answers.Add(t.contract, op, res, err)
	return res, err
}

func (t countingTarget) Crash() error           { return Crash(t.Target) }
func (t countingTarget) Arm(point string) error { return Arm(t.Target, point) }
