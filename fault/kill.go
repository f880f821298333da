package fault

import "context"

// Kill SIGKILLs the backend process between operations.
type Kill struct{}

func (Kill) Inject(ctx context.Context, env Env) error { return env.Kill(ctx) }

func (Kill) String() string { return "kill the backend (SIGKILL)" }

var _ = Register(Def[Kill, struct{}]{
	Name: "kill",
	Rank: 20,
	Draw: &Draw{Rates: []float64{0, 0, 0.01, 0.04}, Make: func(d *Drawing) (Fault, int) {
		return Kill{}, d.R.IntN(d.Processes)
	}},
})
