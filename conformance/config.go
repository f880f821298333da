package conformance

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// Layer is one layer of the check.
type Layer string

// The layers, in the order a run takes them: the cheapest verdicts first.
const (
	// LayerSpec: every rule of the contract as a spec (spec/suite).
	LayerSpec Layer = "spec"
	// LayerLinearizability: concurrent clients on handles of one database,
	// a recorded history, porcupine asking whether some sequential order
	// of it is one the contract allows.
	LayerLinearizability Layer = "linearizability"
	// LayerSim: the deterministic simulator: seeded schedules paused at the
	// store's yield points, crashed at its crash points, every answer
	// judged as it comes; a failure is shrunk and saved.
	LayerSim Layer = "sim"
)

// Layers are every layer, in run order.
var Layers = []Layer{LayerSpec, LayerLinearizability, LayerSim}

// SeedRange is an inclusive range of seeds (sim.SeedRange: written A..B).
type SeedRange = sim.SeedRange

// Shard is the i-th of n shares of a sweep's seeds (sim.Shard).
type Shard = sim.Shard

// Seeds is the range first..last, for Config.Seeds.
func Seeds(first, last int64) *SeedRange { return &SeedRange{First: first, Last: last} }

// Seed is the one seed s, for Config.Seeds.
func Seed(s int64) *SeedRange { return Seeds(s, s) }

// Config is one run of the check: what to check, how hard, and where the
// failures go. The zero value is the default run; WithDefaults fills every
// field left zero from Defaults, so a Go caller, the go test flags and the
// command line get the same run.
type Config struct {
	// Stores are the stores to check, by name (none: every store the kit
	// knows). A store the backend does not implement is skipped, with that
	// reason.
	Stores []string
	// Layers are the layers to run (none: every layer), run in Layers'
	// order.
	Layers []Layer
	// Seeds are the run's seeds: the specs run once, in the order of the
	// first; the linearizability check records one history per seed; the
	// simulator runs one schedule per seed. Nil: each layer's default
	// (DefaultSeeds).
	Seeds *SeedRange
	// SpecSeeds, LinearizeSeeds and SimSeeds are one layer's seeds, in
	// place of Seeds (nil: Seeds').
	SpecSeeds, LinearizeSeeds, SimSeeds *SeedRange
	// Shard runs the i-th of n shares of the seeds, for CI matrix jobs
	// (zero: every seed).
	Shard Shard
	// Spec, when set, narrows the spec layer to one spec, or one rule's
	// specs: the specs labelled with the rule of that ID
	// ("continuity.upsert_continuity_record.writes_record"), else the one
	// of that full name (its check's Name). A spec failure's reproduce line
	// sets it. A name no spec has is a *ConfigError.
	Spec string
	// Clients run at once: a history's, and a simulated schedule's.
	Clients int
	// Ops are the operations of one linearizability history.
	Ops int
	// Handles are the store handles a history's clients share, on one
	// database, as processes would (1 when the backend keeps no shared
	// files; over the wire each handle is a process of its own).
	Handles int
	// Duration stops a history early when it has run this long (0: no
	// limit).
	Duration time.Duration
	// Steps are the operations of one simulated schedule.
	Steps int
	// Processes are the backend processes a schedule's clients are spread
	// over (in this process: handles, each dropped as a killed process
	// would be).
	Processes int
	// NoPowerCuts: the simulator never cuts the power (as on a machine
	// without FUSE, where it cannot). By default a seed may cut it: its run
	// keeps the database on a forgetful file system (fault/lossyfs) that
	// loses what the backend never synced.
	NoPowerCuts bool
	// Workers are the seeds checked at once (0: one per CPU).
	Workers int
	// Explore is how the simulator's sweep picks its runs (sim.ExploreModes:
	// "" or blind, each seed once; guided, the same count of runs, some
	// spent on children of the runs that reached something new).
	Explore string
	// Corpus is the report folder of an earlier guided sweep (or of the
	// merge of its shards) that a guided sweep starts from: what it
	// reached counts as reached, and its parents have children first.
	// Empty, a guided sweep starts from the kit's corpus (sim.BuiltinCorpus)
	// where it has one for the sweep's shape; NoCorpus, from nothing.
	Corpus string
	// Shrink is how many runs a failing schedule's shrinking may take (0:
	// the default, DefaultShrink; negative: do not shrink, which the shrink
	// knob's 0 stands for: Knobs).
	Shrink int
	// CheckTimeout bounds porcupine's check of one history; past it the
	// check is inconclusive, never a pass.
	CheckTimeout time.Duration
	// ReplyTimeout bounds the wait for each reply of a program over the
	// wire; past it the program has failed.
	ReplyTimeout time.Duration
	// ReportDir is where failing checks keep their files: a history and
	// its visualization, a shrunk schedule, its trace and interleaving
	// (none: DefaultReportDir in the working folder; in a test binary,
	// TestReportDir, outside the source tree).
	ReportDir string
	// FailFast stops at the first failure.
	FailFast bool
	// LongSpecs runs the long specs too (suite.Long: a count past 65,535,
	// 65,536 transactions); without it each is skipped and says so.
	LongSpecs bool
	// Verbose prints every spec as it runs, and copies a program's stderr
	// to Log.
	Verbose bool
	// Withdraw are capabilities the backend declares that the run must not
	// use, by their names in the hello ("shared_files"): a capability is
	// only ever taken away, never added.
	Withdraw []string
	// Progress, when set, shows a long layer's progress there (on a
	// terminal, one line rewritten in place).
	Progress io.Writer
	// Log, when set, receives what a run says on the side: a program's
	// stderr (Verbose), a file that could not be written.
	Log io.Writer
	// Env are the environment variables the backend reads, by name: every
	// reproduce line sets those set now (NAME=value) before its command,
	// so that it runs what failed (a harness that reads MYSTORE_RACY).
	Env []string
}

