package conformance

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/gendoc"
)

// Every knob sets a Config field of its kind, and reads back what it set:
// its default, as the command line and go test spell it, is the field's.
func TestEveryKnobSetsAFieldOfItsKind(t *testing.T) {
	types := map[KnobKind][]reflect.Type{
		KindString: {reflect.TypeFor[string]()}, KindList: {reflect.TypeFor[[]string](), reflect.TypeFor[[]Layer]()},
		KindInt: {reflect.TypeFor[int]()}, KindBool: {reflect.TypeFor[bool]()}, KindDuration: {reflect.TypeFor[time.Duration]()},
		KindSeed: {reflect.TypeFor[*SeedRange]()}, KindSeeds: {reflect.TypeFor[*SeedRange]()}, KindShard: {reflect.TypeFor[Shard]()},
	}
	names := map[string]bool{}
	for _, k := range knobs {
		if names[k.Name] || names[k.key()] {
			t.Errorf("two knobs are called %s", k.Name)
		}
		names[k.Name], names[k.key()] = true, true
		f, ok := reflect.TypeFor[Config]().FieldByName(k.Field)
		if !ok || !slices.Contains(types[k.Kind], f.Type) {
			t.Errorf("knob %s: Config has no field %s of its kind", k.Name, k.Field)
			continue
		}
		for _, d := range []Config{Defaults(), TestDefaults(), {Seeds: Seeds(3, 9), Shard: Shard{I: 2, N: 3}, Shrink: -1}} {
			var c Config
			if err := k.Set(&c, k.Value(d)); err != nil || k.Value(c) != k.Value(d) {
				t.Errorf("knob %s: set to %q, reads %q (%v)", k.Name, k.Value(d), k.Value(c), err)
			}
		}
	}
}

// What 0 means is the knob's, and the Config field's doc says the same.
func TestTheFieldsDocSaysWhatTheKnobsZeroMeans(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Config" {
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				for _, name := range fl.Names {
					docs[name.Name] = strings.Join(strings.Fields(fl.Doc.Text()), " ")
				}
			}
		}
		return true
	})
	for _, k := range knobs {
		if k.Zero != "" && !strings.Contains(docs[k.Field], k.Zero) {
			t.Errorf("knob %s: 0 means %q, but Config.%s's doc says %q", k.Name, k.Zero, k.Field, docs[k.Field])
		}
		if docs[k.Field] == "" {
			t.Errorf("knob %s: Config.%s has no doc", k.Name, k.Field)
		}
		// A knob whose 0 is not the field's (shrink: the knob's 0 does not
		// shrink, Config's 0 is the default): the field's doc says both, and
		// the go test flag's help gives what 0 means there with its default.
		if k.ZeroIs != 0 {
			if !strings.Contains(docs[k.Field], "0: the default") || !strings.Contains(docs[k.Field], "knob's 0") {
				t.Errorf("knob %s: its 0 is not Config.%s's, whose doc does not say both: %q", k.Name, k.Field, docs[k.Field])
			}
			if help := k.TestHelpText(); !strings.Contains(help, "(0: "+k.Zero+")") || !strings.HasSuffix(help, "(default "+k.TestDefault()+")") {
				t.Errorf("knob %s: the go test flag's help does not say what 0 means and its default: %q", k.Name, help)
			}
		}
	}
}

