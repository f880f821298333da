package main

import (
	"bytes"
	"flag"
	"go/parser"
	"go/token"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/internal/gendoc"
)

func mustCommand(name string) *command {
	c, ok := commandNamed(name)
	if !ok {
		panic("no command " + name)
	}
	return c
}

var helpFlag = regexp.MustCompile(`(?m)^  --([a-z-]+)(?: (\S+))?\s+(.*)$`)

// unwrapped is help with each flag's text on one line.
func unwrapped(help string) string {
	return regexp.MustCompile(`\n {25}`).ReplaceAllString(help, " ")
}

// storecheck <cmd> --help lists every flag of the command's flag set, each
// once with its default, and nothing else; storecheck --help holds every
// command's.
func TestHelpListsEveryFlagWithItsDefault(t *testing.T) {
	var all bytes.Buffer
	if code := cli([]string{"--help"}, &all, &bytes.Buffer{}, conformance.Reference()); code != exitPassed {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		var out, errs bytes.Buffer
		if code := cli([]string{c.name, "--help"}, &out, &errs, conformance.Reference()); code != exitPassed || errs.Len() > 0 {
			t.Fatalf("%s --help: exit %d, stderr %q", c.name, code, errs.String())
		}
		help := unwrapped(out.String())
		if !strings.Contains(unwrapped(all.String()), help) {
			t.Errorf("storecheck --help leaves out %s's help:\n%s", c.name, help)
		}
		var listed []string
		for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
			listed = append(listed, m[1])
		}
		var defined []string
		f := newFlags(c)
		f.fs.VisitAll(func(fl *flag.Flag) {
			if o, _ := optionNamed(fl.Name); o.Alias != fl.Name {
				defined = append(defined, fl.Name)
			}
		})
		slices.Sort(defined)
		sorted := slices.Sorted(slices.Values(listed))
		if !slices.Equal(sorted, defined) || len(listed) != len(slices.Compact(sorted)) {
			t.Errorf("%s --help lists %v, its flag set has %v", c.name, listed, defined)
		}
		f.fs.VisitAll(func(fl *flag.Flag) {
			o, _ := optionNamed(fl.Name)
			if o.Alias == fl.Name || o.Kind == conformance.KindBool || fl.DefValue == "" {
				return
			}
			if !regexp.MustCompile(`(?m)^  --` + fl.Name + ` .*\(default ` + regexp.QuoteMeta(fl.DefValue) + `\)$`).MatchString(help) {
				t.Errorf("%s --help does not give --%s's default %q:\n%s", c.name, fl.Name, fl.DefValue, help)
			}
		})
	}
}

// The options' defaults are the run's own (conformance.Defaults, which
// are the libraries'), so that a Go caller and the command line get the
// same run.
func TestOptionDefaultsAreTheLibraries(t *testing.T) {
	d := conformance.Defaults()
	for name, want := range map[string]string{"ops": strconv.Itoa(d.Ops), "clients": strconv.Itoa(d.Clients), "handles": strconv.Itoa(d.Handles),
		"steps": strconv.Itoa(d.Steps), "processes": strconv.Itoa(d.Processes), "shrink": strconv.Itoa(d.Shrink),
		"check-timeout": d.CheckTimeout.String(), "reply-timeout": d.ReplyTimeout.String(), "report-dir": d.ReportDir,
		"store": strings.Join(d.Stores, ",")} {
		o, _ := optionNamed(name)
		if o.Default() != want {
			t.Errorf("--%s defaults to %s, the library to %s", name, o.Default(), want)
		}
	}
}

// The package comment names every command.
func TestMainDocNamesEveryCommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for _, c := range commands {
		if !strings.Contains(doc, "storecheck "+c.name) {
			t.Errorf("main.go's doc comment does not name storecheck %s:\n%s", c.name, doc)
		}
	}
}

// README's synopsis of the commands is the one the definitions give.
// STORECHECK_UPDATE_DOCS=1 rewrites it.
func TestReadmeSynopsis(t *testing.T) {
	gendoc.Check(t, "../../README.md", "synopsis", "```\n"+synopses()+"```\n", "go test ./cmd/storecheck -run TestReadmeSynopsis")
}

