package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec/suite"
)

// Run runs the check cfg asks for against b: the layers of cfg.Layers, in
// order (the specs, the linearizability check, the simulator), over the
// stores of cfg.Stores, and answers what they found, check by check. A
// failing check keeps its files in cfg.ReportDir and carries the
// storecheck command that runs it again.
//
// The error is a *ConfigError when cfg (or b) is one the check cannot run:
// nothing ran. It is a *BackendError when the backend failed (would not
// start, broke the protocol, crashed outside an injected fault): the run
// holds what was found before, and the backend's failure as one check;
// what it kept from running is NotRun. Either way the run is no verdict.
func Run(ctx context.Context, b Backend, cfg Config) (reports.Run, error) {
	return run(ctx, b, cfg, nil)
}

// run is Run with the reproduce lines ln (nil: the storecheck command's).
func run(ctx context.Context, b Backend, cfg Config, ln lines) (reports.Run, error) {
	if cfg.ReportDir == "" && testing.Testing() {
		// Run called from a test: its files outside the source tree, as
		// Test's.
		cfg.ReportDir = TestReportDir()
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return reports.Run{}, err
	}
	s, err := b.open(ctx, cfg)
	if err != nil {
		return reports.Run{}, err
	}
	defer s.close()
	if err := cfg.validateFor(s.info, s.harness); err != nil {
		return reports.Run{}, err
	}
	if ln == nil && s.harness {
		ln = configLines{cfg}
	}
	if ln == nil {
		ln = cfg.commandLines(s.command, s.env...)
	}
	r := &runner{ctx: ctx, s: s, cfg: cfg, lines: ln,
		result: reports.Run{Tool: "storecheck", Backend: s.info.Name, Seed: cfg.SeedsOf(cfg.Layers[0]).First}}
	for _, l := range cfg.Layers {
		sr := cfg.SeedsOf(l)
		if l == LayerSpec {
			// The specs run once, in the order of the first seed.
			sr.Last = sr.First
		}
		r.result.Seeds = append(r.result.Seeds, reports.LayerSeeds{Layer: string(l), Seeds: sr.String()})
	}
	if cfg.Shard.N > 1 {
		r.result.Shard = fmt.Sprintf("%d/%d", cfg.Shard.I, cfg.Shard.N)
	}
	started := time.Now()
	err = r.layers()
	if berr := s.err(); berr != nil && adapters.IsStall(berr) {
		// The kit or the machine stalled, not the backend: what it kept
		// from running is no verdict either way.
		c := backendFailure(berr, r.result.Checks)
		c.Name, c.Outcome = "the kit stalled (no verdict on the backend)", reports.Inconclusive
		r.add(c)
	} else if berr != nil {
		r.add(backendFailure(berr, r.result.Checks))
		if err == nil {
			err = &BackendError{berr}
		}
	}
	r.result.Duration = time.Since(started)
	return r.result, err
}

// runner is one run: its backend, its config, where its reproduce lines
// come from, and what it found so far.
type runner struct {
	ctx    context.Context
	s      *session
	cfg    Config
	lines  lines
	result reports.Run
}

func (r *runner) add(c reports.Check) { r.result.Checks = append(r.result.Checks, c) }

// layers runs the config's layers in order, the first failure ending the
// run when it fails fast.
func (r *runner) layers() error {
	for _, l := range Layers {
		if !r.cfg.runs(l) || (r.cfg.FailFast && r.result.Failed()) {
			continue
		}
		var err error
		switch l {
		case LayerSpec:
			err = r.specs()
		case LayerLinearizability:
			r.linearize()
		case LayerSim:
			err = r.simulate()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// specs is the spec layer: every spec of the stores asked, in the order of
// the seed, each answer counted for the coverage matrix on its way back.
func (r *runner) specs() error {
	answers := &adapters.Answers{}
	h := suite.HarnessOf(adapters.Counting(r.s.b, answers))
	h.OwnProcess = r.s.ownProcess(r.cfg, answers)
	seed := r.cfg.SeedsOf(LayerSpec).First
	results := suite.Run(h, suite.Config{Seed: seed, Stores: r.cfg.Stores, Spec: r.cfg.Spec, FailFast: r.cfg.FailFast,
		Long: r.cfg.LongSpecs, LongHint: longSpecsHint(), Verbose: r.cfg.Verbose, BackendErr: r.s.err})
	if r.cfg.Spec != "" && len(results) == 0 {
		return configError("Spec", "no spec of the stores %s has the full name or the rule ID %q", strings.Join(r.cfg.Stores, ", "), r.cfg.Spec)
	}
	for _, res := range results {
		c := reports.Check{Store: res.Store, Layer: suite.Layer, Name: res.Name, Outcome: reports.Outcome(res.Outcome),
			Message: res.Message, Duration: res.Duration}
		if res.Outcome != suite.Passed && res.Outcome != suite.Skipped {
			// The line runs this spec alone, by its full name.
			c.Reproduce = r.lines.spec(res.Store, seed, res.Name)
		}
		r.add(c)
	}
	counted := map[string]map[string]int{}
	for _, name := range r.cfg.Stores {
		counted[name] = answers.Of(name)
	}
	r.result.Coverage = append(r.result.Coverage, layerCoverage(r.cfg.Stores, suite.Layer, "", counted)...)
	return nil
}

// backendFailure is a backend's own failure as the one check that reports
// it: its cause (with the backend's last stderr lines, which the exec
// adapter quotes), the check in flight when it came, and how many checks it
// kept from running (NotRun among checks).
func backendFailure(err error, checks []reports.Check) reports.Check {
	c := reports.Check{Store: "backend", Layer: reports.BackendLayer, Name: "the backend failed (no verdict on its conformance)",
		Outcome: reports.Failed}
	notRun := 0
	var inFlight string
	for _, k := range checks {
		if k.Outcome != reports.NotRun {
			continue
		}
		notRun++
		if k.Message == suite.InFlightMessage {
			inFlight = k.Store + "/" + k.Layer + ": " + k.Name
		}
	}
	c.Message = err.Error()
	if inFlight != "" {
		c.Message = "while " + inFlight + " ran: " + c.Message
	}
	if notRun > 0 {
		c.Message += fmt.Sprintf("\n%d checks not run", notRun)
	}
	return c
}

// IsBackendFailure reports whether err says the backend failed (a
// *BackendError): no verdict on its conformance.
func IsBackendFailure(err error) bool {
	var be *BackendError
	return errors.As(err, &be)
}
