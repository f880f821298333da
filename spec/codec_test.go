package spec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/spec"
)

type inner struct {
	ID   string `json:"id"`
	Note string `json:"note,omitempty"`
}

type outer struct {
	inner
	At    time.Time         `json:"at"`
	Items []inner           `json:"items"`
	ByKey map[string]inner  `json:"by_key"`
	Maybe *inner            `json:"maybe"`
	Raw   spec.RawJSON      `json:"raw,omitempty"`
	Extra map[string]string `json:"extra,omitempty"`
}

type outerOp struct{}

func (outerOp) Name() string { return "read_outer" }
func (outerOp) Result() any  { return outer{} }

// A result missing a field, like one with an unknown field, is refused with
// the field's path and the operation's name; fields with omitempty may be
// left out, null stands for a field that is there.
func TestDecodeResultRefusesMissingFields(t *testing.T) {
	full := `{"id":"a","at":"2026-01-01T00:00:00Z","items":[{"id":"x"}],"by_key":{"k":{"id":"y"}},"maybe":null}`
	if _, err := spec.DecodeResult(outerOp{}, []byte(full)); err != nil {
		t.Fatalf("a complete result: %v", err)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"at":"2026-01-01T00:00:00Z","items":[],"by_key":{},"maybe":null}`, `missing field "id"`},
		{`{"id":"a","items":[],"by_key":{},"maybe":null}`, `missing field "at"`},
		{`{"id":"a","at":"2026-01-01T00:00:00Z","items":[{"note":"n"}],"by_key":{},"maybe":null}`, `missing field "items[0].id"`},
		{`{"id":"a","at":"2026-01-01T00:00:00Z","items":[],"by_key":{"k":{}},"maybe":null}`, `missing field "by_key[\"k\"].id"`},
		{`{"id":"a","at":"2026-01-01T00:00:00Z","items":[],"by_key":{}}`, `missing field "maybe"`},
		{`{"id":"a","at":"2026-01-01T00:00:00Z","items":[],"by_key":{},"maybe":{}}`, `missing field "maybe.id"`},
		{`{"id":"a","at":"2026-01-01T00:00:00Z","items":[],"by_key":{},"maybe":null,"more":1}`, `unknown field "more"`},
	} {
		_, err := spec.DecodeResult(outerOp{}, []byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "read_outer") {
			t.Errorf("%s: got %v, want an error naming read_outer and %s", tc.json, err, tc.want)
		}
	}
}
