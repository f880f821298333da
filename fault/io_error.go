package fault

import "context"

// IOError makes the next operation named Op (any when "") fail before it
// reaches the backend with the contract's io kind. Definite (spec.NotSent).
type IOError struct{ Op string }

func (f IOError) Inject(ctx context.Context, env Env) error {
	return env.Intercept(Plan{Op: f.Op, Times: 1, IO: "disk I/O error (SQLITE_IOERR): injected by fault.IOError"})
}

func (f IOError) String() string { return "I/O error on " + opOrAny(f.Op) }

type ioErrorJSON struct {
	Op string `json:"op,omitempty"`
}

var _ = Register(Def[IOError, ioErrorJSON]{
	Name:   "io_error",
	Rank:   60,
	Wire:   func(f IOError) ioErrorJSON { return ioErrorJSON{Op: f.Op} },
	Unwire: func(j ioErrorJSON) (IOError, error) { return IOError{Op: j.Op}, nil },
	Draw: &Draw{Rates: []float64{0, 0, 0.02}, Make: func(d *Drawing) (Fault, int) {
		return IOError{}, d.R.IntN(d.Processes)
	}},
})
