package linearizability

import (
	"math/rand/v2"

	"github.com/storecheck/storecheck/spec"
)

// Workload generates the operations of one store's concurrent clients. It is
// built to make conflicts likely: few keys, competing writers, fences and
// versions that are often stale.
type Workload interface {
	// Next is the step-th operation of client, drawn from r alone (the
	// client's own generator), so a seed fixes every client's sequence.
	Next(r *rand.Rand, client, step int) spec.Op
}

// ClockedWorkload is a workload whose clients read the clock before they
// act, as a real client can: the runner and the simulator call NextAt, with
// the time the operation will run at, instead of Next. A client that knows
// when it asked can rebuild what a store answers from the time (a lease
// token, an expiry) without seeing the answer.
type ClockedWorkload interface {
	Workload
	NextAt(r *rand.Rand, client, step int, nowMS int64) spec.Op
}

// NextOp is w's next operation of client at nowMS.
func NextOp(w Workload, r *rand.Rand, client, step int, nowMS int64) spec.Op {
	if cw, ok := w.(ClockedWorkload); ok {
		return cw.NextAt(r, client, step, nowMS)
	}
	return w.Next(r, client, step)
}

// Sizer is a workload with a big draw: a few operations of one client
// whose list arguments, values and tables pass the sizes an implementation
// breaks at though no seed states them (spec.LookupChunk,
// spec.ScanLimit, spec.MaxBoundParams, spec.BigValue, spec.Counter8;
// issue 26 item 6). The simulator makes one in a share of its runs, from a
// stream of its own, so every other draw of a run stays as it was.
type Sizer interface {
	// Big plans a big draw r picks as the next operations of a client, at
	// nowMS: the client and how many operations it then issues, one at a
	// time, none of them drawing from the client's stream (none: the
	// draw is declined). Forgetful, the run writes where a power cut
	// forgets what was not synced: there the checker keeps every state
	// since a failed sync, so a draw of n rows costs about n squared.
	Big(r *rand.Rand, nowMS int64, forgetful bool) (client, ops int)
}
