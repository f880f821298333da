package adapters_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

func readPage(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// checkExamples reads the examples section of page as a backend author
// would and decodes every line through the kit's own strict decoders (the
// exec adapter's: adapters.DecodeArgs, adapters.DecodeResult,
// spec.StrictUnmarshal). Each must decode, encode back to exactly the
// page's text, and be the Go value the example was made from; every
// operation must have its args and its result, every named type its value.
func checkExamples(page string) error {
	begin, end := "<!-- BEGIN GENERATED examples -->", "<!-- END GENERATED examples -->"
	i, j := strings.Index(page, begin), strings.Index(page, end)
	if i < 0 || j < i {
		return fmt.Errorf("the page has no examples section")
	}
	byStore := map[string]map[string]string{}
	var store string
	inBlock := false
	for n, line := range strings.Split(page[i+len(begin):j], "\n") {
		switch {
		case strings.HasPrefix(line, "#### "):
			store = strings.TrimPrefix(line, "#### ")
			byStore[store] = map[string]string{}
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock
		case inBlock:
			name, rest, ok1 := strings.Cut(line, " ")
			what, raw, ok2 := strings.Cut(rest, " ")
			if !ok1 || !ok2 || store == "" {
				return fmt.Errorf("examples line %d is not \"<name> args|result|value <JSON>\": %q", n, line)
			}
			byStore[store][name+" "+what] = raw
		}
	}
	for _, c := range stores.Contracts() {
		lines, ok := byStore[c.Name]
		if !ok {
			return fmt.Errorf("no examples of the %s store", c.Name)
		}
		take := func(key string) (string, error) {
			raw, ok := lines[key]
			if !ok {
				return "", fmt.Errorf("%s: no example %q", c.Name, key)
			}
			delete(lines, key)
			return raw, nil
		}
		for _, zero := range c.Ops {
			raw, err := take(zero.Name() + " args")
			if err != nil {
				return err
			}
			op, err := adapters.DecodeArgs(c, zero.Name(), json.RawMessage(raw))
			if err != nil {
				return fmt.Errorf("%s %s args: the kit refuses the page's example %s: %v", c.Name, zero.Name(), raw, err)
			}
			if err := sameAsPage(op, exampleArgs(c, zero), raw); err != nil {
				return fmt.Errorf("%s %s args: %v", c.Name, zero.Name(), err)
			}
			raw, err = take(zero.Name() + " result")
			if err != nil {
				return err
			}
			v, err := adapters.DecodeResult(zero, json.RawMessage(raw))
			if err != nil {
				return fmt.Errorf("%s %s result: the kit refuses the page's example %s: %v", c.Name, zero.Name(), raw, err)
			}
			if err := sameAsPage(v, exampleResult(c, zero), raw); err != nil {
				return fmt.Errorf("%s %s result: %v", c.Name, zero.Name(), err)
			}
		}
		for _, t := range namedTypes(c) {
			raw, err := take(t.Name() + " value")
			if err != nil {
				return err
			}
			p := reflect.New(t)
			if err := spec.StrictUnmarshal([]byte(raw), p.Interface()); err != nil {
				return fmt.Errorf("%s %s: the kit refuses the page's example %s: %v", c.Name, t.Name(), raw, err)
			}
			if err := sameAsPage(p.Elem().Interface(), exampleValue(c, t), raw); err != nil {
				return fmt.Errorf("%s %s: %v", c.Name, t.Name(), err)
			}
		}
		for key := range lines {
			return fmt.Errorf("%s: the page has an example %q of nothing the contract has", c.Name, key)
		}
	}
	return nil
}

// sameAsPage: decoded (what the kit read from the page's text raw) is the
// Go value the example was made of, and encodes back to raw exactly.
func sameAsPage(decoded, want any, raw string) error {
	if !reflect.DeepEqual(decoded, want) {
		return fmt.Errorf("the page's example %s decodes to %#v, not the value it documents, %#v", raw, decoded, want)
	}
	again, err := adapters.Encode(decoded)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, []byte(raw)) {
		return fmt.Errorf("the page's example %s is not what the kit encodes, %s", raw, again)
	}
	return nil
}

func TestProtocolPageExamplesDecode(t *testing.T) {
	if err := checkExamples(readPage(t)); err != nil {
		t.Fatal(err)
	}
}

