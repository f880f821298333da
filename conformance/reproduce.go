package conformance

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/reports"
)

// A reproduce line is what a report prints for a check to be run again: a
// person pastes it into a shell, so every word is quoted for one. Two
// builders make them: commandLines, storecheck's command with every flag
// whose value changes the run and the backend after "--"; goTestLines, the
// go test line of the test that ran the check.
type lines interface {
	// spec runs the spec of full name name alone (Config.Spec).
	spec(store string, seed int64, name string) string
	linearize(store string, seed int64) string
	sim(store string, seed int64) string
	// replay runs a saved schedule again ("" when no command can).
	replay(schedule string) string
	// recheck checks a saved history again, offline and deterministically:
	// what a linearizability failure offers before its re-run, which runs
	// real concurrency again.
	recheck(history string) string
	// widen names what runs more seeds ("--seeds").
	widen() string
}

// commandLines are storecheck's command lines for a run of cfg against
// backend (nil: the embedded reference), a program started with env
// (NAME=value, Program's WithEnv) added to the environment.
type commandLines struct {
	cfg     Config
	backend []string
	env     []string
}

// commandLines are the storecheck command lines of a run of c against the
// program backend started with env added (WithEnv).
func (c Config) commandLines(backend []string, env ...string) lines {
	return commandLines{c.WithDefaults(), backend, env}
}

// flagText is " --NAME VALUE" for a flag and its value (" --NAME=false"
// for a boolean, as a flag of the flag package must be given).
func flagText(k Knob, v string) string {
	if k.Kind == KindBool {
		return fmt.Sprintf(" --%s=%s", k.Name, v)
	}
	return fmt.Sprintf(" --%s %s", k.Name, shellQuote(v))
}

// knobFlags are the flags of storecheck command that a line of layer l
// carries: every knob the command takes that changes l's check and is not
// at its default, or that l's lines always carry.
func knobFlags(cfg Config, command string, l Layer) string {
	d := Defaults()
	var b strings.Builder
	for _, k := range knobs {
		if k.Field == "" || !k.Takes(command) {
			continue
		}
		if v := k.Value(cfg); k.applies(l, v, k.Value(d)) {
			b.WriteString(flagText(k, v))
		}
	}
	return b.String()
}

// kitEnv are the environment variables the kit itself reads that change a
// run: the FUSE device the simulator's power cuts need.
var kitEnv = []string{lossyfs.DeviceEnv}

// envPrefix is the environment a line sets before its command: NAME=value
// of each variable the kit reads (kitEnv) or of names that is set now,
// then each of set (NAME=value, what a program was started with on top of
// this process's environment, which wins over it as it did there).
func envPrefix(names []string, set ...string) string {
	given := map[string]bool{}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		given[name] = true
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, name := range append(slices.Clone(kitEnv), names...) {
		if v, ok := os.LookupEnv(name); ok && !given[name] && !seen[name] {
			seen[name] = true
			b.WriteString(name + "=" + shellQuote(v) + " ")
		}
	}
	for _, kv := range set {
		name, v, _ := strings.Cut(kv, "=")
		b.WriteString(name + "=" + shellQuote(v) + " ")
	}
	return b.String()
}

// envText is the environment l's lines set before storecheck.
func (l commandLines) envText() string { return envPrefix(l.cfg.Env, l.env...) }

func (l commandLines) spec(store string, seed int64, name string) string {
	cfg := l.cfg
	cfg.Spec = name
	return fmt.Sprintf("%sstorecheck run --store %s --layers spec --seed %d%s%s", l.envText(), store, seed,
		knobFlags(cfg, cmdRun, LayerSpec), backendSuffix(l.backend))
}

func (l commandLines) linearize(store string, seed int64) string {
	return fmt.Sprintf("%sstorecheck linearize%s --store %s --seed %d%s", l.envText(), knobFlags(l.cfg, cmdLinearize, LayerLinearizability),
		store, seed, backendSuffix(l.backend))
}

func (l commandLines) sim(store string, seed int64) string {
	return fmt.Sprintf("%sstorecheck sim%s --store %s --seed %d%s", l.envText(), knobFlags(l.cfg, cmdSim, LayerSim),
		store, seed, backendSuffix(l.backend))
}

func (commandLines) widen() string { return "--seeds" }

func (l commandLines) recheck(history string) string {
	return recheckLine("storecheck", l.cfg, history)
}

// recheckLine is the storecheck check line of a saved history: the
// command (storecheck, or go run of it), the check's own knobs that are
// not at their defaults (--check-timeout), the file. No environment: the
// check reads the history alone, never the backend.
func recheckLine(command string, cfg Config, history string) string {
	return command + " check" + knobFlags(cfg, cmdCheck, LayerLinearizability) + " " + shellQuote(history)
}

