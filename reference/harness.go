// Package reference opens the embedded reference stores, the default backend
// storecheck checks and the one every check of the kit must pass.
package reference

import (
	"context"

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

// Harness is the suite's harness for the reference stores: through
// operation values and the Backend's Targets, or, with Direct, the Go
// stores themselves (the correct reference only).
func Harness(o Options) suite.Harness {
	if !o.Direct || o.Bug.Name() != "" {
		h := suite.HarnessOf(Backend(o))
		h.Capabilities = capabilities(o)
		return h
	}
	return suite.Harness{
		Name:         name(o),
		Capabilities: capabilities(o),
		Continuity: func(ctx context.Context, so suite.Options) (continuity.Store, error) {
			return refcontinuity.Open(ctx, refcontinuity.Options{Path: so.Path})
		},
		Runtime: func(ctx context.Context, so suite.Options) (runtime.Store, error) {
			return refruntime.Open(ctx, refruntime.Options{Path: so.Path, Clock: so.Clock})
		},
		Client: func(ctx context.Context, so suite.Options) (client.Store, error) {
			return refclient.Open(ctx, refclient.Options{Path: so.Path, Clock: so.Clock})
		},
	}
}

func name(o Options) string {
	name := "reference"
	if o.InMemory {
		name += " (in memory)"
	}
	if o.Bug.Name() != "" {
		name += " with bug " + o.Bug.Name()
	}
	return name
}

func capabilities(o Options) spec.Capabilities {
	return spec.Capabilities{
		Files: !o.InMemory, SharedFiles: !o.InMemory, SQLiteLocking: !o.InMemory, InMemory: true,
		ClientSchemaTable: !o.InMemory,
	}
}

// Contracts are the contracts of the stores the reference implements.
var Contracts = []spec.Contract{continuity.Contract, runtime.Contract, client.Contract}
