package fault

import "context"

// LostReply lets the next operation named Op (any when "") reach the
// backend and take effect, then loses its reply: the caller gets an
// indefinite timeout.
type LostReply struct{ Op string }

func (f LostReply) Inject(ctx context.Context, env Env) error {
	return env.Intercept(Plan{Op: f.Op, Times: 1, Lose: true})
}

func (f LostReply) String() string { return "lose the reply of " + opOrAny(f.Op) }

type lostReplyJSON struct {
	Op string `json:"op,omitempty"`
}

var _ = Register(Def[LostReply, lostReplyJSON]{
	Name:   "lost_reply",
	Rank:   70,
	Wire:   func(f LostReply) lostReplyJSON { return lostReplyJSON{Op: f.Op} },
	Unwire: func(j lostReplyJSON) (LostReply, error) { return LostReply{Op: j.Op}, nil },
	Draw: &Draw{Rates: []float64{0, 0, 0.02}, Make: func(d *Drawing) (Fault, int) {
		return LostReply{}, d.R.IntN(d.Processes)
	}},
})
