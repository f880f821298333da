package conformance

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/storecheck/storecheck/sim"
)

// A Knob is one setting of a run, defined once: its name on every surface
// (the command's --NAME, storecheck.json's snake_case key, go test's
// -storecheck.NAME), the Config field it sets, its default, what 0 means,
// the layers whose reproduce lines carry it, the commands that take it,
// and its help. The table is Knobs; the command's flags, its help and its
// config file's keys, the go test flags and their help, and every reproduce
// line are made from it, so a knob added there is on every surface.
type Knob struct {
	// Name is the command's flag (--processes).
	Name string
	// Key is the knob's name in storecheck.json (in snake_case) and under
	// go test when it is not Name ("stores" for --store, a list).
	Key string
	// Alias is a deprecated spelling, still taken by the command and its
	// config file ("timeout" for reply-timeout).
	Alias string
	// Field is the Config field it sets ("Processes"); "" for a knob of
	// the command's own, which sets none.
	Field string
	Kind  KnobKind
	// Arg names the value in the help ("N", "D", "LIST"); "" for a
	// boolean.
	Arg  string
	Help string
	// Zero is what 0 given to the knob means ("do not shrink"), told in
	// its help; "" when 0 means nothing of its own.
	Zero string
	// ZeroIs is the field's value a 0 given to the knob stands for, when
	// it is not 0: Config's 0 is its default, the knob's 0 is Zero (-1 for
	// shrink).
	ZeroIs int
	// Negate: the field holds the opposite of the knob (power-cuts sets
	// NoPowerCuts).
	Negate bool
	// Layers are the layers whose check it changes: a reproduce line of
	// one carries the knob when it is not at its default.
	Layers []Layer
	// Always are the layers whose reproduce lines carry it even at its
	// default: a history's shape, which its label names.
	Always []Layer
	// Commands are the storecheck commands that take it.
	Commands []string
	// Wire: only a program over the wire reads it, so go test, whose
	// backend is in its process, has no flag of it.
	Wire bool
	// CommandDefault is the command's default where it is not the run's
	// (Defaults): the layers of storecheck run; a command's own knob's.
	CommandDefault string
	// CommandNote and TestNote say what the default is, on the command line
	// and under go test, where no one value does ("the clock's Unix
	// seconds").
	CommandNote, TestNote string
}

// KnobKind is what a knob's value is.
type KnobKind int

// The kinds of knob.
const (
	KindString KnobKind = iota
	// KindList: comma-separated words.
	KindList
	KindInt
	KindBool
	KindDuration
	// KindSeed: one seed, N.
	KindSeed
	// KindSeeds: a range of seeds, A..B (or N).
	KindSeeds
	// KindShard: i/n.
	KindShard
)

// The storecheck commands that take knobs, as Knob.Commands names them.
const (
	cmdRun       = "run"
	cmdLinearize = "linearize"
	cmdCheck     = "check"
	cmdSim       = "sim"
	cmdReplay    = "replay"
	cmdSelftest  = "selftest"
	cmdMerge     = "merge"
)

