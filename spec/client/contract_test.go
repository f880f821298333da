package client

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"
)

func TestHeadPreview(t *testing.T) {
	for _, tc := range []struct{ name, head, want string }{
		{"empty", "", ""},
		{"short", "abc", "abc"},
		{"exactly 200 code points", strings.Repeat("日", 200), strings.Repeat("日", 200)},
		{"201 code points", strings.Repeat("日", 201), strings.Repeat("日", 200) + "…"},
		{"mixed widths", strings.Repeat("a", 199) + "éz", strings.Repeat("a", 199) + "é…"},
		{"bytes that are not UTF-8 count one each", strings.Repeat("\xff", 201), strings.Repeat("\xff", 200) + "…"},
	} {
		if got := HeadPreview(tc.head); got != tc.want {
			t.Errorf("%s: HeadPreview = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSessionIDFor(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{`{"backend":"acp","task_id":"sess-1"}`, "sess-1"},
		{`{"backend":"acp"}`, "task"},
		{`{"task_id":""}`, ""},
		{`{"task_id":null}`, "task"},
		{`{"task_id":"a","backend":"acp"}`, "a"},
		{`{"task_id":7}`, "task"},
		{`["sess-1"]`, "task"},
		{`not json`, "task"},
		{``, "task"},
	} {
		if got := SessionIDFor("task", tc.ref); got != tc.want {
			t.Errorf("SessionIDFor(task, %q) = %q, want %q", tc.ref, got, tc.want)
		}
	}
}

func TestEffectiveLimit(t *testing.T) {
	for limit, want := range map[uint32]int{0: 100, 1: 1, 100: 100, 500: 500, 501: 500, 1 << 31: 500} {
		if got := EffectiveLimit(limit); got != want {
			t.Errorf("EffectiveLimit(%d) = %d, want %d", limit, got, want)
		}
	}
}

func TestEveryOperationHasADistinctName(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range Ops {
		if op.Name() == "" || seen[op.Name()] {
			t.Errorf("operation %T has an empty or repeated name %q", op, op.Name())
		}
		seen[op.Name()] = true
	}
}

// An operation whose JSON value is not JSON (one the store must refuse)
// still encodes, and reads back byte for byte.
func TestOperationsWithJSONValuesRoundTrip(t *testing.T) {
	for _, op := range []spec.Op{
		EnqueueIntent{OpID: "a", Envelope: spec.RawJSON(`{"causality":{"task":"t"}}`)},
		EnqueueIntent{OpID: "a", Envelope: spec.RawJSON(`{"causality":`)},
		EnqueueIntent{OpID: "a", Envelope: spec.RawJSON(`null`)},
		EnqueueIntent{OpID: "a", Envelope: spec.RawJSON(``)},
		AcceptIntent{OpID: "b", Receipt: spec.RawJSON(`{"ack":1}`)},
		AcceptIntent{OpID: "b", Receipt: spec.RawJSON(`not json`)},
		AppendEvent{Type: "tick", Data: spec.RawJSON(`[1,2]`)},
		AppendEvent{Type: "tick", Data: spec.RawJSON(`{"n":`)},
	} {
		b, err := json.Marshal(op)
		if err != nil {
			t.Fatalf("%+v: %v", op, err)
		}
		back, err := Contract.DecodeOp(op.Name(), b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, op) && !spec.SameResult(back, op) {
			t.Errorf("%s read back as %+v, want %+v", b, back, op)
		}
		if fmt.Sprint(back) != fmt.Sprint(op) {
			t.Errorf("%s read back as %q, want %q", b, fmt.Sprint(back), fmt.Sprint(op))
		}
	}
	for _, bad := range []string{`{"op_id":"a","envelope":{},"envelope_text":"x"}`, `{"op_id":"a","extra":1}`} {
		if _, err := Contract.DecodeOp("enqueue_intent", []byte(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
