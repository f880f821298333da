package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/reports"
)

// Exit codes.
const (
	exitPassed = 0
	exitFailed = 1
	exitUsage  = 2
	// exitBackend: the backend failed (would not start, broke the wire
	// protocol, crashed outside an injected fault): no verdict on its
	// conformance.
	exitBackend = 3
	// exitInconclusive: nothing failed, but a check could not decide.
	exitInconclusive = 4
)

// command is one of storecheck's commands: its name, what it does and how
// it runs; the options it takes are those that name it (optionNames).
type command struct {
	name    string
	summary string
	// positional names the arguments it takes after its flags ("" none);
	// nargs is how many (-1: one or more).
	positional string
	nargs      int
	// backend: it takes a BACKEND after "--".
	backend bool
	run     func(inv invocation) int
}

// invocation is what a command runs with.
type invocation struct {
	f *flags
	// backend is the command after "--" (else the config's): a program to
	// check over the wire protocol instead of ref.
	backend []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	// ref is the in-process backend checked when no program is named: the
	// reference (conformance.Reference), the one the tests check too.
	ref conformance.Backend
}

// commands are storecheck's commands, in help order; run is the default.
var commands []*command

func init() {
	commands = []*command{
		{name: "run", backend: true, run: run,
			summary: "the conformance suite, then the linearizability check, against the embedded\nreference (the default command) or BACKEND"},
		{name: "linearize", backend: true, run: linearize,
			summary: "the linearizability check alone: concurrent clients, a recorded history,\nporcupine; one seed or a sweep"},
		{name: "check", positional: "HISTORY.json", nargs: 1, run: check,
			summary: "check a saved history again, offline"},
		{name: "sim", backend: true, run: simulation,
			summary: "the deterministic simulator: seeded schedules of clients, clock jumps and\ncrashes, checked step by step; failures shrunk and saved"},
		{name: "replay", backend: true, positional: "SCHEDULE.json", nargs: 1, run: replay,
			summary: "run a saved (shrunk) schedule again"},
		{name: "merge", positional: "SHARD_DIR...", nargs: -1, run: merge,
			summary: "merge the report folders of a sweep's shards (CI matrix jobs) into one report\nin --report-dir, with the sweep's exit code"},
		{name: "selftest", run: selftestCommand,
			summary: "every deliberate bug of the reference through every layer: the detection\ntable; fails if a bug escapes every layer or the reference is flagged"},
		{name: "serve", run: serveCommand,
			summary: "serve the reference stores over the wire protocol on stdin and stdout"},
		{name: "help", run: func(inv invocation) int { writeUsage(inv.stdout); return exitPassed },
			summary: "this help; storecheck COMMAND --help for one command's"},
	}
}

// commandNamed is the command of that name.
func commandNamed(name string) (*command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return nil, false
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

// cli runs storecheck with args, checking ref when no program is named, and
// returns the exit code.
func cli(args []string, stdout, stderr io.Writer, ref conformance.Backend) int {
	name := "run"
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "-h" || a == "-help" || a == "--help":
			writeUsage(stdout)
			return exitPassed
		case !strings.HasPrefix(a, "-"):
			name, args = a, args[1:]
		}
	}
	if name == selftestSubject {
		return runSelftestSubject(args, stdout, stderr)
	}
	cmd, ok := commandNamed(name)
	if !ok {
		fmt.Fprintf(stderr, "storecheck: unknown command %q; accepted: %s\n", name, strings.Join(commandNames(), ", "))
		return exitUsage
	}
	inv := invocation{stdin: os.Stdin, stdout: stdout, stderr: stderr, ref: ref}
	if cmd.name != "help" {
		var cfg *Config
		var err error
		if args, cfg, err = loadConfig(args); err != nil {
			fmt.Fprintf(stderr, "storecheck: config: %v\n", err)
			return exitUsage
		}
		config = cfg
		f, backend, code, ok := parse(cmd, args, stdout, stderr)
		if !ok {
			return code
		}
		inv.f, inv.backend = f, backend
	}
	return cmd.run(inv)
}