// A page that disagrees with the code fails checkExamples, naming the
// example: opaque JSON shown as base64, a nested member for an embedded
// struct, a missing field, a time as an object.
func TestProtocolPageExamplesBrokenPageFails(t *testing.T) {
	page := readPage(t)
	for _, tc := range []struct{ name, old, new, want string }{
		{"opaque JSON as base64",
			`enqueue_intent args {"op_id":"op-1","envelope":"{\"k\": [1, \"é\"]}"}`,
			`enqueue_intent args {"op_id":"op-1","envelope":"eyJrIjogWzEsICLDqSJdfQ=="}`,
			"client enqueue_intent args: the page's example"},
		{"an embedded struct nested",
			`get_session result {"session_id":"session-1","task_id":"task-1","generation":3,`,
			`get_session result {"session_id":"session-1","task_id":"task-1","VersionedSession":{},"generation":3,`,
			`client get_session result: the kit refuses the page's example`},
		{"a missing field",
			`prose result {"prose":"prose-1","spec_hash":"spec-hash-1","cached_at":"2026-01-01T00:00:01.25Z"}`,
			`prose result {"prose":"prose-1","spec_hash":"spec-hash-1"}`,
			`missing field "cached_at"`},
		{"a time as an object",
			`due_intents args {"now":"2026-01-01T00:00:01.25Z","limit":3}`,
			`due_intents args {"now":{},"limit":3}`,
			"client due_intents args: the kit refuses"},
		{"a dropped example",
			"max_fencing_token result 3\n", "",
			`continuity: no example "max_fencing_token result"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(page, tc.old) {
				t.Fatalf("the page has no %q to break", tc.old)
			}
			err := checkExamples(strings.Replace(page, tc.old, tc.new, 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("broken page: got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The custom marshalers travel as the page says: opaque JSON as a string
// holding the text verbatim (never base64), a time as an RFC 3339 string,
// and the kit decodes them back.
func TestProtocolCustomShapes(t *testing.T) {
	for typ, cs := range customShapes {
		got, err := adapters.Encode(cs.value)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != cs.json {
			t.Errorf("%s encodes as %s; customShapes says %s", typ, got, cs.json)
		}
		back := reflect.New(typ)
		if err := spec.StrictUnmarshal(got, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), cs.value) {
			t.Errorf("%s: %s decodes to %v (%v)", typ, got, back.Elem().Interface(), err)
		}
	}
}

// The page, as an author reads it: opaque payloads are JSON text, times
// RFC 3339 strings, embedded structs flat, every capability and every
// vocabulary word listed.
func TestProtocolPageSaysWhatTravels(t *testing.T) {
	page := readPage(t)
	for _, want := range []string{
		// the envelope is a JSON string of the text, not base64
		`enqueue_intent args {"op_id":"op-1","envelope":"{\"k\": [1, \"é\"]}"}`,
		"`Intent` | `{\"op_id\": string, \"envelope\": JSON text or null,",
		`"next_attempt_at": time,`,
		`due_intents args {"now":"2026-01-01T00:00:01.25Z"`,
		"`SessionRecord` | `{\"session_id\": string, \"task_id\": string, \"generation\": unsigned integer,",
		"`Snapshot` | `{\"data\": bytes or null}`",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %s", want)
		}
	}
	for _, wrong := range []string{"base64 string or null", "`Time` | `{}`", `"VersionedSession": VersionedSession`, "crash points are needed", "`zoneTrans`"} {
		if strings.Contains(page, wrong) {
			t.Errorf("the page still says %s", wrong)
		}
	}
	// Every capability of the hello is in the table, and nothing else.
	var names []string
	for _, f := range jsonFields(reflect.TypeFor[adapters.Capabilities]()) {
		names = append(names, f.name)
		if _, ok := spec.CapabilityNamed(f.name); !ok {
			t.Errorf("capability %s of the hello is not in spec.CapabilityTable", f.name)
		}
		if !strings.Contains(page, "| `"+f.name+"` |") {
			t.Errorf("the page has no row for capability %s", f.name)
		}
	}
	if len(names) != len(spec.CapabilityTable) {
		t.Errorf("the hello has capabilities %v; spec.CapabilityTable has %d rows", names, len(spec.CapabilityTable))
	}
	// Every vocabulary names places that exist, and every word is listed.
	for _, c := range stores.Contracts() {
		places := map[string]bool{}
		for _, op := range c.Ops {
			places[op.Name()+".result"] = true
			for _, f := range jsonFields(reflect.TypeOf(op)) {
				places[op.Name()+"."+f.name] = true
			}
		}
		for _, typ := range namedTypes(c) {
			for _, f := range jsonFields(typ) {
				places[ownerName(c, f.owner)+"."+f.name] = true
			}
		}
		for _, v := range c.Vocabularies {
			for _, f := range v.Fields {
				if !places[f] {
					t.Errorf("%s vocabulary %s: no field %s", c.Name, v.Name, f)
				}
			}
			for _, w := range v.Words {
				if !strings.Contains(page, "| `"+w.Word+"` | "+w.Means+" |") {
					t.Errorf("%s vocabulary %s: the page does not list %s", c.Name, v.Name, w.Word)
				}
			}
		}
	}
}
