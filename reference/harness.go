// Package reference opens the embedded reference stores, the default backend
// storecheck checks and the one every check of the kit must pass.
package reference

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/runtime"
	"github.com/storecheck/storecheck/spec/suite"
)

// Options chooses how the reference is opened for the suite.
type Options struct {
	// InMemory opens every store in memory instead of in a file.
	InMemory bool
	// Direct hands the suite the Go stores themselves; otherwise every call
	// goes through operation values and an in-process Target, the path every
	// other backend takes.
	Direct bool
	// Bug opens deliberately broken stores (storecheck's own tests only).
	Bug bugs.Bug
}

// Harness is the suite's harness for the reference stores.
func Harness(o Options) suite.Harness {
	name := "reference"
	if o.InMemory {
		name += " (in memory)"
	}
	if o.Bug.Name() != "" {
		name += " with bug " + o.Bug.Name()
	}
	return suite.Harness{
		Name: name,
		Capabilities: suite.Capabilities{
			Files: !o.InMemory, SharedFiles: !o.InMemory, SQLiteLocking: !o.InMemory, InMemory: true,
			ClientSchemaTable: !o.InMemory,
		},
		WriteClientSchema: func(path, marker string, version int) error {
			return refclient.WriteSchema(context.Background(), path, marker, version)
		},
		Continuity: func(ctx context.Context, so suite.Options) (continuity.Store, error) {
			ref, err := refcontinuity.Open(ctx, refcontinuity.Options{Path: so.Path, Bug: o.Bug})
			if err != nil {
				return nil, err
			}
			var s continuity.Store = ref
			if o.Bug == bugs.ContinuityWriteBehind {
				s = refcontinuity.NewWriteBehind(ref)
			}
			if o.Direct {
				return s, nil
			}
			return continuity.Proxy{Target: adapters.Continuity(s)}, nil
		},
		Runtime: func(ctx context.Context, so suite.Options) (runtime.Store, error) {
			s, err := refruntime.Open(ctx, refruntime.Options{Path: so.Path, Clock: so.Clock, Bug: o.Bug})
			if err != nil {
				return nil, err
			}
			if o.Direct {
				return s, nil
			}
			return runtime.Proxy{Target: adapters.Runtime(s)}, nil
		},
		Client: func(ctx context.Context, so suite.Options) (client.Store, error) {
			s, err := refclient.Open(ctx, refclient.Options{Path: so.Path, Clock: so.Clock, Bug: o.Bug})
			if err != nil {
				return nil, err
			}
			if o.Direct {
				return s, nil
			}
			return client.Proxy{Target: adapters.Client(s)}, nil
		},
	}
}

// Contracts are the contracts of the stores the reference implements.
var Contracts = []spec.Contract{continuity.Contract, runtime.Contract, client.Contract}
