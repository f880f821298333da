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

// An option is one command-line flag, defined once: a knob of the run
// (conformance.Knobs, where each names the Config field it sets, its
// default, its help and the commands that take it) or one of the command's
// own (ownKnobs). The flag sets are built from the options, and so are the
// help, the usage errors and the config file's keys.
type option = conformance.Knob

// ownKnobs are the command's own options: they set no field of the run.
var ownKnobs = []conformance.Knob{
	{Name: "bugs", Kind: conformance.KindList, Arg: "LIST", Commands: []string{"selftest"},
		Help: "selftest only these deliberate bugs, comma-separated; the reference is checked too", CommandNote: "every bug of the stores asked for"},
	{Name: "exec-sample", Kind: conformance.KindInt, Arg: "N", CommandDefault: "1", Commands: []string{"selftest"},
		Help: "bugs of each store selftest also runs over the exec adapter"},
	{Name: "cheapest", Kind: conformance.KindBool, Commands: []string{"selftest"},
		Help: "each bug through its cheapest catching layer only (tried in cost order: sim, spec, linearizability); the reference and the exec sample go through every layer"},
	{Name: "quiet", Kind: conformance.KindBool, Commands: []string{"linearize", "sim", "selftest"},
		Help: "no progress line on stderr"},
	{Name: "exhaustive", Kind: conformance.KindBool, Commands: []string{"sim"},
		Help: "instead of the seeds: every crash state of every workload of up to " + strconv.Itoa(sim.DefaultExhaustOps) + " operations of each store (each unsynced write's sectors kept in any subset, each sync of the last operation failing once), enumerated in classes of states no reader can tell apart (SQLite's WAL read as its recovery reads it), one run a class; says how many states, in how many classes, how many checked and how long it took"},
	{Name: "exhaustive-bound", Kind: conformance.KindInt, Arg: "N", CommandDefault: strconv.Itoa(sim.DefaultMaxStates), Commands: []string{"sim"},
		Help: "with --exhaustive: the most classes of crash states one cut checks (a safety bound; the summary says how many it left)"},
}

// optionsOf are the options of the run's knobs and the command's own, in
// help order.
func optionsOf(run []conformance.Knob) []option { return append(run, ownKnobs...) }

// options are every command's flags, in help order.
var options = optionsOf(conformance.Knobs())

// optionNamed is the option of that name (or deprecated alias).
func optionNamed(name string) (option, bool) {
	for _, o := range options {
		if o.Name == name || (o.Alias != "" && o.Alias == name) {
			return o, true
		}
	}
	return option{}, false
}

// optionNames are the names of the options the command takes, in help
// order.
func (c *command) optionNames() []string {
	var names []string
	for _, o := range options {
		if o.Takes(c.name) {
			names = append(names, o.Name)
		}
	}
	return names
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
	if err := v.o.Check(s); err != nil {
		return err
	}
	v.text, v.from = s, v.setting
	return nil
}

// IsBoolFlag lets a boolean flag stand alone (--fail-fast).
func (v *value) IsBoolFlag() bool { return v.o.Kind == conformance.KindBool }

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
	for _, name := range cmd.optionNames() {
		o, _ := optionNamed(name)
		v := &value{o: o, text: o.Default(), setting: fromCommandLine}
		if o.Kind == conformance.KindBool && v.text == "" {
			v.text = "false"
		}
		f.vals[o.Name] = v
		f.fs.Var(v, o.Name, o.HelpText())
		if o.Alias != "" {
			f.fs.Var(v, o.Alias, "deprecated: --"+o.Name)
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
	names := c.optionNames()
	if len(names) == 0 {
		return "usage: " + c.synopsis()
	}
	return "accepted flags: --" + strings.Join(names, ", --")
}

// synopsis is the command's usage line.
func (c *command) synopsis() string {
	s := "storecheck " + c.name
	if len(c.optionNames()) > 0 {
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
	for _, name := range c.optionNames() {
		o, _ := optionNamed(name)
		flagText := "--" + o.Name
		if o.Arg != "" {
			flagText += " " + o.Arg
		}
		fmt.Fprintf(w, "  %-22s %s\n", flagText, wrap(o.HelpText(), 25, 80))
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
	if want := cmd.nargs; want >= 0 && f.fs.NArg() != want || want < 0 && f.fs.NArg() == 0 {
		switch {
		case want < 0:
			fmt.Fprintf(stderr, "storecheck %s: want one or more %s; usage: %s\n", cmd.name, cmd.positional, cmd.synopsis())
		case want == 0:
			fmt.Fprintf(stderr, "storecheck %s: unexpected argument %q; %s\n", cmd.name, f.fs.Arg(0), cmd.accepted())
		default:
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
		for _, name := range c.optionNames() {
			o, _ := optionNamed(name)
			switch {
			case o.Arg == "" && o.Default() == "true":
				line += fmt.Sprintf(" [--%s=false]", o.Name)
			case o.Arg == "":
				line += fmt.Sprintf(" [--%s]", o.Name)
			default:
				line += fmt.Sprintf(" [--%s %s]", o.Name, o.Arg)
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
