package conformance

import (
	"context"
	"errors"

	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/sim"
)

// ExhaustReport is one store's exhaustive check (sim.Exhaust), or why it
// was not run.
type ExhaustReport struct {
	Store   string
	Result  sim.ExhaustResult
	Skipped string
}

// Exhaust is "storecheck sim --exhaustive": every crash state of every
// workload of up to p.Ops operations of each store cfg asks for, against
// b. Where no forgetful file system can be mounted, each store's report
// says why it was not explored (a *lossyfs.Unavailable), never a failure.
func Exhaust(ctx context.Context, b Backend, cfg Config, p sim.ExhaustParams) ([]ExhaustReport, error) {
	cfg = cfg.WithDefaults()
	s, err := b.open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.close()
	var out []ExhaustReport
	for _, name := range cfg.Stores {
		rep := ExhaustReport{Store: name}
		reg, _ := stores.Lookup(name)
		caps := s.caps(name)
		switch {
		case reg.Model == nil:
			rep.Skipped = "storecheck has no model of the " + name + " store yet"
		case !s.implements(name):
			rep.Skipped = "backend does not implement the " + name + " store"
		default:
			subj := storeOf(reg).Subject(caps)
			if why := subj.Model.Contract().PowerLossExempt(caps); why != "" {
				rep.Skipped = "power loss not explored: " + why
				break
			}
			rep.Result, err = sim.Exhaust(ctx, subj, s.simBackend(name), p, sim.ScratchDir())
			var u *lossyfs.Unavailable
			if errors.As(err, &u) {
				rep.Skipped = "power loss not explored: " + u.Reason
			} else if err != nil {
				return out, &BackendError{err}
			}
		}
		out = append(out, rep)
	}
	return out, nil
}
