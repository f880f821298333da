package spec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestErrorKinds(t *testing.T) {
	const stale, other Kind = "stale_fencing_token", "not_found"
	err := fmt.Errorf("wrapped: %w", Errorf(stale, "presented %d, current %d", 1, 2))
	if !errors.Is(err, stale) {
		t.Errorf("errors.Is does not find the kind")
	}
	if errors.Is(err, other) {
		t.Errorf("errors.Is matches another kind")
	}
	if !errors.Is(err, &Error{Kind: stale, Message: "any text"}) {
		t.Errorf("an *Error target of the same kind does not match")
	}
	if KindOf(err) != stale || KindOf(errors.New("plain")) != "" || KindOf(other) != other {
		t.Errorf("KindOf: %q %q %q", KindOf(err), KindOf(errors.New("plain")), KindOf(other))
	}
	if got := err.Error(); got != "wrapped: stale_fencing_token: presented 1, current 2" {
		t.Errorf("message %q", got)
	}
}

func TestErrorfKeepsItsCause(t *testing.T) {
	err := Errorf("io", "begin: %w", context.DeadlineExceeded)
	if !errors.Is(err, context.DeadlineExceeded) || KindOf(err) != "io" {
		t.Fatalf("%v lost its cause or kind", err)
	}
}

type opaqueOp struct{}

func (opaqueOp) Name() string { return "opaque" }
func (opaqueOp) Result() any  { return json.RawMessage(nil) }

// A null result is the zero result: an opaque value that is none reads back
// as nil, not as the text "null".
func TestDecodeResultNullIsTheZeroResult(t *testing.T) {
	v, err := DecodeResult(opaqueOp{}, json.RawMessage(" null"))
	if got, ok := v.(json.RawMessage); err != nil || !ok || got != nil {
		t.Fatalf("got %#v %v, want a nil json.RawMessage", v, err)
	}
	v, err = DecodeResult(opaqueOp{}, json.RawMessage(`{"a":1}`))
	if got, _ := v.(json.RawMessage); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("got %#v %v", v, err)
	}
}
