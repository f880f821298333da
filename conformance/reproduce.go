package conformance

import (
	"fmt"
	"strings"
)

// A reproduce line is what a report prints for a check to be run again: a
// person pastes it into a shell, so every word is quoted for one. Two
// builders make them: commandLines, storecheck's command with every flag
// whose value changes the run and the backend after "--"; goTestLines, the
// go test line of the test that ran the check.
type lines interface {
	spec(store string, seed int64) string
	linearize(store string, seed int64) string
	sim(store string, seed int64) string
	// replay runs a saved schedule again ("" when no command can).
	replay(schedule string) string
	// widen names what runs more seeds ("--seeds").
	widen() string
}

// commandLines are storecheck's command lines for a run of cfg against
// backend (nil: the embedded reference).
type commandLines struct {
	cfg     Config
	backend []string
}

// commandLines are the storecheck command lines of a run of c.
func (c Config) commandLines(backend []string) lines { return commandLines{c.WithDefaults(), backend} }

// flagText is " --NAME VALUE" for a flag and its value (" --NAME=false"
// for a boolean, as a flag of the flag package must be given).
func flagText(name string, v any) string {
	if b, ok := v.(bool); ok {
		return fmt.Sprintf(" --%s=%t", name, b)
	}
	return fmt.Sprintf(" --%s %s", name, shellQuote(fmt.Sprint(v)))
}

// changing are the flags of names whose value in cfg is not the default:
// the flags that change a run and that the run was given.
func changing(cfg Config, names ...string) string {
	d := Defaults()
	var b strings.Builder
	for _, name := range names {
		v, def := option(cfg, name), option(d, name)
		if v != def {
			b.WriteString(flagText(name, v))
		}
	}
	return b.String()
}

// always are the flags of names, default or not.
func always(cfg Config, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		b.WriteString(flagText(name, option(cfg, name)))
	}
	return b.String()
}

// option is cfg's value of the flag name.
func option(cfg Config, name string) any {
	switch name {
	case "clients":
		return cfg.Clients
	case "ops":
		return cfg.Ops
	case "handles":
		return cfg.Handles
	case "duration":
		return cfg.Duration
	case "steps":
		return cfg.Steps
	case "processes":
		return cfg.Processes
	case "power-cuts":
		return !cfg.NoPowerCuts
	case "check-timeout":
		return cfg.CheckTimeout
	case "reply-timeout":
		return cfg.ReplyTimeout
	}
	panic("conformance: no flag " + name)
}

func (l commandLines) spec(store string, seed int64) string {
	return fmt.Sprintf("storecheck run --store %s --layers spec --seed %d%s%s", store, seed, changing(l.cfg, "reply-timeout"), backendSuffix(l.backend))
}

func (l commandLines) linearize(store string, seed int64) string {
	return fmt.Sprintf("storecheck linearize%s%s --store %s --seed %d%s", always(l.cfg, "clients", "ops", "handles"),
		changing(l.cfg, "duration", "check-timeout", "reply-timeout"), store, seed, backendSuffix(l.backend))
}

func (l commandLines) sim(store string, seed int64) string {
	return fmt.Sprintf("storecheck sim%s --store %s --seed %d%s", changing(l.cfg, "steps", "clients", "processes", "power-cuts", "reply-timeout"),
		store, seed, backendSuffix(l.backend))
}

func (commandLines) widen() string { return "--seeds" }

func (l commandLines) replay(schedule string) string {
	return "storecheck replay" + changing(l.cfg, "reply-timeout") + " " + shellQuote(schedule) + backendSuffix(l.backend)
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
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// configLines name the Config that runs a check of a Go harness again
// when Run was called on it outside a test (Test prints go test lines): no
// storecheck command reaches a store in another program's process.
type configLines struct{ cfg Config }

func (l configLines) line(layer Layer, store string, seed int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance.Run with conformance.Config{Stores: []string{%q}, Layers: []conformance.Layer{%q}, Seeds: conformance.Seed(%d)", store, layer, seed)
	d := Defaults()
	for _, f := range []struct {
		name     string
		v, def   any
		relevant bool
	}{
		{"Clients", l.cfg.Clients, d.Clients, layer != LayerSpec},
		{"Ops", l.cfg.Ops, d.Ops, layer == LayerLinearizability},
		{"Handles", l.cfg.Handles, d.Handles, layer == LayerLinearizability},
		{"Steps", l.cfg.Steps, d.Steps, layer == LayerSim},
		{"Processes", l.cfg.Processes, d.Processes, layer == LayerSim},
		{"NoPowerCuts", l.cfg.NoPowerCuts, d.NoPowerCuts, layer == LayerSim},
	} {
		if f.relevant && f.v != f.def {
			fmt.Fprintf(&b, ", %s: %v", f.name, f.v)
		}
	}
	return b.String() + "}"
}

func (l configLines) spec(store string, seed int64) string { return l.line(LayerSpec, store, seed) }
func (l configLines) linearize(store string, seed int64) string {
	return l.line(LayerLinearizability, store, seed)
}
func (l configLines) sim(store string, seed int64) string { return l.line(LayerSim, store, seed) }
func (configLines) replay(string) string                  { return "" }
func (configLines) widen() string                         { return "Config.Seeds" }

// goTestLines are the go test lines of a check run by Test: the package,
// -run narrowed to the check's subtest (test/layer/store), the seed, and
// every storecheck flag of the test's command line that changes the run.
type goTestLines struct {
	// test is the name of the test that called Test; pkg the package's
	// folder, as go test takes it from the module's root.
	test, pkg string
	// flags are the flags given that change the run (" -storecheck.steps
	// 500").
	flags string
}

func (l goTestLines) line(layer Layer, store string, seed int64) string {
	pattern := runPattern(append(strings.Split(l.test, "/"), string(layer), store))
	return fmt.Sprintf("go test -run %s %s -%s %d%s", shellQuote(pattern), l.pkg, flagSeed, seed, l.flags)
}

func (l goTestLines) spec(store string, seed int64) string { return l.line(LayerSpec, store, seed) }
func (l goTestLines) linearize(store string, seed int64) string {
	return l.line(LayerLinearizability, store, seed)
}
func (l goTestLines) sim(store string, seed int64) string { return l.line(LayerSim, store, seed) }

// replay: a schedule of a store in a test's process is replayed by its
// seed, the go test line; the command cannot reach that store.
func (goTestLines) replay(string) string { return "" }

func (goTestLines) widen() string { return "-" + flagSeeds }
