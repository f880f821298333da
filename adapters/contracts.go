package adapters

import (
	"context"
	"fmt"

	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/runtime"
	"github.com/storecheck/storecheck/spec/suite"
)

// Contract is a store's contract (spec.Contract: its name, operations and
// error kinds) and how to hand a Target to the suite as that store. It is
// enough to speak the store over the wire and to check it.
type Contract struct {
	spec.Contract
	// Bind sets the store's opener of h to one that opens a Target with
	// open and hands the suite the contract's Proxy over it.
	Bind func(h *suite.Harness, open Opener)
}

// Contracts are the stores the adapters can speak, in report order. A new
// store registers here with one entry.
var Contracts = []Contract{
	{continuity.Contract, func(h *suite.Harness, open Opener) {
		h.Continuity = proxied(open, func(t Target) continuity.Store { return continuity.Proxy{Target: t} })
	}},
	{runtime.Contract, func(h *suite.Harness, open Opener) {
		h.Runtime = proxied(open, func(t Target) runtime.Store { return runtime.Proxy{Target: t} })
	}},
	{client.Contract, func(h *suite.Harness, open Opener) {
		h.Client = proxied(open, func(t Target) client.Store { return client.Proxy{Target: t} })
	}},
}

// proxied turns an Opener into a suite opener of store type S.
func proxied[S any](open Opener, proxy func(Target) S) func(context.Context, spec.OpenOptions) (S, error) {
	return func(ctx context.Context, o spec.OpenOptions) (S, error) {
		t, err := open(ctx, o)
		if err != nil {
			var zero S
			return zero, err
		}
		return proxy(t), nil
	}
}

// ContractOf finds a registered contract by store name.
func ContractOf(store string) (Contract, bool) {
	for _, c := range Contracts {
		if c.Name == store {
			return c, true
		}
	}
	return Contract{}, false
}

// clip is b as a string, cut to n bytes.
func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%s... (%d bytes)", b[:n], len(b))
	}
	return string(b)
}
