package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/suite"
)

// Two processes on one file are what shared_files promises: a store that
// does not declare it is simulated as one process, and the note says so.
func TestTheSimulatorRunsOneProcessForAStoreWithoutSharedFiles(t *testing.T) {
	p := sim.Params{Steps: 10, Clients: 8, Processes: 2}
	got, note := processesFor(p, spec.Capabilities{Files: true}, "continuity")
	if got.Processes != 1 || got.Clients != 8 || !strings.Contains(note, "continuity: backend does not declare capability shared_files: two processes on one file is not checked") {
		t.Errorf("without shared_files: %+v, %q; want one process and the note", got, note)
	}
	if got, note := processesFor(p, spec.Capabilities{Files: true, SharedFiles: true}, "runtime"); got.Processes != 2 || note != "" {
		t.Errorf("with shared_files: %+v, %q; want the processes asked and no note", got, note)
	}
}

// A store's own capabilities decide its linearizability run: two handles
// for the store that declares shared_files, one for the store that does
// not; and a capability the config withdraws is withdrawn from each
// store's own too.
func TestEachStoresOwnCapabilitiesDecideItsHandles(t *testing.T) {
	ref := stores.Reference()
	info := ref.Info()
	info.Capabilities.Stores = adapters.StoreCapabilityMap{"continuity": {Capabilities: spec.Capabilities{Files: true}}}
	b := Adapter(helloed{ref, info})
	r := newRunner(t, b, Config{})
	if _, n := r.s.opener("continuity", t.TempDir()); n != 1 {
		t.Errorf("continuity without shared_files: %d handles; want 1", n)
	}
	if _, n := r.s.opener("runtime", t.TempDir()); n != 2 {
		t.Errorf("runtime with shared_files: %d handles; want 2", n)
	}
	w := newRunner(t, b, Config{Withdraw: []string{spec.CapFiles}})
	if got := w.s.caps("continuity"); got.Files {
		t.Errorf("files withdrawn: continuity's own still declare it: %+v", got)
	}
	if got := w.s.caps("runtime"); got.Files || !got.SharedFiles {
		t.Errorf("files withdrawn: runtime %+v; want files off, the rest kept", got)
	}
}

// A Go harness may give a store capabilities of its own: the simulator and
// the linearizability check read the store's, not the harness-wide ones.
func TestAHarnessStoresOwnCapabilitiesReachEveryLayer(t *testing.T) {
	h := suite.HarnessOf(stores.Reference())
	h.StoreCapabilities = map[string]spec.Capabilities{"continuity": {Files: true}}
	s, err := InProcess(h).open(context.Background(), Config{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.caps("continuity"); got.SharedFiles || !got.Files {
		t.Errorf("continuity: %+v; want its own (files, no shared_files)", got)
	}
	if got := s.caps("runtime"); !got.SharedFiles {
		t.Errorf("runtime: %+v; want the harness-wide shared_files", got)
	}
	if _, n := s.opener("continuity", t.TempDir()); n != 1 {
		t.Errorf("continuity without shared_files: %d handles; want 1", n)
	}
}

// helloed is a Backend with another hello.
type helloed struct {
	adapters.Driver
	info adapters.Hello
}

func (h helloed) Info() adapters.Hello { return h.info }