// knobs are the run's knobs, in the order help lists them.
var knobs = []Knob{
	{Name: "store", Key: "stores", Field: "Stores", Kind: KindList, Arg: "LIST", Commands: []string{cmdRun, cmdLinearize, cmdSim, cmdSelftest},
		Help: "stores to check, comma-separated", TestNote: "every store the harness opens"},
	{Name: "layers", Field: "Layers", Kind: KindList, Arg: "LIST", Commands: []string{cmdRun}, CommandDefault: "spec,linearizability",
		Help: "layers to run, comma-separated: spec, linearizability, sim (the simulator: one schedule of each seed; storecheck sim sweeps)"},
	{Name: "seed", Field: "Seeds", Kind: KindSeed, Arg: "N", Commands: []string{cmdRun, cmdLinearize, cmdSim},
		Help:        "one seed for every layer; a failure prints the one that reproduces it",
		CommandNote: "run and linearize take the clock's Unix seconds and print them; sim sweeps --seeds"},
	{Name: "seeds", Field: "Seeds", Kind: KindSeeds, Arg: "A..B", Commands: []string{cmdLinearize, cmdSim, cmdSelftest},
		Help:        "seeds to sweep, for every layer (the specs run once, in the order of the first)",
		CommandNote: "the default sweep " + sim.DefaultSeeds.String() + " for sim and selftest's simulator layers; linearize runs one --seed",
		TestNote:    "the specs and one history of seed 1, the simulator's seeds " + TestSimSeeds.String()},
	{Name: "spec-seed", Field: "SpecSeeds", Kind: KindSeed, Arg: "N",
		Help: "the specs' seed (their order), in place of the seeds of every layer", TestNote: "the seeds of every layer, else 1"},
	{Name: "linearize-seeds", Field: "LinearizeSeeds", Kind: KindSeeds, Arg: "A..B",
		Help: "the linearizability check's seeds, a history each, in place of the seeds of every layer", TestNote: "the seeds of every layer, else 1"},
	{Name: "sim-seeds", Field: "SimSeeds", Kind: KindSeeds, Arg: "A..B",
		Help: "the simulator's seeds, a schedule each, in place of the seeds of every layer", TestNote: "the seeds of every layer, else " + TestSimSeeds.String()},
	{Name: "spec", Field: "Spec", Kind: KindString, Arg: "NAME", Layers: []Layer{LayerSpec}, Commands: []string{cmdRun},
		Help: "run only the spec of this full name, or the specs of this rule ID; a spec failure's reproduce line names its spec"},
	{Name: "shard", Field: "Shard", Kind: KindShard, Arg: "i/n", Commands: []string{cmdLinearize, cmdSim, cmdSelftest},
		Help: "run the i-th of n shares of the seeds (or of selftest's bugs), for CI matrix jobs"},
	{Name: "steps", Field: "Steps", Kind: KindInt, Arg: "N", Layers: []Layer{LayerSim}, Commands: []string{cmdSim},
		Help: "steps of a simulated schedule"},
	{Name: "clients", Field: "Clients", Kind: KindInt, Arg: "N", Layers: []Layer{LayerLinearizability, LayerSim}, Always: []Layer{LayerLinearizability},
		Commands: []string{cmdLinearize, cmdSim}, Help: "concurrent clients (a history's, or a simulated schedule's)"},
	{Name: "ops", Field: "Ops", Kind: KindInt, Arg: "N", Layers: []Layer{LayerLinearizability}, Always: []Layer{LayerLinearizability},
		Commands: []string{cmdRun, cmdLinearize, cmdSelftest}, Help: "operations of each store's linearizability history"},
	{Name: "handles", Field: "Handles", Kind: KindInt, Arg: "N", Layers: []Layer{LayerLinearizability}, Always: []Layer{LayerLinearizability},
		Commands: []string{cmdLinearize}, Help: "store handles on one database the clients share, as processes would (1 when the backend keeps no shared files)"},
	{Name: "duration", Field: "Duration", Kind: KindDuration, Arg: "D", Layers: []Layer{LayerLinearizability}, Commands: []string{cmdLinearize},
		Help: "stop a history early when it has run this long", Zero: "no limit"},
	{Name: "processes", Field: "Processes", Kind: KindInt, Arg: "N", Layers: []Layer{LayerSim}, Commands: []string{cmdSim},
		Help: "backend processes the simulated clients are spread over"},
	{Name: "power-cuts", Field: "NoPowerCuts", Negate: true, Kind: KindBool, Layers: []Layer{LayerSim}, Commands: []string{cmdSim},
		Help: "cut the power in simulated runs, losing what the backend never synced, on a forgetful FUSE file system (false: never, as on a machine without FUSE)"},
	{Name: "workers", Field: "Workers", Kind: KindInt, Arg: "N", Commands: []string{cmdSim, cmdSelftest},
		Help: "seeds (or selftest backends, or a shrink's candidates) checked at once", Zero: "one per CPU"},
	{Name: "explore", Field: "Explore", Kind: KindString, Arg: "MODE", Commands: []string{cmdSim},
		Help:     "how the simulator's sweep picks its runs: blind (each seed of the range once) or guided (as many runs, half the range's seeds and the rest children of runs that reached something new, replayed to it and branched)",
		TestNote: "blind"},
	{Name: "corpus", Field: "Corpus", Kind: KindString, Arg: "DIR", Commands: []string{cmdSim},
		Help:        "with --explore guided, start from the corpus of an earlier guided sweep's report folder (or of its shards' merge): what it reached counts as reached, and its runs that reached something new have children first; none starts from nothing",
		CommandNote: "the kit's corpus, made on the reference, where it has one for the sweep's steps, clients and processes",
		TestNote:    "the kit's corpus, made on the reference, where it has one for the sweep's steps, clients and processes"},
	{Name: "shrink", Field: "Shrink", Kind: KindInt, Arg: "RUNS", Commands: []string{cmdSim},
		Help: "runs spent shrinking a failing schedule", Zero: "do not shrink", ZeroIs: -1},
	{Name: "check-timeout", Field: "CheckTimeout", Kind: KindDuration, Arg: "D", Layers: []Layer{LayerLinearizability}, Commands: []string{cmdRun, cmdLinearize, cmdCheck},
		Help: "how long porcupine may take to check one history; past it the check is inconclusive"},
	{Name: "reply-timeout", Alias: "timeout", Field: "ReplyTimeout", Kind: KindDuration, Arg: "D", Wire: true,
		Layers: []Layer{LayerSpec, LayerLinearizability, LayerSim}, Commands: []string{cmdRun, cmdLinearize, cmdSim, cmdReplay},
		Help: "how long to wait for each reply of BACKEND before it counts as failed (--timeout is a deprecated spelling)"},
	{Name: "report-dir", Field: "ReportDir", Kind: KindString, Arg: "DIR", Commands: []string{cmdRun, cmdLinearize, cmdSim, cmdSelftest, cmdMerge},
		Help:     "where failing checks keep their files; given to the command, the JUnit XML, JSON and HTML reports are written there too",
		TestNote: "storecheck-report/IMPORT/PATH of the test's package in the system's temp folder (os.TempDir), outside the source tree"},
	{Name: "fail-fast", Field: "FailFast", Kind: KindBool, Commands: []string{cmdRun, cmdLinearize, cmdSim},
		Help: "stop at the first failure"},
	{Name: "long-specs", Field: "LongSpecs", Kind: KindBool, Layers: []Layer{LayerSpec}, Commands: []string{cmdRun},
		Help: "run the long specs too (a count past 65,535: 65,536 transactions of the backend's, a minute on a synced disk); without it each is skipped, saying so"},
	{Name: "verbose", Field: "Verbose", Kind: KindBool, Commands: []string{cmdRun},
		Help: "print every spec as it runs, and BACKEND's stderr"},
}

