package fault

import (
	"context"
	"fmt"
	"time"
)

// Pause holds the next operation For before it is sent, as a client that
// stalled (a GC pause, a slow network) while its lease ran out.
type Pause struct {
	Op  string
	For time.Duration
}

func (f Pause) Inject(ctx context.Context, env Env) error { return env.Stall(f.Op, f.For) }

func (f Pause) String() string { return fmt.Sprintf("pause %s before %s", f.For, opOrAny(f.Op)) }

type pauseJSON struct {
	Op    string `json:"op,omitempty"`
	ForMS int64  `json:"for_ms,omitempty"`
}

// A pause is up to the swarm's longest jump, and shrinks by halves.
var _ = Register(Def[Pause, pauseJSON]{
	Name: "pause",
	Rank: 80,
	Wire: func(f Pause) pauseJSON { return pauseJSON{Op: f.Op, ForMS: f.For.Milliseconds()} },
	Unwire: func(j pauseJSON) (Pause, error) {
		return Pause{Op: j.Op, For: time.Duration(j.ForMS) * time.Millisecond}, nil
	},
	Draw: &Draw{Rates: []float64{0, 0, 0.02}, Make: func(d *Drawing) (Fault, int) {
		process := d.R.IntN(d.Processes)
		return Pause{For: time.Duration(1+d.R.Int64N(d.MaxMS)) * time.Millisecond}, process
	}},
	Shrink: func(f Pause) (Pause, bool) {
		return Pause{Op: f.Op, For: (f.For / 2).Truncate(time.Millisecond)}, f.For > 0
	},
})
