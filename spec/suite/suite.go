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
// conformance run the very same specs through Run. Ginkgo keeps one suite
// a process, in globals; Run and Test reset it before each run and take
// turns, so either may be called again, and from several goroutines.
package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/extensions/globals"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Epoch is where every spec's fake clock starts: a fixed instant, so that
// runs are the same byte for byte.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Layer is the report layer of the suite's checks.
const Layer = "spec"

// Define adds the suite's specs for h to Ginkgo's tree. Call it before
// RunSpecs, once.
func Define(h Harness) { define(h, nil) }

// ginkgoTurn is held by the run that owns Ginkgo's one global suite: a
// run resets it (globals.Reset: what RunSpecs refuses twice is the
// suite, not the process), defines its specs and runs them, and the next
// run waits its turn. This is the one place the kit meets Ginkgo's rule of
// one suite a process.
var ginkgoTurn sync.Mutex

// freshSuite takes Ginkgo's suite for a run, empty: release ends the turn.
func freshSuite() (release func()) {
	ginkgoTurn.Lock()
	globals.Reset()
	return ginkgoTurn.Unlock
}

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
	defer freshSuite()()
	RegisterFailHandler(Fail)
	Define(h)
	sc, rc := ginkgoDefaults()
	return RunSpecs(t, description(h), sc, rc)
}

// ginkgoDefaults is Ginkgo's configuration as it was before any run of
// the suite: RunSpecs keeps the configuration it is given as its global
// one, which GinkgoConfiguration then returns, so a run of one spec
// (Config.Spec) would otherwise focus every later run of the process on
// that spec, and report the rest skipped.
var ginkgoDefaults = sync.OnceValues(GinkgoConfiguration)

// Config selects what Run runs.
type Config struct {
	// Seed orders the specs; the same seed runs them in the same order.
	Seed int64
	// Stores limits the run to these stores; empty means all.
	Stores []string
	// Spec, when set, runs one spec, or the specs of one rule: those
	// labelled with the rule Spec names (a spec.Rule ID,
	// "continuity.upsert_continuity_record.fence_not_lower"), else the one
	// whose full name (its store, operation and sentence, Result.Name) is
	// Spec.
	Spec string
	// FailFast stops at the first failure.
	FailFast bool
	// Long runs the long specs too (Long marks them): without it, or a
	// Spec naming one, each is skipped, saying so and how to ask for it
	// (LongHint).
	Long bool
	// LongHint is how the caller's surface asks for long specs ("--long-specs"),
	// for a long spec's skip.
	LongHint string
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
	defer freshSuite()()
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
	runLong, longHint = cfg.Long || cfg.Spec != "", cfg.LongHint
	defer func() { runLong, longHint = false, "" }()
	define(h, cfg.Stores)
	var checks []Result
	ReportAfterSuite("storecheck", func(r Report) {
		checks = convert(r, cfg.Spec)
		for i, c := range checks {
			switch {
			case c.Name == inFlight:
				checks[i].Outcome, checks[i].Message = NotRun, InFlightMessage
			case c.Outcome == Skipped && c.Message == NotRunMessage:
				checks[i].Outcome = NotRun
			}
		}
	})
	sc, rc := ginkgoDefaults()
	sc.RandomSeed = cfg.Seed
	sc.RandomizeAllSpecs = true
	sc.FailFast = cfg.FailFast
	rc.Succinct = !cfg.Verbose
	rc.Verbose = cfg.Verbose
	rc.NoColor = true
	if cfg.Spec != "" {
		sc.LabelFilter, sc.FocusStrings = focus(cfg.Spec, description(h))
	}
	f := &failer{}
	RunSpecs(f, description(h), sc, rc)
	if rc.Succinct && !f.failed {
		// Ginkgo's succinct line ends without a newline when the suite
		// passed: end it, so what follows starts a line of its own.
		fmt.Println()
	}
	return checks
}

// description is the suite's name for Ginkgo.
func description(h Harness) string { return "storecheck conformance: " + h.Name }

// focus is the label filter or the focus of Ginkgo's that runs the specs
// of name (Config.Spec) in the suite of description: a rule's label when
// name is a rule's ID, else the full name (which Ginkgo's focus matches
// after the description), each as a pattern matching it alone.
func focus(name, description string) (labelFilter string, focusStrings []string) {
	if isRule(name) {
		return "/^" + regexp.QuoteMeta(RuleLabel+name) + "$/", nil
	}
	return "", []string{"^" + regexp.QuoteMeta(description+" "+name) + "$"}
}

// isRule says whether name is the ID of a rule of one of the contracts.
func isRule(name string) bool {
	for _, rules := range [][]spec.Rule{c.Rules, r.Rules, cli.Rules} {
		if slices.ContainsFunc(rules, func(r spec.Rule) bool { return r.ID == name }) {
			return true
		}
	}
	return false
}

// focused says whether the spec of report s is among those name selects
// (Config.Spec; every spec when it is ""): a spec Ginkgo's filter left
// out is no result of the run, not a skip.
func focused(s types.SpecReport, name string) bool {
	return name == "" || slices.Contains(s.Labels(), RuleLabel+name) || s.FullText() == name
}

// convert turns Ginkgo's report into results, those of the specs name
// selects (Config.Spec): the store is a spec's first container, the
// operation its second.
func convert(r Report, name string) []Result {
	var out []Result
	for _, s := range r.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || !focused(s, name) {
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
			if why := refusal(s); why != "" {
				c.Message += "\nrules: none of the contract: the backend refused a request itself (" + why + "), which no rule makes"
			} else if ids := rulesOf(s.Labels()); len(ids) > 0 {
				c.Message += "\nrules: " + strings.Join(ids, ", ")
			}
		}
		out = append(out, c)
	}
	return out
}

// refusal is the first request the backend refused itself during the
// spec of report s (refusing), "" for none.
func refusal(s types.SpecReport) string {
	for _, e := range s.ReportEntries {
		if e.Name == refusedEntry {
			return e.StringRepresentation()
		}
	}
	return ""
}

// inSpec marks the context of a running spec (refusing notes its
// refused requests in the spec's report; elsewhere there is no spec).
type inSpec struct{}

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
	f := &fresh{ctx: context.WithValue(context.Background(), inSpec{}, true), clock: clockwork.NewFakeClockAt(Epoch)}
	switch {
	case h.Capabilities.Files:
		f.path = filepath.Join(GinkgoT().TempDir(), file)
	case h.Capabilities.InMemory:
	default:
		Fail("the harness declares neither Files nor InMemory: the suite cannot open a store")
	}
	return f
}

// A long spec is one too long for every run (a count past 65,535 takes
// 65,536 transactions of the seed's, a minute on a synced disk): it runs
// when the run asks for long specs (Config.Long) or names it, and is
// otherwise skipped, saying why, never left out unsaid.
var (
	// Long labels a long spec, for Ginkgo's own label filter too.
	Long = Label("long")
	// runLong and longHint are the running suite's Config.Long (or Spec)
	// and LongHint: Run sets them in its turn (ginkgoTurn).
	runLong  bool
	longHint string
)

// long skips the running long spec unless the run asks for long specs.
func long(what string) {
	if runLong {
		return
	}
	how := longHint
	if how == "" {
		how = "suite.Config.Long"
	}
	Skip("a long spec, not run: " + what + "; ask for long specs to run it (" + how + ")")
}

// need skips the current spec unless the harness declares a capability.
// capability is a name of spec.CapabilityTable (the page lists them).
func need(has bool, capability, what string) {
	if !has {
		Skip(spec.MissingCapability(capability, what))
	}
}