// Knobs are the run's knobs, in the order help lists them: each Config
// field a flag or a config file sets, with every surface it is on.
func Knobs() []Knob { return slices.Clone(knobs) }

// longSpecsHint says how each surface asks for long specs, for a long
// spec's skip.
func longSpecsHint() string {
	k := knobNamed("long-specs")
	return fmt.Sprintf("storecheck run --%s, storecheck.json %s, go test -%s", k.Name, k.ConfigKey(), k.TestFlag())
}

// knobNamed is the knob of that name.
func knobNamed(name string) Knob {
	for _, k := range knobs {
		if k.Name == name {
			return k
		}
	}
	panic("conformance: no knob " + name)
}

// ConfigKey is the knob's key in storecheck.json: its name (or Key) in
// snake_case.
func (k Knob) ConfigKey() string { return strings.ReplaceAll(k.key(), "-", "_") }

// AliasKey is the config key of the knob's deprecated spelling ("" none).
func (k Knob) AliasKey() string { return strings.ReplaceAll(k.Alias, "-", "_") }

func (k Knob) key() string {
	if k.Key != "" {
		return k.Key
	}
	return k.Name
}

// TestFlag is the knob's flag under go test ("storecheck.processes"); ""
// when go test has none (a command's own knob, or one only a program over
// the wire reads).
func (k Knob) TestFlag() string {
	if k.Field == "" || k.Wire {
		return ""
	}
	return "storecheck." + k.key()
}