// The deprecated spelling --timeout is --reply-timeout.
func TestTimeoutIsAnAliasOfReplyTimeout(t *testing.T) {
	f := newFlags(mustCommand("run"))
	if err := f.fs.Parse([]string{"--timeout", "7s"}); err != nil {
		t.Fatal(err)
	}
	if f.str("reply-timeout") != "7s" || f.from("reply-timeout") != fromCommandLine {
		t.Errorf("--timeout 7s left --reply-timeout at %s", f.str("reply-timeout"))
	}
}

// Every option names commands there are, and every command but serve and
// help takes one.
func TestEveryOptionNamesItsCommands(t *testing.T) {
	for _, o := range options {
		for _, name := range o.Commands {
			if _, ok := commandNamed(name); !ok {
				t.Errorf("--%s names no command %q", o.Name, name)
			}
		}
		if len(o.Commands) == 0 && o.TestFlag() == "" {
			t.Errorf("--%s is on no surface: no command takes it and go test has no flag of it", o.Name)
		}
	}
	for _, c := range commands {
		if len(c.optionNames()) == 0 && c.name != "serve" && c.name != "help" {
			t.Errorf("storecheck %s takes no option", c.name)
		}
	}
}

// A knob added to the run's table (conformance.Knobs) is on every surface
// of the command that takes it: its flag, parsed into the run's field; its
// help, with its default; the synopsis; its storecheck.json key; a usage
// error for a bad value. (conformance's TestAKnobAddedToTheTableIsOnEverySurface
// sees it on the go test flags and the reproduce lines.)
func TestAKnobIsOnEveryCommandSurface(t *testing.T) {
	widgets := conformance.Knob{Name: "widgets", Field: "Processes", Kind: conformance.KindInt, Arg: "N",
		Layers: []conformance.Layer{conformance.LayerSim}, Commands: []string{"sim"}, Help: "widgets of a simulated schedule", Zero: "no widgets"}
	saved, savedConfig := options, config
	options = optionsOf(append(conformance.Knobs(), widgets))
	defer func() { options, config = saved, savedConfig }()

	config = nil
	f, _, _, ok := parse(mustCommand("sim"), []string{"--widgets", "5"}, io.Discard, io.Discard)
	if !ok || (invocation{f: f, stderr: io.Discard}).config().Processes != 5 {
		t.Fatalf("--widgets 5 did not reach the run's field")
	}
	var help bytes.Buffer
	mustCommand("sim").writeHelp(&help)
	if want := "  --widgets N            widgets of a simulated schedule (0: no widgets) (default 2)\n"; !strings.Contains(unwrapped(help.String()), want) {
		t.Errorf("sim --help lacks %q:\n%s", want, help.String())
	}
	help.Reset()
	mustCommand("run").writeHelp(&help)
	if strings.Contains(help.String(), "widgets") || !strings.Contains(synopses(), "[--fail-fast] [--widgets N] [--quiet]") {
		t.Errorf("the knob is on a command that does not take it, or off the synopsis:\n%s\n%s", help.String(), synopses())
	}
	var err error
	if config, err = parseConfig([]byte(`{"widgets": 4}`)); err != nil {
		t.Fatal(err)
	}
	f, _, _, ok = parse(mustCommand("sim"), nil, io.Discard, io.Discard)
	if !ok || f.from("widgets") != fromConfig || (invocation{f: f, stderr: io.Discard}).config().Processes != 4 {
		t.Errorf("storecheck.json's widgets did not reach the run's field")
	}
	config = nil
	var errs bytes.Buffer
	if _, _, code, _ := parse(mustCommand("sim"), []string{"--widgets", "many"}, io.Discard, &errs); code != exitUsage || !strings.Contains(errs.String(), "--widgets") {
		t.Errorf("--widgets many: exit %d, %q", code, errs.String())
	}
}
