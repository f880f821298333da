// Package conformance runs storecheck's check of a store backend: every
// layer of the kit, from the storecheck command and from go test alike.
//
// A check is a Backend and one Config. The backend is the embedded
// reference (Reference), the stores of a Go harness in this process
// (InProcess), or a program speaking the wire protocol (Program: a process
// of its own for every handle); the config says which stores and layers to
// run, over which seeds, how hard, and where failures keep their files.
// Run runs it and answers the checks (reports.Run):
//
//   - the specs (LayerSpec): every rule of the contract as a Ginkgo spec,
//     each labelled with the rules it checks (spec/suite);
//   - the linearizability check (LayerLinearizability): concurrent clients
//     on handles of one database, a recorded history, porcupine asking
//     whether some sequential order of it is one the contract allows; a
//     failure explained in words;
//   - the simulator (LayerSim): seeded schedules of clients, clock jumps and
//     faults, each operation paused at the store's yield points and crashed
//     at its crash points, every answer judged by every order the overlap
//     allows; a failure shrunk to a small interleaving, shown one column per
//     process and saved.
//
// From go test, a Go author's whole check is one call (Test), and the
// storecheck flags of the test binary widen it:
//
//	func TestConformance(t *testing.T) { conformance.Test(t, myHarness) }
//
//	go test -run TestConformance ./mystore -storecheck.sim-seeds 1..500
//
// Each setting of a run is a knob (Knobs), defined once: its Config field,
// its default, what 0 means, the layers it changes and its help, from
// which the go test flags, the storecheck command's flags and config file
// keys, and every reproduce line are made.
//
// A Go author imports this package and spec. Here are the harness
// (Harness, whose doc lists every requirement a spec places on a store),
// the hooks, the error kinds and the contracts a store implements
// (ContinuityStore, RuntimeStore, ClientStore and their types, each under
// its contract's prefix: contracts.go), re-exported; spec has the two types
// every backend shares with the kit, under their one name
// (spec.Capabilities, spec.OpenOptions). A Go store opens its transactions through a helper of its own,
// which reaches the kit's two hooks, both no-ops when no check is running:
// Yield before each transaction and after each commit (the places it holds
// no lock: where the simulator lets another process move), and CrashPoint
// between the writes of a transaction and after its commit (the places
// the simulator may crash it, declared per store in Harness.CrashPoints).
// Each takes the place alone ("after_commit"): the kit names the operation
// it applies in the context (spec.PointName). The reference's transaction
// helper (reference/sqlitedb) uses the same hooks of package spec. Serve
// makes the same harness a program over the wire protocol.
//
// What the kit knows of each store (its contract, model, workload and the
// rare events a sweep must reach) is Stores.
package conformance
