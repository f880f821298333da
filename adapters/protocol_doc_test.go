package adapters_test

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// docs/protocol.md holds tables generated from the Go types: every
// operation's args and result for every registered store, the error kinds,
// the crash points. This test regenerates them and fails when the page
// differs, so a store that registers in internal/stores cannot land
// without its rows. STORECHECK_UPDATE_DOCS=1 rewrites the page.
func TestProtocolPageTables(t *testing.T) {
	const path = "../docs/protocol.md"
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(page)
	want := got
	for _, sec := range []struct{ name, body string }{
		{"operations", operationsTable()},
		{"types", typesTable()},
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

func operationsTable() string {
	var b strings.Builder
	for _, c := range stores.Contracts() {
		fmt.Fprintf(&b, "\n#### %s\n\n| op | args | result |\n|---|---|---|\n", c.Name)
		for _, op := range c.Ops {
			result := "`null`"
			if r := op.Result(); r != nil {
				result = "`" + shape(reflect.TypeOf(r)) + "`"
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", op.Name(), fields(reflect.TypeOf(op)), result)
		}
	}
	return b.String() + "\n"
}

// typesTable lists every named struct the operations carry.
func typesTable() string {
	seen := map[reflect.Type]bool{}
	var order []reflect.Type
	var walk func(t reflect.Type, top bool)
	walk = func(t reflect.Type, top bool) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			walk(t.Elem(), false)
		case reflect.Struct:
			if !top && !seen[t] {
				seen[t] = true
				order = append(order, t)
			}
			for i := range t.NumField() {
				walk(t.Field(i).Type, false)
			}
		}
	}
	var b strings.Builder
	for _, c := range stores.Contracts() {
		order = nil
		for _, op := range c.Ops {
			walk(reflect.TypeOf(op), true)
			if r := op.Result(); r != nil {
				walk(reflect.TypeOf(r), false)
			}
		}
		fmt.Fprintf(&b, "\n#### %s\n\n| type | JSON |\n|---|---|\n", c.Name)
		for _, t := range order {
			fmt.Fprintf(&b, "| `%s` | `%s` |\n", t.Name(), fields(t))
		}
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

// fields is a struct's JSON object: each field's name and shape.
func fields(t reflect.Type) string {
	var parts []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := shape(f.Type)
		if strings.Contains(opts, "omitempty") {
			s += " (may be absent)"
		}
		parts = append(parts, fmt.Sprintf("%q: %s", name, s))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// shape is how a Go type travels in JSON.
func shape(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "base64 string or null"
	case t.Kind() == reflect.Pointer:
		return shape(t.Elem()) + " or null"
	case t.Kind() == reflect.Slice:
		return "[" + shape(t.Elem()) + "] or null"
	case t.Kind() == reflect.Map:
		return "{" + t.Key().Name() + ": " + shape(t.Elem()) + "}"
	case t.Kind() == reflect.Struct:
		return t.Name()
	case t.Kind() == reflect.Bool:
		return "bool"
	case t.Kind() == reflect.String:
		if t.Name() != "" && t.Name() != "string" {
			return "string (" + t.Name() + ")"
		}
		return "string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		if t.Name() != "" && !strings.HasPrefix(t.Name(), "int") && !strings.HasPrefix(t.Name(), "uint") {
			return "integer (" + t.Name() + ")"
		}
		return "integer"
	}
	return t.String()
}
