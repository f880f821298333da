package main

import (
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
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
	b := helloed{ref, info}
	cont, _ := stores.Lookup("continuity")
	rt, _ := stores.Lookup("runtime")
	if _, n := opener(b, cont, t.TempDir()); n != 1 {
		t.Errorf("continuity without shared_files: %d handles; want 1", n)
	}
	if _, n := opener(b, rt, t.TempDir()); n != 2 {
		t.Errorf("runtime with shared_files: %d handles; want 2", n)
	}
	c := &Config{Capabilities: map[string]bool{"files": false}}
	w := withdrawn{b, c.withdraw}
	if got := w.Info().CapabilitiesOf("continuity"); got.Files {
		t.Errorf("files withdrawn: continuity's own still declare it: %+v", got)
	}
	if got := w.Info().CapabilitiesOf("runtime"); got.Files || !got.SharedFiles {
		t.Errorf("files withdrawn: runtime %+v; want files off, the rest kept", got)
	}
}

// helloed is a Backend with another hello.
type helloed struct {
	adapters.Backend
	info adapters.Hello
}

func (h helloed) Info() adapters.Hello { return h.info }