// The defaults the command line and the tests show.
const (
	// DefaultShrink is the runs a failing schedule's shrinking may take.
	DefaultShrink = 2000
	// DefaultCheckTimeout bounds porcupine's check of one history.
	DefaultCheckTimeout = 60 * time.Second
	// DefaultReportDir is where failing checks keep their files.
	DefaultReportDir = "storecheck-report"
	// NoCorpus, as the corpus, starts a guided sweep from nothing, not
	// from the kit's corpus.
	NoCorpus = "none"
)

// Defaults is every field's default, in one place: WithDefaults fills a
// zero field from it, the command's flags show it as theirs, and a
// library the run goes through (linearizability.Config, sim.Params,
// adapters) is read for its own. Seeds stays nil: each layer takes its own
// (DefaultSeeds).
func Defaults() Config {
	lin, sp := linearizability.Config{}.WithDefaults(), sim.DefaultParams()
	return Config{
		Stores:       stores.Names(),
		Layers:       slices.Clone(Layers),
		Clients:      lin.Clients,
		Ops:          lin.Ops,
		Handles:      lin.Handles,
		Steps:        sp.Steps,
		Processes:    sp.Processes,
		Shrink:       DefaultShrink,
		CheckTimeout: DefaultCheckTimeout,
		ReplyTimeout: adapters.DefaultTimeout,
		ReportDir:    DefaultReportDir,
	}
}

// DefaultSeeds are a layer's seeds when Config.Seeds is nil: the specs in
// the order of seed 1, one history of seed 1, the simulator's default sweep
// (sim.DefaultSeeds, the sweep every store's coverage is measured on).
func DefaultSeeds(l Layer) SeedRange {
	if l == LayerSim {
		return sim.DefaultSeeds
	}
	return SeedRange{First: 1, Last: 1}
}

// WithDefaults is c with every knob's field left zero at its default
// (Defaults).
func (c Config) WithDefaults() Config {
	fillDefaults(&c, Defaults())
	return c
}

// SeedsOf are the seeds layer l runs: the layer's own (SpecSeeds,
// LinearizeSeeds, SimSeeds), else Seeds, else the layer's default.
func (c Config) SeedsOf(l Layer) SeedRange {
	own := map[Layer]*SeedRange{LayerSpec: c.SpecSeeds, LayerLinearizability: c.LinearizeSeeds, LayerSim: c.SimSeeds}[l]
	switch {
	case own != nil:
		return *own
	case c.Seeds != nil:
		return *c.Seeds
	}
	return DefaultSeeds(l)
}

// runs reports whether the config runs layer l.
func (c Config) runs(l Layer) bool { return slices.Contains(c.Layers, l) }