// exitCode is a run's exit code: a failure wins over an inconclusive check.
func exitCode(r reports.Run) int {
	switch {
	case r.Failed():
		return exitFailed
	case r.Inconclusive():
		return exitInconclusive
	}
	return exitPassed
}

// config is the configuration file of this invocation (nil: none).
var config *Config

// writeReports writes every form of the report (JUnit XML, JSON, HTML, text)
// into the report folder when --report-dir was given (on the command line
// or in the config).
func writeReports(f *flags, r reports.Run, stderr io.Writer) {
	if !f.given("report-dir") {
		return
	}
	if err := reports.WriteDir(f.str("report-dir"), r); err != nil {
		fmt.Fprintf(stderr, "storecheck: could not write the reports: %v\n", err)
	}
}

// target is the backend the invocation checks: the program after "--",
// else the one in this process.
func (inv invocation) target() conformance.Backend {
	if inv.backend != nil {
		return conformance.Program(inv.backend...)
	}
	return inv.ref
}

// config is the run the invocation's flags (and storecheck.json) ask for,
// each option the command takes in the field of its knob; a field the
// command has no flag for keeps the library's default.
func (inv invocation) config() conformance.Config {
	f := inv.f
	cfg := conformance.Config{Log: inv.stderr, Withdraw: config.withdrawn()}
	for _, name := range f.cmd.optionNames() {
		o, _ := optionNamed(name)
		if o.Field != "" {
			// A value the knob does not take (a seed range, a shard) is
			// reported where the command reads it (sweep), or by Validate.
			o.Set(&cfg, f.str(name))
		}
	}
	if _, quiet := f.vals["quiet"]; quiet && !f.on("quiet") {
		cfg.Progress = inv.stderr
	}
	return cfg
}

// list reads a comma-separated flag value.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// check runs cfg against the invocation's backend and prints what it
// found, for command name; it returns the exit code. A config the check
// cannot run is a usage error naming what is wrong; a backend that failed
// is exit 3, with the report of what ran before.
func (inv invocation) check(name string, cfg conformance.Config, printed func(reports.Run)) int {
	rep, err := conformance.Run(context.Background(), inv.target(), cfg)
	var ce *conformance.ConfigError
	switch {
	case errors.As(err, &ce) && ce.Field == "Spec" && inv.f.given("spec"):
		// The flag, as the person gave it.
		fmt.Fprintf(inv.stderr, "storecheck %s: --spec %s %s\n", name, conformance.Quote(inv.f.str("spec")), ce.Problem)
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(inv.stderr, "storecheck %s: %s\n", name, ce.Problem)
		return exitUsage
	case err != nil && rep.Tool == "":
		fmt.Fprintf(inv.stderr, "storecheck %s: %v\n", name, err)
		return exitBackend
	}
	rep.Command = "storecheck " + name + " " + strings.Join(inv.f.line, " ") + backendText(inv.backend)
	printed(rep)
	reports.WriteAnnotations(inv.stdout, rep)
	writeReports(inv.f, rep, inv.stderr)
	var be *conformance.BackendError
	if errors.As(err, &be) {
		fmt.Fprintf(inv.stderr, "storecheck %s: backend failure (not a conformance verdict): %v\n", name, be.Err)
		return exitBackend
	}
	return exitCode(rep)
}

// backendText is " -- BACKEND ARG..." quoted for a shell; "" for none.
func backendText(command []string) string {
	if len(command) == 0 {
		return ""
	}
	return " -- " + conformance.Quote(command...)
}

// withdrawn are the capabilities the config withdraws, sorted.
func (c *Config) withdrawn() []string {
	if c == nil {
		return nil
	}
	var out []string
	for name, on := range c.Capabilities {
		if !on {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