// Takes reports whether the storecheck command takes the knob.
func (k Knob) Takes(command string) bool { return slices.Contains(k.Commands, command) }

// Default is the knob's default as the command line spells it ("" none):
// CommandDefault, else the run's (Defaults).
func (k Knob) Default() string {
	if k.CommandDefault != "" || k.Field == "" {
		return k.CommandDefault
	}
	return k.Value(Defaults())
}

// TestDefault is the knob's default under go test, as its flag spells it
// ("" none).
func (k Knob) TestDefault() string { return k.Value(TestDefaults()) }

// HelpText is the knob's help on the command line: what it is, what 0
// means, and its default.
func (k Knob) HelpText() string { return k.helpWith(k.CommandNote, k.Default()) }

// TestHelpText is the knob's help under go test, its go test default
// with it (Ginkgo's usage of a test binary shows no flag's default of its
// own).
func (k Knob) TestHelpText() string {
	return "storecheck: " + k.helpWith(k.TestNote, k.TestDefault())
}

func (k Knob) helpWith(note, def string) string {
	help := k.Help
	if k.Zero != "" {
		zero := "0"
		if k.Kind == KindDuration {
			zero = "0s"
		}
		help += " (" + zero + ": " + k.Zero + ")"
	}
	switch {
	case note != "":
		help += " (default: " + note + ")"
	case def != "" && (k.Kind != KindBool || def == "true"):
		help += " (default " + def + ")"
	}
	return help
}

// field is cfg's field of the knob.
func (k Knob) field(cfg reflect.Value) reflect.Value {
	f := cfg.FieldByName(k.Field)
	if !f.IsValid() {
		panic("conformance: knob " + k.Name + " names no Config field " + k.Field)
	}
	return f
}

// Value is the knob's value in cfg as the command line spells it ("" for
// no seed).
func (k Knob) Value(cfg Config) string {
	f := k.field(reflect.ValueOf(cfg))
	switch k.Kind {
	case KindList:
		var words []string
		for i := 0; i < f.Len(); i++ {
			words = append(words, f.Index(i).String())
		}
		return strings.Join(words, ",")
	case KindInt:
		if k.ZeroIs != 0 && f.Int() == int64(k.ZeroIs) {
			return "0"
		}
		return strconv.FormatInt(f.Int(), 10)
	case KindBool:
		return strconv.FormatBool(f.Bool() != k.Negate)
	case KindDuration:
		return time.Duration(f.Int()).String()
	case KindSeed, KindSeeds:
		sr, _ := f.Interface().(*SeedRange)
		switch {
		case sr == nil:
			return ""
		case k.Kind == KindSeed:
			return strconv.FormatInt(sr.First, 10)
		}
		return sr.String()
	case KindShard:
		sh := f.Interface().(Shard)
		if sh == (Shard{}) {
			sh = Shard{I: 1, N: 1}
		}
		return fmt.Sprintf("%d/%d", sh.I, sh.N)
	}
	return f.String()
}

