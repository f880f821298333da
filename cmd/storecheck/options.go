package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/sim"
)

// An option is one command-line flag, defined once: its name, its default,
// its help and its key in storecheck.json. Every command that takes it
// shares the definition, the flag sets are built from it, and so are the
// help, the usage errors and the config file's keys; a default of a field
// of the run (conformance.Config) is read from conformance.Defaults, so the
// command line and a Go caller cannot disagree.
type option struct {
	name string
	kind optionKind
	// def is the default as the command line spells it; "" for none (a
	// boolean's default is false).
	def string
	// arg names the value in the help ("N", "D", "LIST"); "" for a boolean.
	arg  string
	help string
	// alias is a deprecated spelling of the same flag, still accepted.
	alias string
}

type optionKind int

const (
	kindString optionKind = iota
	kindInt
	kindInt64
	kindBool
	kindDuration
)

// defaults are the run's defaults, the library's own.
var defaults = conformance.Defaults()

// options are every command's flags, in help order.
var options = []option{
	{name: "store", arg: "LIST", def: strings.Join(defaults.Stores, ","), help: "stores to check, comma-separated"},
	{name: "layers", arg: "LIST", def: "spec,linearizability", help: "layers to run, comma-separated: spec, linearizability, sim (the simulator: one schedule of the seed; storecheck sim sweeps)"},
	{name: "seed", kind: kindInt64, arg: "N", help: "one seed (default: run and linearize take the clock's Unix seconds and print them; sim sweeps --seeds)"},
	{name: "seeds", arg: "A..B", help: "seeds to sweep (default: the default sweep " + sim.DefaultSeeds.String() + " for sim and selftest's simulator layers; linearize runs one --seed)"},
	{name: "shard", arg: "i/n", def: "1/1", help: "run the i-th of n shares of the seeds (or of selftest's bugs), for CI matrix jobs"},
	{name: "ops", kind: kindInt, arg: "N", def: strconv.Itoa(defaults.Ops), help: "operations of each store's linearizability history"},
	{name: "clients", kind: kindInt, arg: "N", def: strconv.Itoa(defaults.Clients), help: "concurrent clients (a history's, or a simulated schedule's)"},
	{name: "handles", kind: kindInt, arg: "N", def: strconv.Itoa(defaults.Handles), help: "store handles on one database the clients share, as processes would (1 when the backend keeps no shared files)"},
	{name: "duration", kind: kindDuration, arg: "D", def: "0s", help: "stop a history early when it has run this long (0s: no limit)"},
	{name: "steps", kind: kindInt, arg: "N", def: strconv.Itoa(defaults.Steps), help: "steps of a simulated schedule"},
	{name: "processes", kind: kindInt, arg: "N", def: strconv.Itoa(defaults.Processes), help: "backend processes the simulated clients are spread over"},
	{name: "power-cuts", kind: kindBool, def: strconv.FormatBool(!defaults.NoPowerCuts), help: "cut the power in simulated runs, losing what the backend never synced, on a forgetful FUSE file system (--power-cuts=false runs without, as a machine without FUSE does)"},
	{name: "shrink", kind: kindInt, arg: "RUNS", def: strconv.Itoa(defaults.Shrink), help: "runs spent shrinking a failing schedule (0: do not shrink)"},
	{name: "workers", kind: kindInt, arg: "N", def: "0", help: "seeds (or selftest backends) checked at once (0: one per CPU)"},
	{name: "bugs", arg: "LIST", help: "selftest only these deliberate bugs, comma-separated (default: every bug of the stores asked for); the reference is checked too"},
	{name: "exec-sample", kind: kindInt, arg: "N", def: "1", help: "bugs of each store selftest also runs over the exec adapter"},
	{name: "cheapest", kind: kindBool, help: "each bug through its cheapest catching layer only (tried in cost order: sim, spec, linearizability); the reference and the exec sample go through every layer"},
	{name: "reply-timeout", kind: kindDuration, arg: "D", def: defaults.ReplyTimeout.String(), alias: "timeout", help: "how long to wait for each reply of BACKEND before it counts as failed (--timeout is a deprecated spelling)"},
	{name: "check-timeout", kind: kindDuration, arg: "D", def: defaults.CheckTimeout.String(), help: "how long porcupine may take to check one history; past it the check is inconclusive"},
	{name: "report-dir", arg: "DIR", def: defaults.ReportDir, help: "where failing checks keep their files; given, the JUnit XML, JSON and HTML reports are written there too"},
	{name: "fail-fast", kind: kindBool, help: "stop at the first failure"},
	{name: "verbose", kind: kindBool, help: "print every spec as it runs, and BACKEND's stderr"},
	{name: "quiet", kind: kindBool, help: "no progress line on stderr"},
}

