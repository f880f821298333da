// Package suite is the conformance suite: every rule of every contract as a
// Ginkgo spec, run against any backend through a Harness.
//
// From go test, a backend author writes one test that runs the specs and
// every deeper layer of the kit (the linearizability check, the simulator)
// on the harness's stores:
//
//	func TestConformance(t *testing.T) { conformance.Test(t, myHarness) }
//
// Test here runs the specs alone; the storecheck binary and package
// conformance run the very same specs through Run. Ginkgo runs one suite per
// process, so each of these may be called once per process (conformance.Test
// runs a second one in a process of its own).
package suite

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
)

// Epoch is where every spec's fake clock starts: a fixed instant, so that
// runs are the same byte for byte.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Layer is the report layer of the suite's checks.
const Layer = "spec"

// Define adds the suite's specs for h to Ginkgo's tree. Call it before
// RunSpecs, once.
func Define(h Harness) { define(h, nil) }

// storeSpecs are the stores' specs, in the suite's order.
var storeSpecs = []struct {
	name  string
	specs func(Harness)
}{
	{"continuity", continuitySpecs},
	{"runtime", runtimeSpecs},
	{"client", clientSpecs},
}

// define adds the specs of the stores named (every store when none) to
// Ginkgo's tree: the others are not defined at all, so that Ginkgo's count
// and its progress are the asked stores' own.
func define(h Harness, stores []string) {
	for _, s := range storeSpecs {
		if len(stores) > 0 && !slices.Contains(stores, s.name) {
			continue
		}
		Describe(s.name, Label(s.name), func() { s.specs(h.forStore(s.name)) })
	}
}

// Test runs the whole suite against h from a go test function.
func Test(t GinkgoTestingT, h Harness) bool {
	RegisterFailHandler(Fail)
	Define(h)
	return RunSpecs(t, "storecheck conformance: "+h.Name)
}

// Config selects what Run runs.
type Config struct {
	// Seed orders the specs; the same seed runs them in the same order.
	Seed int64
	// Stores limits the run to these stores; empty means all.
	Stores []string
	// FailFast stops at the first failure.
	FailFast bool
	// Verbose prints every spec as it runs, not only failures.
	Verbose bool
	// BackendErr, when set, is the backend's own failure (nil while it
	// keeps to the protocol): once it is not nil, no spec runs; each is
	// reported NotRun, as is the one in flight when it failed.
	BackendErr func() error
}

// failer records a failure for Run, which has no *testing.T.
type failer struct{ failed bool }

func (f *failer) Fail() { f.failed = true }

// Outcome is a spec's verdict.
type Outcome string

const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
	// NotRun: the backend failed before the spec could give a verdict
	// (Config.BackendErr); the backend's failure is reported once, apart.
	NotRun Outcome = "not run"
)

// The reasons of the specs a backend failure prevented: the one in flight
// when it failed, and every one after.
const (
	NotRunMessage   = "not run: the backend failed (the backend failure is reported once, apart)"
	InFlightMessage = "not run: the backend failed while this spec ran (the backend failure is reported once, apart)"
)

// Result is what one spec found: its store, its full name, its verdict and
// why (the failure, or the reason it was skipped), and how long it took.
// The suite renders nothing: reports does, from these.
type Result struct {
	Store    string
	Name     string
	Outcome  Outcome
	Message  string
	Duration time.Duration
}

// Run runs the suite against h and returns one result per spec.
func Run(h Harness, cfg Config) []Result {
	RegisterFailHandler(Fail)
	// The spec in flight when the backend failed, and every spec after it,
	// did not run: they are no verdict on the backend's conformance.
	var inFlight string
	if cfg.BackendErr != nil {
		BeforeEach(func() {
			if cfg.BackendErr() != nil {
				Skip(NotRunMessage)
			}
		})
		ReportAfterEach(func(r SpecReport) {
			if inFlight == "" && cfg.BackendErr() != nil {
				inFlight = r.FullText()
			}
		})
	}
	define(h, cfg.Stores)
	var checks []Result
	ReportAfterSuite("storecheck", func(r Report) {
		checks = convert(r)
		for i, c := range checks {
			switch {
			case c.Name == inFlight:
				checks[i].Outcome, checks[i].Message = NotRun, InFlightMessage
			case c.Outcome == Skipped && c.Message == NotRunMessage:
				checks[i].Outcome = NotRun
			}
		}
	})
	sc, rc := GinkgoConfiguration()
	sc.RandomSeed = cfg.Seed
	sc.RandomizeAllSpecs = true
	sc.FailFast = cfg.FailFast
	rc.Succinct = !cfg.Verbose
	rc.Verbose = cfg.Verbose
	rc.NoColor = true
	RunSpecs(&failer{}, "storecheck conformance: "+h.Name, sc, rc)
	return checks
}

// convert turns Ginkgo's report into results: the store is a spec's first
// container, the operation its second.
func convert(r Report) []Result {
	var out []Result
	for _, s := range r.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			continue
		}
		c := Result{Name: s.FullText(), Duration: s.RunTime}
		if h := s.ContainerHierarchyTexts; len(h) > 0 {
			c.Store = h[0]
		}
		switch {
		case s.State.Is(types.SpecStatePassed):
			c.Outcome = Passed
		case s.State.Is(types.SpecStateSkipped | types.SpecStatePending):
			c.Outcome = Skipped
			c.Message = s.Failure.Message
		default:
			c.Outcome = Failed
			c.Message = s.Failure.Message
			if loc := s.Failure.Location; loc.FileName != "" {
				c.Message += " (" + filepath.Base(loc.FileName) + ":" + strconv.Itoa(loc.LineNumber) + ")"
			}
			if ids := rulesOf(s.Labels()); len(ids) > 0 {
				c.Message += "\nrules: " + strings.Join(ids, ", ")
			}
		}
		out = append(out, c)
	}
	return out
}

// fresh holds what one spec works with: a context, a fake clock at Epoch,
// and where its store lives.
type fresh struct {
	ctx   context.Context
	clock *clockwork.FakeClock
	path  string
}

// newFresh prepares a spec: a file path in a temporary folder when the
// backend keeps files, else in-memory.
func newFresh(h Harness, file string) *fresh {
	f := &fresh{ctx: context.Background(), clock: clockwork.NewFakeClockAt(Epoch)}
	switch {
	case h.Capabilities.Files:
		f.path = filepath.Join(GinkgoT().TempDir(), file)
	case h.Capabilities.InMemory:
	default:
		Fail("the harness declares neither Files nor InMemory: the suite cannot open a store")
	}
	return f
}

// need skips the current spec unless the harness declares a capability.
// capability is a name of spec.CapabilityTable (the page lists them).
func need(has bool, capability, what string) {
	if !has {
		Skip(spec.MissingCapability(capability, what))
	}
}
