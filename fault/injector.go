package fault

import (
	"context"
	"sync"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
)

// Injector is a Target that passes operations on to another and injects
// the adapter-boundary faults planned on it (Busy, IOError, LostReply,
// Pause), each on the next operations it matches.
//
// Busy and IOError answer with the contract's io kind, as a busy or failing
// database would, but before the operation reaches the backend: the kit
// knows it changed nothing, so the error is marked spec.NotSent and is
// definite, although a store's own io is not (spec.KindTable).
type Injector struct {
	target adapters.Target
	ioKind spec.Kind
	mu     sync.Mutex
	plans  []Plan
}

// Plan is what an Injector does to the next Times operations (1 when 0)
// named Op (any when ""): fail them before they are sent, with the io kind
// and the message IO; or send them, then lose their replies; or hold them
// for Pause before they are sent.
type Plan struct {
	Op    string
	Times int
	IO    string
	Lose  bool
	Pause time.Duration
}

// Wrap puts an Injector in front of t, a Target of store. A busy or failing
// database yields spec.ErrIO, the kind every contract has.
func Wrap(t adapters.Target, store string) *Injector {
	return &Injector{target: t, ioKind: spec.ErrIO}
}

// Plan plans p on the next operations it matches.
func (in *Injector) Plan(p Plan) {
	p.Times = max(p.Times, 1)
	in.mu.Lock()
	in.plans = append(in.plans, p)
	in.mu.Unlock()
}

// next takes the first plan matching op.
func (in *Injector) next(op string) (Plan, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, p := range in.plans {
		if p.Op == "" || p.Op == op {
			p.Times--
			if p.Times <= 0 {
				in.plans = append(in.plans[:i], in.plans[i+1:]...)
			} else {
				in.plans[i] = p
			}
			return p, true
		}
	}
	return Plan{}, false
}

func (in *Injector) Apply(ctx context.Context, op spec.Op) (any, error) {
	p, ok := in.next(op.Name())
	if !ok {
		return in.target.Apply(ctx, op)
	}
	switch {
	case p.IO != "":
		if in.ioKind == "" {
			return nil, spec.NotSent(spec.Errorf(spec.ErrBadRequest, "%s: fault: the store has no io kind to inject", op.Name()))
		}
		return nil, spec.NotSent(spec.Errorf(in.ioKind, "%s: %s", op.Name(), p.IO))
	case p.Lose:
		in.target.Apply(ctx, op)
		return nil, spec.Errorf(spec.ErrTimeout, "%s: the reply was lost (fault.LostReply)", op.Name())
	case p.Pause > 0:
		select {
		case <-time.After(p.Pause):
		case <-ctx.Done():
			return nil, spec.Errorf(spec.ErrCanceled, "%s: paused, then canceled: %w", op.Name(), ctx.Err())
		}
	}
	return in.target.Apply(ctx, op)
}

func (in *Injector) Close() error { return in.target.Close() }
