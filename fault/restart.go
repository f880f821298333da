package fault

import "context"

// Restart starts the backend process again on the same files (killing it
// first if it still runs).
type Restart struct{}

func (Restart) Inject(ctx context.Context, env Env) error { return env.Restart(ctx) }

func (Restart) String() string { return "restart the backend" }

var _ = Register(Def[Restart, struct{}]{
	Name: "restart",
	Rank: 40,
	Draw: &Draw{Rates: []float64{0, 0, 0.01}, Make: func(d *Drawing) (Fault, int) {
		return Restart{}, d.R.IntN(d.Processes)
	}},
})
