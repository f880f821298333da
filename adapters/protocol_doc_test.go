package adapters_test

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// docs/protocol.md holds sections generated from the wire encoding: every
// operation's args and result for every registered store, every type they
// carry, an example of each made by encoding a Go value through the kit's
// codec (adapters.Encode), the vocabularies, the capabilities, the error
// kinds, the crash points. This test regenerates them and fails when the
// page differs, so a store that registers in internal/stores cannot land
// without its rows. STORECHECK_UPDATE_DOCS=1 rewrites the page.
// (TestProtocolPageExamplesDecode checks the page's examples the other way:
// decoded by the kit.)
func TestProtocolPageTables(t *testing.T) {
	const path = "../docs/protocol.md"
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(page)
	want := got
	for _, sec := range []struct{ name, body string }{
		{"capabilities", capabilitiesTable()},
		{"operations", operationsTable()},
		{"types", typesTable()},
		{"examples", examplesSection()},
		{"vocabularies", vocabulariesSection()},
		{"kinds", kindsTable()},
		{"crash-points", crashPointsTable()},
	} {
		begin, end := "<!-- BEGIN GENERATED "+sec.name+" -->\n", "<!-- END GENERATED "+sec.name+" -->"
		i, j := strings.Index(want, begin), strings.Index(want, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %q ... %q section", path, begin, end)
		}
		want = want[:i+len(begin)] + sec.body + want[j:]
	}
	if got == want {
		return
	}
	if os.Getenv("STORECHECK_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the Go types; run STORECHECK_UPDATE_DOCS=1 go test ./adapters -run TestProtocolPageTables and review the diff", path)
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[spec.RawJSON]()
	marshaler   = reflect.TypeFor[json.Marshaler]()
	textMarsh   = reflect.TypeFor[encoding.TextMarshaler]()
)

// customShapes are the types whose own marshalers decide how they travel:
// each one's shape on the page, and a value with the exact JSON the codec
// gives it (TestProtocolCustomShapes holds the two together). A type with a
// MarshalJSON or MarshalText of its own that is not here stops the
// generator: its shape cannot be read off its Go fields.
var customShapes = map[reflect.Type]struct {
	shape string
	value any
	json  string
}{
	rawJSONType: {"JSON text", spec.RawJSON(`{"k": [1, "é"]}`), `"{\"k\": [1, \"é\"]}"`},
	timeType:    {"time", time.Date(2026, 1, 1, 0, 0, 1, 250_000_000, time.UTC), `"2026-01-01T00:00:01.25Z"`},
}

func isCustom(t reflect.Type) bool {
	return t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
		t.Implements(textMarsh) || reflect.PointerTo(t).Implements(textMarsh)
}

// jsonField is one member of a struct's JSON object, embedded structs
// flattened as encoding/json flattens them.
type jsonField struct {
	name      string
	omitempty bool
	field     reflect.StructField
	owner     reflect.Type
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct && !isCustom(f.Type) {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, omitempty: strings.Contains(","+opts+",", ",omitempty,"), field: f, owner: t})
	}
	return out
}

// vocabularyAt is the vocabulary of contract c whose words travel at where
// ("<Type>.<json name>", "<op>.<json name>", "<op>.result").
func vocabularyAt(c spec.Contract, where string) (spec.Vocabulary, bool) {
	for _, v := range c.Vocabularies {
		for _, f := range v.Fields {
			if f == where {
				return v, true
			}
		}
	}
	return spec.Vocabulary{}, false
}

func ownerName(c spec.Contract, t reflect.Type) string {
	for _, op := range c.Ops {
		if reflect.TypeOf(op) == t {
			return op.Name()
		}
	}
	return t.Name()
}

