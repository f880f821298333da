package reference

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/runtime"
	"github.com/storecheck/storecheck/spec/suite"
)

// Backend is the reference as an adapters.Backend: the stores "storecheck
// serve" serves over the wire protocol, with their crash points. It opens
// the same stores as Harness (Options.Direct does not apply).
func Backend(o Options) adapters.Backend {
	o.Direct = true
	h := Harness(o)
	return adapters.InProcess(adapters.Hello{
		Name: h.Name,
		Capabilities: adapters.Capabilities{
			Capabilities: h.Capabilities,
			CrashPoints: map[string][]string{
				continuity.StoreName: refcontinuity.CrashPoints,
				runtime.StoreName:    refruntime.CrashPoints,
				client.StoreName:     refclient.CrashPoints,
			},
		},
	}, map[string]adapters.Opener{
		continuity.StoreName: func(ctx context.Context, so suite.Options) (adapters.Target, error) {
			s, err := h.Continuity(ctx, so)
			if err != nil {
				return nil, err
			}
			return adapters.Continuity(s), nil
		},
		runtime.StoreName: func(ctx context.Context, so suite.Options) (adapters.Target, error) {
			s, err := h.Runtime(ctx, so)
			if err != nil {
				return nil, err
			}
			return adapters.Runtime(s), nil
		},
		client.StoreName: func(ctx context.Context, so suite.Options) (adapters.Target, error) {
			s, err := h.Client(ctx, so)
			if err != nil {
				return nil, err
			}
			return adapters.Client(s), nil
		},
	})
}
