package sqlitedb

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
)

// Target is a store built on this package as an adapters.Target: apply is
// its contract's Apply. It is adapters.Local's: armable at the store's crash
// points (spec.CrashPoint), so that an armed operation crashes there as a
// process killed there would, without ending this process.
func Target[S interface{ Close() error }](s S, apply func(ctx context.Context, s S, op spec.Op) (any, error)) adapters.Target {
	return adapters.Local(s, apply)
}