// A knob added to the table is on every surface of the library: a go test
// flag with its default and help, taken on the test binary's command line
// into its field, carried by the go test line and the storecheck line of
// the layer it changes and by the Config a Go caller is shown, and listed
// in docs/ci.md's table (cmd/storecheck's TestAKnobIsOnEveryCommandSurface
// sees it in the command's flags, help and config file).
func TestAKnobAddedToTheTableIsOnEverySurface(t *testing.T) {
	widgets := Knob{Name: "widgets", Field: "Processes", Kind: KindInt, Arg: "N", Layers: []Layer{LayerSim}, Commands: []string{cmdSim},
		Help: "widgets of a simulated schedule", Zero: "no widgets"}
	saved := knobs
	knobs = append(slices.Clone(knobs), widgets)
	defer func() { knobs = saved }()

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	registerTestFlags(fs)
	fl := fs.Lookup("storecheck.widgets")
	if fl == nil || fl.DefValue != fmt.Sprint(Defaults().Processes) || fl.Usage != "storecheck: widgets of a simulated schedule (0: no widgets) (default "+fmt.Sprint(Defaults().Processes)+")" {
		t.Fatalf("the go test flag: %+v", fl)
	}
	if err := fs.Parse([]string{"-storecheck.widgets", "5"}); err != nil {
		t.Fatal(err)
	}
	given := givenFlags(fs)
	cfg, err := withFlags(Config{}, given)
	if err != nil || cfg.Processes != 5 {
		t.Fatalf("-storecheck.widgets 5 made %+v (%v)", cfg, err)
	}
	for _, tc := range []struct{ line, want string }{
		{goTestLines{test: "T", pkg: "p", given: given}.sim("continuity", 1), " -storecheck.widgets 5"},
		{cfg.commandLines(nil).sim("continuity", 1), " --widgets 5 "},
		{configLines{cfg.WithDefaults()}.sim("continuity", 1), "Processes: 5"},
		{testFlagsTable(), "| `-storecheck.widgets N` | `" + fmt.Sprint(Defaults().Processes) + "` | widgets of a simulated schedule (0: no widgets) |"},
		{widgets.HelpText(), "widgets of a simulated schedule (0: no widgets) (default " + fmt.Sprint(Defaults().Processes) + ")"},
	} {
		if !strings.Contains(tc.line, tc.want) {
			t.Errorf("%q lacks %q", tc.line, tc.want)
		}
	}
	// A layer it does not change does not carry it.
	if line := cfg.commandLines(nil).linearize("continuity", 1); strings.Contains(line, "widgets") {
		t.Errorf("the linearizability line carries the simulator's knob: %s", line)
	}
}

// testFlagsTable is docs/ci.md's table of the go test flags: each flag, its
// default under go test and what it does.
func testFlagsTable() string {
	var b strings.Builder
	b.WriteString("| flag | default | what it does |\n|---|---|---|\n")
	for _, k := range knobs {
		if k.TestFlag() == "" {
			continue
		}
		flagText, def := "-"+k.TestFlag(), "`"+k.TestDefault()+"`"
		if k.Arg != "" {
			flagText += " " + k.Arg
		}
		switch {
		case k.TestNote != "":
			def = k.TestNote
		case k.TestDefault() == "":
			def = "none"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", flagText, def, k.helpWith("", ""))
	}
	return b.String()
}

// The docs agree with the go test flags: docs/ci.md's table of them is the
// one the knobs give (STORECHECK_UPDATE_DOCS=1 rewrites it), every
// -storecheck flag the docs name is one, and the README's go test default
// is TestOps.
func TestTheDocsListTheGoTestFlagsWithTheirDefaults(t *testing.T) {
	const path = "../docs/ci.md"
	gendoc.Check(t, path, "go-test-flags", testFlagsTable(), "go test ./conformance -run TestTheDocsListTheGoTestFlags")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	registerTestFlags(fs)
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range knobs {
		f := fs.Lookup(k.TestFlag())
		if f == nil {
			continue
		}
		want, told := k.TestNote, "(default: "+k.TestNote+")"
		if want == "" {
			want, told = f.DefValue, "(default "+f.DefValue+")"
		}
		row := string(regexp.MustCompile("(?m)^\\| `-" + regexp.QuoteMeta(f.Name) + "[ `].*$").Find(page))
		switch {
		case want == "" || want == "false":
			if strings.Contains(f.Usage, "(default") || (!strings.Contains(row, "| none |") && !strings.Contains(row, "| `false` |")) {
				t.Errorf("-%s has no default, but its help or %s gives one: %s\n%s", f.Name, path, f.Usage, row)
			}
		case !strings.HasSuffix(f.Usage, told):
			t.Errorf("-%s defaults to %q, its help says otherwise: %s", f.Name, want, f.Usage)
		case !strings.Contains(row, "| "+want+" |") && !strings.Contains(row, "| `"+want+"` |"):
			t.Errorf("%s gives -%s's default otherwise than its help (%q): %s", path, f.Name, want, row)
		}
	}
	named := regexp.MustCompile(`-storecheck\.([a-z-]+)`)
	for _, doc := range []string{"../README.md", path, "doc.go", "gotest.go"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(text), -1) {
			if fs.Lookup("storecheck."+m[1]) == nil {
				t.Errorf("%s names -storecheck.%s, which go test does not take", doc, m[1])
			}
		}
		flat := strings.Join(strings.Fields(string(text)), " ")
		if doc == "../README.md" && !strings.Contains(flat, fmt.Sprintf("one history of %d operations", TestOps)) {
			t.Errorf("the README does not say go test's history is of %d operations", TestOps)
		}
		if doc == "../README.md" && !strings.Contains(flat, "each of the seeds "+TestSimSeeds.String()) {
			t.Errorf("the README does not say go test's simulator runs the seeds %s", TestSimSeeds)
		}
	}
}
