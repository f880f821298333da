package adapters_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// startHello starts the "hello" backend answering hello with the given JSON.
func startHello(hello string) (*adapters.Exec, error) {
	return adapters.StartExec(context.Background(), adapters.ExecOptions{
		Command: []string{os.Args[0]}, Env: []string{backendEnv + "=hello", helloEnv + "=" + hello}, Timeout: 5 * time.Second, Contracts: stores.Contracts()})
}

// Today's form: one set of capabilities, every store's.
func TestAHelloWithoutStoreCapabilitiesGivesEveryStoreTheBackends(t *testing.T) {
	e, err := startHello(`{"version":1,"name":"one","stores":["continuity","runtime"],"capabilities":{"files":true,"shared_files":true,"yields":true,"crash_points":{"runtime":["p/after_commit"]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, store := range []string{"continuity", "runtime", "client"} {
		c := e.Info().CapabilitiesOf(store)
		if !c.Files || !c.SharedFiles || !c.Yields || c.Stores != nil || len(c.CrashPoints["runtime"]) != 1 {
			t.Errorf("%s: %+v; want the backend-wide capabilities", store, c)
		}
	}
}

// The per-store form: a store named in capabilities.stores has exactly its
// own; the others keep the backend's.
func TestAStoreDeclaresCapabilitiesOfItsOwn(t *testing.T) {
	e, err := startHello(`{"version":1,"name":"two","stores":["continuity","runtime"],"capabilities":{"files":true,"shared_files":true,"sqlite_locking":true,"yields":true,` +
		`"stores":{"continuity":{"files":true,"in_memory":true,"snapshot_revision":"opaque"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	info := e.Info()
	cont := info.CapabilitiesOf("continuity")
	want := spec.Capabilities{Files: true, InMemory: true, SnapshotRevision: "opaque"}
	if cont.Capabilities != want || cont.Yields {
		t.Errorf("continuity: %+v; want exactly its own %+v, without yields", cont, want)
	}
	rt := info.CapabilitiesOf("runtime")
	if rt.Capabilities != (spec.Capabilities{Files: true, SharedFiles: true, SQLiteLocking: true}) || !rt.Yields {
		t.Errorf("runtime: %+v; want the backend-wide capabilities", rt)
	}
}

func TestAMalformedStoreDeclarationIsAProtocolViolationNamingIt(t *testing.T) {
	for _, tc := range []struct{ caps, want string }{
		{`{"stores":{"continuity":{"shared_file":true}}}`, `capabilities.stores.continuity: json: unknown field "shared_file"`},
		{`{"stores":{"continuity":{"files":"yes"}}}`, `capabilities.stores.continuity: json: cannot unmarshal string`},
		{`{"stores":{"continuity":{"crash_points":{}}}}`, `capabilities.stores.continuity: json: unknown field "crash_points"`},
		{`{"stores":{"client":{"files":true}}}`, `capabilities.stores.client: "client" is not one of the stores the hello declares (continuity)`},
		{`{"stores":["continuity"]}`, `capabilities.stores: want an object of store name to capabilities`},
	} {
		_, err := startHello(`{"version":1,"name":"bad","stores":["continuity"],"capabilities":` + tc.caps + `}`)
		if spec.KindOf(err) != spec.ErrBackendFailure || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "hello") {
			t.Errorf("capabilities %s: got %v; want a backend failure of the hello naming %s", tc.caps, err, tc.want)
		}
	}
}