// optionNamed is the option of that name (or deprecated alias).
func optionNamed(name string) (option, bool) {
	for _, o := range options {
		if o.name == name || (o.alias != "" && o.alias == name) {
			return o, true
		}
	}
	return option{}, false
}

// configKey is the option's key in storecheck.json: its name in snake_case
// ("stores" for --store, which takes a list there).
func (o option) configKey() string {
	if o.name == "store" {
		return "stores"
	}
	return strings.ReplaceAll(o.name, "-", "_")
}

// check parses s as the option's kind: nil when the flag would take it.
func (o option) check(s string) error {
	var err error
	switch o.kind {
	case kindInt:
		_, err = strconv.Atoi(s)
	case kindInt64:
		if s != "" {
			_, err = strconv.ParseInt(s, 10, 64)
		}
	case kindBool:
		_, err = strconv.ParseBool(s)
	case kindDuration:
		_, err = time.ParseDuration(s)
	}
	if err != nil {
		return errors.New("parse error")
	}
	return nil
}

// source is where a flag's value came from.
type source int

const (
	fromDefault source = iota
	fromConfig
	fromCommandLine
)

// value is a flag.Value of any option kind: the text, checked on Set.
type value struct {
	o    option
	text string
	from source
	// setting is where a Set comes from: the command line, but while the
	// config is applied, the config.
	setting source
}

func (v *value) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

func (v *value) Set(s string) error {
	if err := v.o.check(s); err != nil {
		return err
	}
	v.text, v.from = s, v.setting
	return nil
}

// IsBoolFlag lets a boolean flag stand alone (--fail-fast).
func (v *value) IsBoolFlag() bool { return v.o.kind == kindBool }

// flags are one command's parsed flags.
type flags struct {
	cmd  *command
	fs   *flag.FlagSet
	vals map[string]*value
	// line is the command line's flags and arguments, before any "--".
	line []string
}

// newFlags is the flag set of cmd, built from its options' definitions.
func newFlags(cmd *command) *flags {
	f := &flags{cmd: cmd, fs: flag.NewFlagSet(cmd.name, flag.ContinueOnError), vals: map[string]*value{}}
	f.fs.SetOutput(io.Discard)
	for _, name := range cmd.options {
		o, ok := optionNamed(name)
		if !ok {
			panic("command " + cmd.name + " takes an undefined option " + name)
		}
		v := &value{o: o, text: o.def, setting: fromCommandLine}
		if o.kind == kindBool && v.text == "" {
			v.text = "false"
		}
		f.vals[o.name] = v
		f.fs.Var(v, o.name, o.help)
		if o.alias != "" {
			f.fs.Var(v, o.alias, "deprecated: --"+o.name)
		}
	}
	return f
}

func (f *flags) get(name string) *value {
	v, ok := f.vals[name]
	if !ok {
		panic("command " + f.cmd.name + " reads option " + name + ", which it does not take")
	}
	return v
}

func (f *flags) str(name string) string { return f.get(name).text }

func (f *flags) num(name string) int {
	n, _ := strconv.Atoi(f.get(name).text)
	return n
}

func (f *flags) num64(name string) (int64, bool) {
	t := f.get(name).text
	n, err := strconv.ParseInt(t, 10, 64)
	return n, t != "" && err == nil
}

func (f *flags) on(name string) bool {
	b, _ := strconv.ParseBool(f.get(name).text)
	return b
}

func (f *flags) dur(name string) time.Duration {
	d, _ := time.ParseDuration(f.get(name).text)
	return d
}

// from says where the option's value came from.
func (f *flags) from(name string) source { return f.get(name).from }

// given reports whether the option was set, on the command line or in the
// config file.
func (f *flags) given(name string) bool { return f.from(name) != fromDefault }

// args are the arguments left after the flags.
func (f *flags) args() []string { return f.fs.Args() }

// accepted lists the command's flags, for a usage error.
func (c *command) accepted() string {
	if len(c.options) == 0 {
		return "usage: " + c.synopsis()
	}
	return "accepted flags: --" + strings.Join(c.options, ", --")
}

// synopsis is the command's usage line.
func (c *command) synopsis() string {
	s := "storecheck " + c.name
	if len(c.options) > 0 {
		s += " [flags]"
	}
	if c.positional != "" {
		s += " " + c.positional
	}
	if c.backend {
		s += " [-- BACKEND [ARG...]]"
	}
	return s
}

