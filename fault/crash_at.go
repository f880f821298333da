package fault

import (
	"context"
	"errors"
	"fmt"
)

// CrashAt arms a crash point: the backend exits the Nth time (1 when 0) it
// reaches Point ("<operation>/<place>", as its hello declares them).
type CrashAt struct {
	Point string
	Nth   int
}

func (f CrashAt) Inject(ctx context.Context, env Env) error {
	return env.ArmCrash(ctx, f.Point, max(f.Nth, 1))
}

func (f CrashAt) String() string { return fmt.Sprintf("crash at %s (time %d)", f.Point, max(f.Nth, 1)) }

type crashAtJSON struct {
	Point string `json:"point,omitempty"`
	Nth   int    `json:"nth,omitempty"`
}

// A crash point is drawn for an operation that reaches one, as a step of
// its own just before it.
var _ = Register(Def[CrashAt, crashAtJSON]{
	Name: "crash_at",
	Rank: 30,
	Wire: func(f CrashAt) crashAtJSON { return crashAtJSON{Point: f.Point, Nth: f.Nth} },
	Unwire: func(j crashAtJSON) (CrashAt, error) {
		if j.Point == "" {
			return CrashAt{}, errors.New("fault crash_at needs a point")
		}
		return CrashAt{Point: j.Point, Nth: j.Nth}, nil
	},
	Draw: &Draw{
		Rates:    []float64{0, 0.05, 0.2},
		BeforeOp: true,
		Ready:    func(d *Drawing) bool { return len(d.CrashPoints) > 0 },
		Make: func(d *Drawing) (Fault, int) {
			return CrashAt{Point: d.CrashPoints[d.R.IntN(len(d.CrashPoints))]}, d.Process
		},
	},
})
