package harness_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/examples/harness/mystore"
	"github.com/storecheck/storecheck/internal/testmain"
)

// serveEnv starts this test binary as the store over the wire, as
// ./serve does.
const serveEnv = "MYSTORE_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		b := conformance.InProcess(mystore.Harness(mystore.Options{}))
		if err := conformance.Serve(context.Background(), b, os.Stdin, os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testmain.OnTmpfs(m.Run))
}

// The same store over the wire (conformance.Serve, as ./serve runs it)
// passes the linearizability check and the simulator, a process of its own
// for every handle and every simulated process, crashed for real at its
// crash points.
func TestTheStoreOverTheWire(t *testing.T) {
	b := conformance.Program(os.Args[0]).WithEnv(serveEnv + "=1")
	rep, err := conformance.Run(context.Background(), b, conformance.Config{
		Layers: []conformance.Layer{conformance.LayerLinearizability, conformance.LayerSim},
		// Seeds 3..6: seed 2's history ends with the big lookup of 32,767
		// identities, whose check over this store's history takes porcupine
		// 13 s (the model's step of the lookup, tried again at each of its
		// backtracks); the sizes are the size tests' (linearizability, sim),
		// this test is the wire's.
		Stores: []string{"continuity"}, Seeds: conformance.Seeds(3, 6), Ops: 300, ReportDir: t.TempDir()})
	if err != nil || rep.Failed() || len(rep.Checks) != 8 {
		t.Fatalf("%v: %d checks, failed %v: %+v", err, len(rep.Checks), rep.Failed(), rep.Checks)
	}
	if rep.Backend != "mystore" {
		t.Errorf("the hello names %q", rep.Backend)
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "crashes inside operations were not explored") {
			t.Errorf("the crash points did not reach the wire: %s", n)
		}
	}
}
