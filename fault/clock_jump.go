package fault

import (
	"context"
	"fmt"
	"time"
)

// ClockJump moves the kit's clock forward.
type ClockJump struct{ By time.Duration }

func (f ClockJump) Inject(ctx context.Context, env Env) error {
	if f.By < 0 {
		return fmt.Errorf("clock jump: the clock never goes back (%s)", f.By)
	}
	return env.AdvanceClock(f.By)
}

func (f ClockJump) String() string { return fmt.Sprintf("jump the clock by %s", f.By) }

type clockJumpJSON struct {
	ByMS int64 `json:"by_ms,omitempty"`
}

// A jump is up to the swarm's longest, or (at the swarm's boundary rate)
// lands on a deadline not yet past: exactly, 1ms before or 1ms after. It
// shrinks by halves.
var _ = Register(Def[ClockJump, clockJumpJSON]{
	Name: "clock_jump",
	Rank: 10,
	Wire: func(f ClockJump) clockJumpJSON { return clockJumpJSON{ByMS: f.By.Milliseconds()} },
	Unwire: func(j clockJumpJSON) (ClockJump, error) {
		if j.ByMS < 0 {
			return ClockJump{}, fmt.Errorf("fault clock_jump: the clock never goes back (%d ms)", j.ByMS)
		}
		return ClockJump{By: time.Duration(j.ByMS) * time.Millisecond}, nil
	},
	Draw: &Draw{Rates: []float64{0, 0.05, 0.15, 0.3}, Make: func(d *Drawing) (Fault, int) {
		jump := 1 + d.R.Int64N(d.MaxMS)
		if future := d.Deadlines(); len(future) > 0 && d.R.Float64() < d.BoundaryRate {
			target := future[d.R.IntN(len(future))] + int64(d.R.IntN(3)) - 1
			jump = max(target-d.NowMS, 0)
		}
		return ClockJump{By: time.Duration(jump) * time.Millisecond}, 0
	}},
	Shrink: func(f ClockJump) (ClockJump, bool) {
		return ClockJump{By: (f.By / 2).Truncate(time.Millisecond)}, f.By > 0
	},
})
