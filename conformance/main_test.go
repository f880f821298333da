package conformance

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/storecheck/storecheck/internal/testmain"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
)

// serveEnv starts this test binary as a backend over the wire: Serve of
// the reference with the deliberate bug it names ("none": the reference
// itself), as "storecheck serve" is.
const serveEnv = "STORECHECK_CONFORMANCE_SERVE"

func TestMain(m *testing.M) {
	if name, ok := os.LookupEnv(serveEnv); ok {
		o := stores.Options{}
		if name != "none" {
			b, ok := bugs.ByName(name)
			if !ok {
				fmt.Fprintf(os.Stderr, "no bug %q\n", name)
				os.Exit(99)
			}
			o.Bug = b
		}
		if err := Serve(context.Background(), Adapter(stores.Backend(o)), os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testmain.OnTmpfs(func() int { return testmain.LeavesNoFolder(DefaultReportDir, m.Run) }))
}

// served is the reference with bug (the zero Bug: none) served over the
// wire by this test binary: a program, a process per handle.
func served(bug bugs.Bug) Backend {
	name := bug.Name()
	if name == "" {
		name = "none"
	}
	return Program(os.Args[0]).WithEnv(serveEnv + "=" + name)
}

// servedOptions are served(bug) as the exec adapter starts it.
func servedOptions(bug bugs.Bug) adapters.ExecOptions {
	return served(bug).execOptions(Config{}.WithDefaults())
}

// startServe runs the reference over the wire, this test binary serving
// it, through the exec adapter.
func startServe(t testing.TB) *adapters.Exec {
	t.Helper()
	e, err := adapters.StartExec(context.Background(), servedOptions(bugs.Bug{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// broken is the reference with bug, in this process.
func broken(bug bugs.Bug) Backend { return Adapter(stores.Backend(stores.Options{Bug: bug})) }

// fullTestsEnv asks for the slow tests whole (see cmd/storecheck).
const fullTestsEnv = "STORECHECK_FULL_TESTS"

func fullTests() bool { return os.Getenv(fullTestsEnv) != "" }

// newRunner is a run of cfg against b, opened, for a test that calls one
// layer's insides; it is closed with the test.
func newRunner(t testing.TB, b Backend, cfg Config) *runner {
	t.Helper()
	cfg = cfg.WithDefaults()
	s, err := b.open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.close() })
	return &runner{ctx: context.Background(), s: s, cfg: cfg, lines: cfg.commandLines(b.command)}
}

// linearizeOne is one history of store st of seed against b, checked.
func linearizeOne(t testing.TB, b Backend, st stores.Store, seed int64, hooks linearizeHooks) reports.Check {
	t.Helper()
	return newRunner(t, b, Config{Seeds: Seed(seed), ReportDir: t.TempDir()}).linearizeStore(st, seed, hooks)
}
