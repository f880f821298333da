package suite

import (
	"context"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Each store's specs see the store's own capabilities: a store the hello
// gives capabilities of its own is checked by them, the others by the
// backend's.
func TestEachStoresSpecsSeeItsOwnCapabilities(t *testing.T) {
	open := func(context.Context, spec.OpenOptions) (adapters.Target, error) { return nil, nil }
	b := adapters.InProcess(adapters.Hello{Name: "mixed", Capabilities: adapters.Capabilities{
		Capabilities: spec.Capabilities{Files: true, SharedFiles: true, SQLiteLocking: true},
		Stores:       adapters.StoreCapabilityMap{c.StoreName: {Capabilities: spec.Capabilities{Files: true, InMemory: true}}},
	}}, adapters.LocalStore{Contract: c.Contract, Open: open}, adapters.LocalStore{Contract: r.Contract, Open: open})
	h := HarnessOf(b)
	if got, want := h.forStore(c.StoreName).Capabilities, (spec.Capabilities{Files: true, InMemory: true}); got != want {
		t.Errorf("continuity's specs see %+v; want its own %+v", got, want)
	}
	if got, want := h.forStore(r.StoreName).Capabilities, (spec.Capabilities{Files: true, SharedFiles: true, SQLiteLocking: true}); got != want {
		t.Errorf("runtime's specs see %+v; want the backend's %+v", got, want)
	}
	if h.Continuity == nil || h.Runtime == nil || h.Client != nil {
		t.Errorf("the harness opens the stores the backend has, and no other")
	}
}