// Set sets the knob's field of cfg from text, as the command line spells
// it; the error says what the knob takes.
func (k Knob) Set(cfg *Config, text string) error {
	f := k.field(reflect.ValueOf(cfg).Elem())
	switch k.Kind {
	case KindList:
		words := splitList(text)
		list := reflect.MakeSlice(f.Type(), len(words), len(words))
		for i, w := range words {
			list.Index(i).SetString(w)
		}
		if len(words) == 0 {
			list = reflect.Zero(f.Type())
		}
		f.Set(list)
	case KindInt:
		n, err := strconv.Atoi(text)
		if err != nil {
			return errors.New("want a number")
		}
		if n == 0 && k.ZeroIs != 0 {
			n = k.ZeroIs
		}
		f.SetInt(int64(n))
	case KindBool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return errors.New("want true or false")
		}
		f.SetBool(b != k.Negate)
	case KindDuration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return errors.New("want a duration (90s, 1m30s)")
		}
		f.SetInt(int64(d))
	case KindSeed, KindSeeds:
		if text == "" {
			f.Set(reflect.Zero(f.Type()))
			return nil
		}
		sr, err := sim.ParseSeeds(text)
		if err != nil || (k.Kind == KindSeed && sr.First != sr.Last) {
			return errors.New(map[KnobKind]string{KindSeed: "want N", KindSeeds: "want A..B"}[k.Kind])
		}
		f.Set(reflect.ValueOf(&sr))
	case KindShard:
		sh, err := sim.ParseShard(text)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(sh))
	default:
		f.SetString(text)
	}
	return nil
}

// Check says whether the knob takes text (nil), without a Config: the
// command and its config file check a value as they read it.
func (k Knob) Check(text string) error {
	var err error
	switch k.Kind {
	case KindInt:
		_, err = strconv.Atoi(text)
	case KindSeed:
		if text != "" {
			_, err = strconv.ParseInt(text, 10, 64)
		}
	case KindBool:
		_, err = strconv.ParseBool(text)
	case KindDuration:
		_, err = time.ParseDuration(text)
	}
	if err != nil {
		return errors.New("parse error")
	}
	return nil
}

// applies reports whether a reproduce line of layer l carries the knob,
// with value v and the run's default def: when it changes l's check and is
// not at its default, or always for l.
func (k Knob) applies(l Layer, v, def string) bool {
	return slices.Contains(k.Always, l) || (slices.Contains(k.Layers, l) && v != def)
}

// fillDefaults sets every knob's field of c left zero (an empty list
// too) to d's.
func fillDefaults(c *Config, d Config) {
	cv, dv := reflect.ValueOf(c).Elem(), reflect.ValueOf(d)
	for _, k := range knobs {
		f := k.field(cv)
		if f.IsZero() || (f.Kind() == reflect.Slice && f.Len() == 0) {
			f.Set(k.field(dv))
		}
	}
}

// validateKnobs says which knob's field of c the check cannot take: a
// count or a duration below zero (but a knob whose 0 stands for a
// negative field), a seed range that ends before it starts.
func validateKnobs(c Config) error {
	cv := reflect.ValueOf(c)
	seen := map[string]bool{}
	for _, k := range knobs {
		if seen[k.Field] {
			continue
		}
		seen[k.Field] = true
		f := k.field(cv)
		switch k.Kind {
		case KindInt, KindDuration:
			if f.Int() < 0 && k.ZeroIs >= 0 {
				v := fmt.Sprint(f.Interface())
				return configError(k.Field, "must not be negative, got %s", v)
			}
		case KindSeed, KindSeeds:
			if sr, _ := f.Interface().(*SeedRange); sr != nil && sr.Last < sr.First {
				return configError(k.Field, "seeds %d..%d: the range ends before it starts", sr.First, sr.Last)
			}
		}
	}
	return nil
}

// goValue is v as Go source writes it, for a Config literal.
func goValue(v reflect.Value) string {
	if d, ok := v.Interface().(time.Duration); ok {
		for _, u := range []struct {
			d    time.Duration
			name string
		}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}} {
			if d != 0 && d%u.d == 0 {
				return fmt.Sprintf("%d * time.%s", d/u.d, u.name)
			}
		}
		return fmt.Sprintf("time.Duration(%d)", int64(d))
	}
	if sr, ok := v.Interface().(*SeedRange); ok && sr != nil {
		return fmt.Sprintf("conformance.Seeds(%d, %d)", sr.First, sr.Last)
	}
	return fmt.Sprintf("%#v", v.Interface())
}