// A ConfigError is a config the check cannot run: it names the field and
// what is wrong with it.
type ConfigError struct {
	// Field is the Config field ("Stores", "Seeds", ...).
	Field string
	// Problem says what is wrong, and what is accepted.
	Problem string
}

func (e *ConfigError) Error() string { return "conformance: " + e.Field + ": " + e.Problem }

func configError(field, format string, args ...any) error {
	return &ConfigError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// withdrawable are the capabilities Config.Withdraw may name.
var withdrawable = []string{spec.CapFiles, spec.CapSharedFiles, spec.CapInMemory, spec.CapSQLiteLocking, spec.CapClientSchemaTable, spec.CapConcurrent}

// Validate says what in c the check cannot run, naming the field: an
// unknown store or layer, a seed range that ends before it starts, a shard
// out of its range, a count below zero, a spec to narrow to when the spec
// layer does not run, a capability it cannot withdraw.
func (c Config) Validate() error {
	for _, s := range c.Stores {
		if _, ok := stores.Lookup(s); !ok {
			return configError("Stores", "unknown store %q; accepted: %s", s, strings.Join(stores.Names(), ", "))
		}
	}
	for _, l := range c.Layers {
		if !slices.Contains(Layers, l) {
			return configError("Layers", "unknown layer %q; accepted: %s", l, layerList(Layers))
		}
	}
	if sh := c.Shard; sh != (Shard{}) && (sh.N < 1 || sh.I < 1 || sh.I > sh.N) {
		return configError("Shard", "shard %d/%d: want i/n with 1 <= i <= n", sh.I, sh.N)
	}
	if err := validateKnobs(c); err != nil {
		return err
	}
	if c.Spec != "" && len(c.Layers) > 0 && !c.runs(LayerSpec) {
		// Else the narrowing would be ignored without a word.
		return configError("Spec", "narrows the spec layer, which the run does not run (its layers: %s): run the spec layer too, or narrow nothing",
			layerList(c.Layers))
	}
	if _, err := sim.ParseExplore(c.Explore); err != nil {
		return configError("Explore", "%v", err)
	}
	// The corpus itself is read where the sweep starts (simulate).
	if c.Corpus != "" && c.Corpus != NoCorpus && c.Explore != sim.ExploreGuided {
		return configError("Corpus", "corpus %s: a guided sweep's corpus, and the sweep is not guided: give explore %s too", c.Corpus, sim.ExploreGuided)
	}
	for _, w := range c.Withdraw {
		if !slices.Contains(withdrawable, w) {
			return configError("Withdraw", "unknown capability %q; accepted: %s", w, strings.Join(withdrawable, ", "))
		}
	}
	return nil
}

// validateFor says what in c the backend declared in info cannot run: a
// layer that must open a store of a backend that declares neither files
// nor in_memory, or no store asked that the backend implements; and, of a
// Go harness, a crash point the simulator could never arm.
func (c Config) validateFor(info adapters.Hello, harness bool) error {
	if harness {
		if err := validateCrashPoints(info); err != nil {
			return err
		}
	}
	implemented := false
	for _, s := range c.Stores {
		if !slices.Contains(info.Stores, s) {
			continue
		}
		implemented = true
		if caps := info.CapabilitiesOf(s); len(c.Layers) > 0 && !caps.Files && !caps.InMemory {
			return configError("Layers", "the backend %s declares neither %s nor %s for the %s store: no layer can open it", info.Name, spec.CapFiles, spec.CapInMemory, s)
		}
	}
	if implemented {
		return nil
	}
	return configError("Stores", "the backend %s implements none of %s (it implements: %s)", info.Name, strings.Join(c.Stores, ", "), strings.Join(info.Stores, ", "))
}

func layerList(ls []Layer) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = string(l)
	}
	return strings.Join(names, ", ")
}

// withdraw is caps without the capabilities names withdraws.
func withdraw(caps spec.Capabilities, names []string) spec.Capabilities {
	for _, name := range names {
		switch name {
		case spec.CapFiles:
			caps.Files = false
		case spec.CapSharedFiles:
			caps.SharedFiles = false
		case spec.CapInMemory:
			caps.InMemory = false
		case spec.CapSQLiteLocking:
			caps.SQLiteLocking = false
		case spec.CapClientSchemaTable:
			caps.ClientSchemaTable = false
		case spec.CapConcurrent:
			caps.ConcurrentRequests = false
		}
	}
	return caps
}