func (l commandLines) replay(schedule string) string {
	return l.envText() + "storecheck replay" + knobFlags(l.cfg, cmdReplay, LayerSim) + " " + shellQuote(schedule) + backendSuffix(l.backend)
}

// backendSuffix is " -- BACKEND ARG..." for a backend command, quoted for a
// shell; "" for the embedded reference.
func backendSuffix(command []string) string {
	if len(command) == 0 {
		return ""
	}
	return " -- " + Quote(command...)
}

// Quote is words as a POSIX shell reads them back: each one as it is when
// it holds nothing a shell reads specially, else in single quotes.
func Quote(words ...string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(quoted, " ")
}

// shellQuote is w as one word of a POSIX shell: as it is when it holds
// nothing a shell reads specially, else in single quotes.
func shellQuote(w string) string { return reports.QuoteWord(w) }

// configLines name the Config that runs a check of a Go harness again
// when Run was called on it outside a test (Test prints go test lines): no
// storecheck command reaches a store in another program's process.
type configLines struct{ cfg Config }

func (l configLines) line(layer Layer, store string, seed int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance.Run with conformance.Config{Stores: []string{%q}, Layers: []conformance.Layer{%q}, Seeds: conformance.Seed(%d)", store, layer, seed)
	d := Defaults()
	cv, dv := reflect.ValueOf(l.cfg), reflect.ValueOf(d)
	for _, k := range knobs {
		if k.Field != "" && !k.Wire && slices.Contains(k.Layers, layer) && !k.field(cv).Equal(k.field(dv)) {
			fmt.Fprintf(&b, ", %s: %s", k.Field, goValue(k.field(cv)))
		}
	}
	return b.String() + "}"
}

func (l configLines) spec(store string, seed int64, name string) string {
	l.cfg.Spec = name
	return l.line(LayerSpec, store, seed)
}
func (l configLines) linearize(store string, seed int64) string {
	return l.line(LayerLinearizability, store, seed)
}
func (l configLines) sim(store string, seed int64) string { return l.line(LayerSim, store, seed) }
func (configLines) replay(string) string                  { return "" }
func (l configLines) recheck(history string) string {
	return recheckLine("storecheck", l.cfg.WithDefaults(), history)
}

// widen names the simulator's own seeds (what the notes of a sweep are
// about): widening every layer's would run a history per seed too.
func (configLines) widen() string { return "Config.SimSeeds" }

// goTestLines are the go test lines of a check run by Test: the
// environment the harness reads (Config.Env), the package, -run narrowed
// to the check's subtest (test/layer/store), the seed, and every storecheck
// flag of the test's command line that changes the check.
type goTestLines struct {
	// test is the name of the test that called Test; pkg the package as
	// go test takes it from any folder of its module: its import path.
	test, pkg string
	// given are the storecheck flags of the command line, by knob name.
	given map[string]string
	env   []string
}

func (l goTestLines) line(layer Layer, store string, seed int64) string {
	pattern := runPattern(append(strings.Split(l.test, "/"), string(layer), store))
	var flags strings.Builder
	for _, k := range knobs {
		v, ok := l.given[k.Name]
		if !ok || !slices.Contains(k.Layers, layer) {
			continue
		}
		if k.Kind == KindBool {
			fmt.Fprintf(&flags, " -%s=%s", k.TestFlag(), v)
		} else {
			fmt.Fprintf(&flags, " -%s %s", k.TestFlag(), shellQuote(v))
		}
	}
	return fmt.Sprintf("%sgo test -run %s %s -%s %d%s", envPrefix(l.env), shellQuote(pattern), l.pkg, seedFlag, seed, flags.String())
}

func (l goTestLines) spec(store string, seed int64, name string) string {
	l.given = maps.Clone(l.given)
	if l.given == nil {
		l.given = map[string]string{}
	}
	l.given["spec"] = name
	return l.line(LayerSpec, store, seed)
}
func (l goTestLines) linearize(store string, seed int64) string {
	return l.line(LayerLinearizability, store, seed)
}
func (l goTestLines) sim(store string, seed int64) string { return l.line(LayerSim, store, seed) }

// replay: a schedule of a store in a test's process is replayed by its
// seed, the go test line; the command cannot reach that store.
func (goTestLines) replay(string) string { return "" }

func (goTestLines) widen() string { return "-" + knobNamed("sim-seeds").TestFlag() }

// recheckCommand is storecheck run from go test's module, which requires
// the kit: no storecheck need be installed.
const recheckCommand = "go run github.com/storecheck/storecheck/cmd/storecheck"

func (l goTestLines) recheck(history string) string {
	var cfg Config
	for _, k := range knobs {
		if v, ok := l.given[k.Name]; ok && k.Takes(cmdCheck) {
			_ = k.Set(&cfg, v) // taken once already, by withFlags
		}
	}
	return recheckLine(recheckCommand, cfg.WithDefaults(), history)
}
