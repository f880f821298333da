package suite

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/onsi/gomega/format"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Failure messages show bytes as text or hex, never decimal arrays, nested
// ones too.
func TestFailuresShowBytesAsTextOrHex(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{[]byte("\x00second\xff"), "hex 007365636f6e64ff"},
		{[]byte("one"), `"one"`},
		{&r.Attachment{Data: []byte("\x00bytes\xff")}, "hex 006279746573ff"},
		{spec.RawJSON(`{"k": 1}`), `JSON text "{\"k\": 1}"`},
	} {
		got := format.Object(tc.v, 0)
		if !strings.Contains(got, tc.want) || strings.Contains(got, "[0, 115") {
			t.Errorf("format.Object(%#v) = %s, want it to show %s", tc.v, got, tc.want)
		}
	}
}

// A backend that sends hex where base64 is due gets a failure that says
// so, with both values readable.
func TestABackendSendingHexIsToldSo(t *testing.T) {
	want := []byte("\x00second\xff")
	// What the kit holds after base64-decoding the hex the backend sent.
	got, err := base64.StdEncoding.DecodeString(hex.EncodeToString(want))
	if err != nil {
		t.Fatal(err)
	}
	m := equalBytes(want)
	if ok, err := m.Match(got); ok || err != nil {
		t.Fatalf("Match = %v, %v", ok, err)
	}
	msg := m.FailureMessage(got)
	for _, s := range []string{"hex 007365636f6e64ff", "looks like the hex of the expected bytes", "the protocol sends bytes as base64"} {
		if !strings.Contains(msg, s) {
			t.Errorf("failure message %q does not say %q", msg, s)
		}
	}
	if ok, _ := equalBytes([]byte{}).Match([]byte(nil)); ok {
		t.Error("no bytes at all matched empty bytes")
	}
	if ok, _ := equalBytes(want).Match(want); !ok {
		t.Error("equal bytes did not match")
	}
	if hint := bytesHint(got, want)(); !strings.Contains(hint, "hex") {
		t.Errorf("bytesHint = %q", hint)
	}
}
