package adapters

import (
	"context"
	"sync"
	"time"

	"github.com/storecheck/storecheck/spec"
)

// Entry is one operation as a Recorder saw it: what was asked, what came
// back, when, and whether the outcome is definite. An operation that failed
// with an indefinite kind (io, a crash, a timeout) may or may not have taken
// effect; a checker must allow both.
type Entry struct {
	Op       spec.Op
	Result   any
	Err      error
	Definite bool
	Call     time.Time
	Return   time.Time
}

// Recorder is a Target that records every operation it passes on.
type Recorder struct {
	Target Target
	// Contract is the store's: whether an outcome is definite is its
	// Definite (spec.KindTable).
	Contract spec.Contract
	mu       sync.Mutex
	hist     []Entry
}

func (r *Recorder) Apply(ctx context.Context, op spec.Op) (any, error) {
	call := time.Now()
	v, err := r.Target.Apply(ctx, op)
	e := Entry{Op: op, Result: v, Err: err, Definite: r.Contract.Definite(err), Call: call, Return: time.Now()}
	r.mu.Lock()
	r.hist = append(r.hist, e)
	r.mu.Unlock()
	return v, err
}

func (r *Recorder) Close() error { return r.Target.Close() }

// History is every operation recorded so far, in the order they returned.
func (r *Recorder) History() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.hist...)
}
