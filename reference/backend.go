package reference

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/suite"
)

// Backend is the reference as an adapters.Backend: the stores "storecheck
// serve" serves over the wire protocol, with their crash points. Each store
// registers here with an opener and its crash points. Options.Direct does
// not apply.
func Backend(o Options) adapters.Backend {
	return adapters.InProcess(adapters.Hello{
		Name: Harness(o).Name,
		Capabilities: adapters.Capabilities{
			Files: !o.InMemory, SharedFiles: !o.InMemory, SQLiteLocking: !o.InMemory, InMemory: true,
			CrashPoints: map[string][]string{
				continuity.StoreName: refcontinuity.CrashPoints,
			},
		},
	}, map[string]adapters.Opener{
		continuity.StoreName: func(ctx context.Context, so suite.Options) (adapters.Target, error) {
			s, err := refcontinuity.Open(ctx, refcontinuity.Options{Path: so.Path, Bug: o.Bug})
			if err != nil {
				return nil, err
			}
			return adapters.Continuity(s), nil
		},
	})
}
