package conformance

import (
	"slices"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// Store is one store the kit checks, as an author outside the module needs
// it: the parts of its registration (internal/stores, the one list) that
// every layer reads.
type Store struct {
	// Name is the store's name ("continuity").
	Name string
	// Contract is its operations, error kinds and rules.
	Contract spec.Contract
	// Model states the contract as a sequential function: the oracle of
	// the linearizability check and of the simulator.
	Model model.Model
	// Workload makes one run's operations, the store's races likely.
	Workload func() linearizability.Workload
	// Events are the rare events the simulator's default sweep must reach
	// on the store: its model's, and the simulator's own (a crash inside an
	// operation, an answer lost after the commit, a kill, a power cut).
	Events []string

	reg stores.Store
}

// Stores are every store the kit checks, in report order.
func Stores() []Store {
	var out []Store
	for _, s := range stores.All {
		out = append(out, storeOf(s))
	}
	return out
}

// StoreNamed is the store of that name.
func StoreNamed(name string) (Store, bool) {
	s, ok := stores.Lookup(name)
	if !ok {
		return Store{}, false
	}
	return storeOf(s), true
}

func storeOf(s stores.Store) Store {
	return Store{Name: s.Name(), Contract: s.Contract, Model: s.Model, Workload: s.Workload, Events: rareEvents(s), reg: s}
}

// Subject is the store as the simulator needs it, for a backend that
// declared caps: its model configured by the choices the backend declares
// (model.For), the crash points left to the backend (sim.Launcher).
func (s Store) Subject(caps spec.Capabilities) sim.Subject {
	subj := sim.Subject{Model: model.For(s.Model, caps), NewWorkload: s.Workload, RareEvents: s.Events, Rival: s.reg.Rival,
		Capabilities: caps}
	return subj
}

// Coverage is the store's coverage matrix as layer reached it, over what
// it counted ("seeds 1..100"): counts by cell ("<operation>:<answer>").
func (s Store) Coverage(layer, over string, counts map[string]int) reports.Coverage {
	return s.reg.Coverage(layer, over, counts)
}

// rareEvents are what the default sweep of store s must reach: its model's
// events and the simulator's own.
func rareEvents(s stores.Store) []string {
	return append(slices.Clone(s.Events), sim.EventCrashInside, sim.EventAnswerLost, sim.EventKill, sim.EventPowerCut)
}