// writeHelp writes the command's usage: its synopsis, what it does, and
// every flag it takes with its default.
func (c *command) writeHelp(w io.Writer) {
	fmt.Fprintf(w, "%s\n", c.synopsis())
	for _, line := range strings.Split(c.summary, "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
	for _, name := range c.options {
		o, _ := optionNamed(name)
		flagText := "--" + o.name
		if o.arg != "" {
			flagText += " " + o.arg
		}
		help := o.help
		if o.def != "" && (o.kind != kindBool || o.def == "true") {
			help += fmt.Sprintf(" (default %s)", o.def)
		}
		fmt.Fprintf(w, "  %-22s %s\n", flagText, wrap(help, 25, 80))
	}
}

// wrap breaks text into lines of at most width columns, the first starting
// at column indent and the others indented to it.
func wrap(text string, indent, width int) string {
	var b strings.Builder
	col := indent
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if col+1+len(word) > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				col = indent
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

// writeUsage writes storecheck's help: every command, and every flag of
// every command with its default, generated from the definitions.
func writeUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: storecheck [COMMAND] [flags] [-- BACKEND [ARG...]]\n\n")
	fmt.Fprintf(w, "storecheck checks a store backend against the contracts: the embedded\n")
	fmt.Fprintf(w, "reference when no BACKEND is named, else BACKEND, a program speaking the wire\n")
	fmt.Fprintf(w, "protocol (docs/protocol.md). The default command is run.\n\nCommands:\n")
	for _, c := range commands {
		first, _, _ := strings.Cut(c.summary, "\n")
		fmt.Fprintf(w, "  %-10s %s\n", c.name, first)
	}
	fmt.Fprintf(w, "\nEvery command but help reads %s in the folder it runs in (or --config FILE,\n", ConfigFile)
	fmt.Fprintf(w, "before any other flag) for flags a CI job repeats, under their snake_case names;\n")
	fmt.Fprintf(w, "a flag on the command line wins.\n")
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		fmt.Fprintln(w)
		c.writeHelp(w)
	}
	fmt.Fprintf(w, "\nExit codes: 0 passed, 1 a check failed, 2 usage error, 3 backend failure,\n")
	fmt.Fprintf(w, "4 inconclusive (a check could not decide; nothing failed).\n")
}

// parse reads cmd's flags from args, the config's values first (so that
// the command line wins). It answers the flags, the backend command after
// "--" (else the config's), and, when it is done with the invocation (a
// usage error, or --help), the exit code and false.
func parse(cmd *command, args []string, stdout, stderr io.Writer) (*flags, []string, int, bool) {
	var backend []string
	if i := slices.Index(args, "--"); i >= 0 {
		if !cmd.backend {
			fmt.Fprintf(stderr, "storecheck %s: unexpected argument \"--\"; %s takes no backend\n", cmd.name, cmd.name)
			return nil, nil, exitUsage, false
		}
		if i == len(args)-1 {
			fmt.Fprintf(stderr, "storecheck %s: no command after --; %s\n", cmd.name, cmd.accepted())
			return nil, nil, exitUsage, false
		}
		args, backend = args[:i], args[i+1:]
	}
	f := newFlags(cmd)
	f.line = args
	if err := config.apply(f); err != nil {
		fmt.Fprintf(stderr, "storecheck %s: %v\n", cmd.name, err)
		return nil, nil, exitUsage, false
	}
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cmd.writeHelp(stdout)
			return nil, nil, exitPassed, false
		}
		fmt.Fprintf(stderr, "storecheck %s: %v; %s\n", cmd.name, err, cmd.accepted())
		return nil, nil, exitUsage, false
	}
	if want := cmd.nargs; f.fs.NArg() != want {
		if want == 0 {
			fmt.Fprintf(stderr, "storecheck %s: unexpected argument %q; %s\n", cmd.name, f.fs.Arg(0), cmd.accepted())
		} else {
			fmt.Fprintf(stderr, "storecheck %s: want exactly %d %s, got %d arguments; usage: %s\n", cmd.name, want, cmd.positional, f.fs.NArg(), cmd.synopsis())
		}
		return nil, nil, exitUsage, false
	}
	if cmd.backend {
		backend = config.backend(backend)
	}
	return f, backend, 0, true
}

// atLeastOne fails with a usage error naming the first of the options that
// is below 1.
func (f *flags) atLeastOne(stderr io.Writer, names ...string) bool {
	for _, name := range names {
		if v := f.num(name); v <= 0 {
			fmt.Fprintf(stderr, "storecheck %s: --%s must be at least 1, got %d\n", f.cmd.name, name, v)
			return false
		}
	}
	return true
}

// synopses are every command's usage on one line each, every flag with its
// value, as README shows them.
func synopses() string {
	var b strings.Builder
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		line := fmt.Sprintf("storecheck %-9s", c.name)
		for _, name := range c.options {
			o, _ := optionNamed(name)
			switch {
			case o.arg == "" && o.def == "true":
				line += fmt.Sprintf(" [--%s=false]", o.name)
			case o.arg == "":
				line += fmt.Sprintf(" [--%s]", o.name)
			default:
				line += fmt.Sprintf(" [--%s %s]", o.name, o.arg)
			}
		}
		if c.positional != "" {
			line += " " + c.positional
		}
		if c.backend {
			line += " [-- BACKEND...]"
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return b.String()
}
