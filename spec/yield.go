package spec

import "context"

// A yield point is a place inside an operation where the backend holds no
// database lock and no lock of its own: before each transaction begins,
// after each commit, and before each statement that runs outside a
// transaction. A scheduler that pauses every operation at its yield points,
// one operation in flight per process, and lets a seed choose who moves next
// makes an interleaving of concurrent operations deterministic, replayable
// and shrinkable. Places are named "<operation>/<place>". A store reaches
// them from its own transaction helper (reference/sqlitedb's does, and so
// may a Go author's: with no scheduler in the context, Yield does nothing);
// a crash point (CrashPoint) is the other place the simulator reaches inside
// an operation.

// Yielder is called at each yield point an operation reaches. It returns
// when the operation may go on; an error means the operation must stop at
// once and return it (its process is being killed).
type Yielder func(place string) error

type yieldKey struct{}

// WithYield returns a context whose operation calls y at each yield point.
func WithYield(ctx context.Context, y Yielder) context.Context {
	return context.WithValue(ctx, yieldKey{}, y)
}

// YielderOf is the yielder ctx carries, or nil.
func YielderOf(ctx context.Context) Yielder {
	y, _ := ctx.Value(yieldKey{}).(Yielder)
	return y
}

// Yield reaches the yield point at place ("before_tx", which the
// operation's name in ctx completes, PointName; or a full name): it waits
// for the scheduler, if ctx has one, and returns the error the operation
// must stop with, if any. The scheduler sees the full name.
func Yield(ctx context.Context, place string) error {
	if y := YielderOf(ctx); y != nil {
		return y(PointName(ctx, place))
	}
	return nil
}
