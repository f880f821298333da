package suite

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// HarnessOf is the suite's harness for any adapters.Driver, in this
// process or a program over the wire: its name and the capabilities it
// declared (each store's own, where the hello gives a store capabilities of
// its own); each store it implements opens through its Open and reaches the
// specs as the contract's Proxy, so that every call of a spec is an
// operation value applied to a Target, the path the checkers and the
// simulator take; each store it does not implement keeps a nil opener, so
// the suite skips its specs with that reason.
func HarnessOf(b adapters.Driver) Harness {
	info := b.Info()
	h := Harness{Name: info.Name, Capabilities: info.Capabilities.Capabilities, CrashPoints: info.Capabilities.CrashPoints}
	for store := range info.Capabilities.Stores {
		if h.StoreCapabilities == nil {
			h.StoreCapabilities = map[string]spec.Capabilities{}
		}
		h.StoreCapabilities[store] = info.CapabilitiesOf(store).Capabilities
	}
	if w, ok := b.(adapters.SchemaWriter); ok && info.CapabilitiesOf(cli.StoreName).ClientSchemaWriter && slices.Contains(info.Stores, cli.StoreName) {
		h.WriteClientSchema = func(path, marker string, version int) error {
			return w.WriteForeignSchema(context.Background(), cli.StoreName, path, marker, version)
		}
	}
	for _, store := range info.Stores {
		open := func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) { return b.Open(ctx, store, o) }
		switch store {
		case c.StoreName:
			h.Continuity = proxied(open, func(t adapters.Target) c.Store { return c.Proxy{Target: t} })
		case r.StoreName:
			h.Runtime = proxied(open, func(t adapters.Target) r.Store { return r.Proxy{Target: t} })
		case cli.StoreName:
			h.Client = proxied(open, func(t adapters.Target) cli.Store { return cli.Proxy{Target: t} })
		}
	}
	return h
}

// proxied turns a Target opener into an opener of the store type S.
func proxied[S any](open func(context.Context, spec.OpenOptions) (adapters.Target, error), proxy func(adapters.Target) S) func(context.Context, spec.OpenOptions) (S, error) {
	return func(ctx context.Context, o spec.OpenOptions) (S, error) {
		t, err := open(ctx, o)
		if err != nil {
			var zero S
			return zero, err
		}
		return proxy(refusing{t}), nil
	}
}

// refusedEntry names the report entry of a request the backend refused.
const refusedEntry = "bad_request"

// refusing is a Target that notes in the running spec's report (a call
// with a spec's context) each request the backend refused itself (bad_request: a crash point reached
// but not declared, an operation it lacks), with its words: a spec that
// fails then blames no rule of the contract (convert), since none makes
// bad_request, and its own rule would send the author to the wrong place.
type refusing struct{ adapters.Target }

func (t refusing) Apply(ctx context.Context, op spec.Op) (any, error) {
	res, err := t.Target.Apply(ctx, op)
	if spec.KindOf(err) == spec.ErrBadRequest && ctx.Value(inSpec{}) != nil {
		AddReportEntry(refusedEntry, types.ReportEntryVisibilityNever, op.Name()+": "+err.Error())
	}
	return res, err
}

// Crash passes the kit's crash on (spec.CrashTarget): the wrapper must not
// turn a crash into a Close.
func (t refusing) Crash() error { return spec.CrashTarget(t.Target) }