// fields is a struct's JSON object: each member's name and shape.
func fields(c spec.Contract, t reflect.Type) string {
	var parts []string
	for _, f := range jsonFields(t) {
		s := shape(c, f.field.Type, ownerName(c, f.owner)+"."+f.name)
		if f.omitempty {
			s += " (may be absent)"
		}
		parts = append(parts, fmt.Sprintf("%q: %s", f.name, s))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// shape is how a Go type travels in JSON; where names the place, for its
// vocabulary.
func shape(c spec.Contract, t reflect.Type, where string) string {
	if cs, ok := customShapes[t]; ok {
		if t.Kind() == reflect.Slice {
			return cs.shape + " or null"
		}
		return cs.shape
	}
	if t.Kind() == reflect.Pointer {
		return shape(c, t.Elem(), where) + " or null"
	}
	if isCustom(t) {
		panic(fmt.Sprintf("%s has a marshaler of its own: add it to customShapes", t))
	}
	switch {
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "bytes or null"
	case t.Kind() == reflect.Slice:
		return "[" + shape(c, t.Elem(), where) + "] or null"
	case t.Kind() == reflect.Map:
		return "{" + shape(c, t.Key(), "") + ": " + shape(c, t.Elem(), where) + "} or null"
	case t.Kind() == reflect.Struct:
		return t.Name()
	case t.Kind() == reflect.Bool:
		return "bool"
	case t.Kind() == reflect.String:
		if v, ok := vocabularyAt(c, where); ok {
			return "string (" + v.Name + ")"
		}
		if t.Name() != "" && t.Name() != "string" {
			return "string (" + t.Name() + ")"
		}
		return "string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return named("integer", t)
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return named("unsigned integer", t)
	}
	panic(fmt.Sprintf("no shape for %s", t))
}

func named(what string, t reflect.Type) string {
	if t.Name() != "" && !strings.HasPrefix(t.Name(), "int") && !strings.HasPrefix(t.Name(), "uint") {
		return what + " (" + t.Name() + ")"
	}
	return what
}

func resultShape(c spec.Contract, op spec.Op) string {
	r := op.Result()
	if r == nil {
		return "`null`"
	}
	return "`" + shape(c, reflect.TypeOf(r), op.Name()+".result") + "`"
}

func operationsTable() string {
	var b strings.Builder
	for _, c := range stores.Contracts() {
		fmt.Fprintf(&b, "\n#### %s\n\n| op | args | result |\n|---|---|---|\n", c.Name)
		for _, op := range c.Ops {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", op.Name(), fields(c, reflect.TypeOf(op)), resultShape(c, op))
		}
	}
	return b.String() + "\n"
}

// namedTypes are the named structs contract c's operations carry, in the
// order they are met (embedded ones only where they also travel whole).
func namedTypes(c spec.Contract) []reflect.Type {
	seen := map[reflect.Type]bool{}
	var order []reflect.Type
	var walk func(t reflect.Type, top bool)
	walk = func(t reflect.Type, top bool) {
		if _, ok := customShapes[t]; ok {
			return
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			walk(t.Elem(), false)
		case reflect.Struct:
			if !top && !seen[t] {
				seen[t] = true
				order = append(order, t)
			}
			for _, f := range jsonFields(t) {
				walk(f.field.Type, false)
			}
		}
	}
	for _, op := range c.Ops {
		walk(reflect.TypeOf(op), true)
		if r := op.Result(); r != nil {
			walk(reflect.TypeOf(r), false)
		}
	}
	return order
}

// typesTable lists every named struct the operations carry.
func typesTable() string {
	var b strings.Builder
	for _, c := range stores.Contracts() {
		fmt.Fprintf(&b, "\n#### %s\n\n| type | JSON |\n|---|---|\n", c.Name)
		for _, t := range namedTypes(c) {
			fmt.Fprintf(&b, "| `%s` | `%s` |\n", t.Name(), fields(c, t))
		}
	}
	return b.String() + "\n"
}

// exampleOverrides are example values by place, where the generic ones
// would read oddly.
var exampleOverrides = map[string]any{
	"settle_task.state": "completed",
	"Task.state":        "completed",
	"Task.kind":         "root",
	"open_task.kind":    "root",
}

// example is a value of type t at place where, filled in every field (so
// the example shows every member), deterministically.
func example(c spec.Contract, t reflect.Type, where, name string) reflect.Value {
	v := reflect.New(t).Elem()
	if cs, ok := customShapes[t]; ok {
		v.Set(reflect.ValueOf(cs.value))
		return v
	}
	if o, ok := exampleOverrides[where]; ok {
		v.Set(reflect.ValueOf(o).Convert(t))
		return v
	}
	switch t.Kind() {
	case reflect.Pointer:
		v.Set(example(c, t.Elem(), where, name).Addr())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("bytes\x00\xff"))
			break
		}
		v.Set(reflect.Append(v, example(c, t.Elem(), where, name)))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(example(c, t.Key(), "", strings.ToLower(t.Key().Name())), example(c, t.Elem(), where, name))
	case reflect.Struct:
		for _, f := range jsonFields(t) {
			dst := v.FieldByIndex(fieldIndex(t, f))
			dst.Set(example(c, f.field.Type, ownerName(c, f.owner)+"."+f.name, f.name))
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		if voc, ok := vocabularyAt(c, where); ok {
			v.SetString(voc.Words[0].Word)
			break
		}
		switch {
		case strings.HasSuffix(name, "_json") || name == "backend_ref":
			v.SetString(`{"k":1}`)
		default:
			v.SetString(strings.ReplaceAll(strings.TrimSuffix(name, "_id"), "_", "-") + "-1")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if strings.HasSuffix(name, "_ms") && !strings.HasSuffix(name, "ttl_ms") {
			v.SetInt(1767225600000)
		} else {
			v.SetInt(2)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.HasSuffix(name, "ttl_ms") {
			v.SetUint(30000)
		} else {
			v.SetUint(3)
		}
	default:
		panic(fmt.Sprintf("no example of %s", t))
	}
	return v
}

// fieldIndex is the index path of f (maybe in an embedded struct) in t.
func fieldIndex(t reflect.Type, f jsonField) []int {
	sf, ok := t.FieldByName(f.field.Name)
	if !ok {
		panic(fmt.Sprintf("%s has no field %s", t, f.field.Name))
	}
	return sf.Index
}

// exampleArgs and exampleResult are the Go values the page's examples of
// op encode; exampleValue the one of a named type.
func exampleArgs(c spec.Contract, op spec.Op) spec.Op {
	return example(c, reflect.TypeOf(op), op.Name(), op.Name()).Interface().(spec.Op)
}

func exampleResult(c spec.Contract, op spec.Op) any {
	r := op.Result()
	if r == nil {
		return nil
	}
	return example(c, reflect.TypeOf(r), op.Name()+".result", "result").Interface()
}

func exampleValue(c spec.Contract, t reflect.Type) any {
	return example(c, t, t.Name(), strings.ToLower(t.Name())).Interface()
}

func mustEncode(v any) string {
	raw, err := adapters.Encode(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// examplesSection is, per store, one line for each operation's args and
// result and each named type's value: "<name> args|result|value <JSON>",
// the JSON exactly as the kit's codec encodes the example value.
func examplesSection() string {
	var b strings.Builder
	for _, c := range stores.Contracts() {
		fmt.Fprintf(&b, "\n#### %s\n\n```text\n", c.Name)
		for _, op := range c.Ops {
			args, err := adapters.EncodeArgs(exampleArgs(c, op))
			if err != nil {
				panic(err)
			}
			fmt.Fprintf(&b, "%s args %s\n%s result %s\n", op.Name(), args, op.Name(), mustEncode(exampleResult(c, op)))
		}
		for _, t := range namedTypes(c) {
			fmt.Fprintf(&b, "%s value %s\n", t.Name(), mustEncode(exampleValue(c, t)))
		}
		b.WriteString("```\n")
	}
	return b.String() + "\n"
}

func vocabulariesSection() string {
	var b strings.Builder
	for _, c := range stores.Contracts() {
		fmt.Fprintf(&b, "\n#### %s\n", c.Name)
		for _, v := range c.Vocabularies {
			fmt.Fprintf(&b, "\n**%s** (%s)", v.Name, "`"+strings.Join(v.Fields, "`, `")+"`")
			switch {
			case v.Free:
				b.WriteString(": any word is kept as given; these are the words the store reads.")
			case v.Open == "":
				b.WriteString(": a closed set, only these words.")
			default:
				r, ok := c.Rule(v.Open)
				if !ok {
					panic(fmt.Sprintf("%s vocabulary %s: no rule %s", c.Name, v.Name, v.Open))
				}
				silent := ""
				if r.Source.IsSilent() {
					silent = " The seed is silent: " + r.Source.Silence + "."
				}
				fmt.Fprintf(&b, ": open (%s). %s%s", r.ID, r.Says, silent)
			}
			if v.Note != "" {
				b.WriteString(" " + v.Note)
			}
			b.WriteString("\n\n| word | means |\n|---|---|\n")
			for _, w := range v.Words {
				fmt.Fprintf(&b, "| `%s` | %s |\n", w.Word, w.Means)
			}
		}
	}
	return b.String() + "\n"
}

func capabilitiesTable() string {
	var b strings.Builder
	b.WriteString("\n| capability | value | means | with it | without it |\n|---|---|---|---|---|\n")
	for _, c := range spec.CapabilityTable {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", c.Name, c.Value, c.Means, c.With, c.Without)
	}
	return b.String() + "\n"
}

// kindsTable is spec.KindTable as the page shows it: every store's kinds,
// then the ones any store may meet.
func kindsTable() string {
	var b strings.Builder
	b.WriteString("\n| kind | store | definite | sent by | means |\n|---|---|---|---|---|\n")
	for _, c := range stores.Contracts() {
		for _, k := range c.Kinds {
			row, shared := spec.KindInfoOf(k)
			if !shared {
				row = spec.RuleKindInfo
			}
			if yes := c.Definite(spec.Errorf(k, "")); yes != row.Definite {
				panic(fmt.Sprintf("%s %s: the table says definite %v, Definite %v", c.Name, k, row.Definite, yes))
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k, c.Name, yesNo(row.Definite), row.SentBy, row.Means)
		}
	}
	for _, row := range spec.KindTable {
		if row.Kind == spec.ErrIO {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | any | %s | %s | %s |\n", row.Kind, yesNo(row.Definite), row.SentBy, row.Means)
	}
	return b.String() + "\n"
}

func crashPointsTable() string {
	points := stores.Reference().Info().Capabilities.CrashPoints
	var stores []string
	for s := range points {
		stores = append(stores, s)
	}
	sort.Strings(stores)
	var b strings.Builder
	b.WriteString("\n| store | crash point |\n|---|---|\n")
	for _, s := range stores {
		for _, p := range points[s] {
			fmt.Fprintf(&b, "| %s | `%s` |\n", s, p)
		}
	}
	return b.String() + "\n"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
