package fault

import (
	"context"
	"fmt"
)

// Busy makes the next Times operations (1 when 0) named Op (any when "")
// fail before they reach the backend with the contract's io kind, as a
// database that stayed locked past its busy timeout. Definite (spec.NotSent):
// the kit refused it before the backend, although a store's own io is not.
type Busy struct {
	Op    string
	Times int
}

func (f Busy) Inject(ctx context.Context, env Env) error {
	return env.Intercept(Plan{Op: f.Op, Times: max(f.Times, 1), IO: "database is locked (SQLITE_BUSY): injected by fault.Busy"})
}

func (f Busy) String() string {
	return fmt.Sprintf("busy database for %d %s", max(f.Times, 1), opOrAny(f.Op))
}

type busyJSON struct {
	Op    string `json:"op,omitempty"`
	Times int    `json:"times,omitempty"`
}

var _ = Register(Def[Busy, busyJSON]{
	Name:   "busy",
	Rank:   50,
	Wire:   func(f Busy) busyJSON { return busyJSON{Op: f.Op, Times: f.Times} },
	Unwire: func(j busyJSON) (Busy, error) { return Busy{Op: j.Op, Times: j.Times}, nil },
	Draw: &Draw{Rates: []float64{0, 0, 0.02}, Make: func(d *Drawing) (Fault, int) {
		return Busy{}, d.R.IntN(d.Processes)
	}},
})
