package reference

import (
	"github.com/storecheck/storecheck/adapters"
	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/runtime"
)

// Backend is the reference as an adapters.Backend: the stores "storecheck
// serve" serves over the wire protocol, with their crash points. It opens
// the same stores as Harness (Options.Direct does not apply).
func Backend(o Options) adapters.Backend {
	openers := map[string]adapters.Opener{
		continuity.StoreName: refcontinuity.OpenTarget,
		runtime.StoreName:    refruntime.OpenTarget,
		client.StoreName:     refclient.OpenTarget,
	}
	if b := o.Bug; b.Name() != "" {
		openers[b.Store()] = b.Open
	}
	return adapters.InProcess(adapters.Hello{
		Name: name(o),
		Capabilities: adapters.Capabilities{
			Capabilities: capabilities(o),
			Yields:       true,
			CrashPoints: map[string][]string{
				continuity.StoreName: refcontinuity.CrashPoints,
				runtime.StoreName:    refruntime.CrashPoints,
				client.StoreName:     refclient.CrashPoints,
			},
		},
	}, openers)
}
