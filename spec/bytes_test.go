package spec_test

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "nil"},
		{[]byte{}, `""`},
		{[]byte("one"), `"one"`},
		{[]byte("line\nnext é"), `"line\nnext é"`},
		{[]byte("\x00second\xff"), "hex 007365636f6e64ff (8 bytes, not text)"},
	} {
		if got := spec.FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// The kit base64-decodes what a backend sends; each mistake a backend can
// make is named from what the kit then holds.
func TestBytesMistake(t *testing.T) {
	want := []byte("\x00second\xff")
	// hex "007365636f6e64ff" is 16 base64 characters: it decodes, to garbage.
	sentHex, err := base64.StdEncoding.DecodeString(hex.EncodeToString(want))
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("four")
	sentText, err := base64.StdEncoding.DecodeString("four")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		got, want  []byte
		wantSubstr string
	}{
		{"hex where base64 is due", sentHex, want, "looks like the hex of the expected bytes"},
		{"the text where base64 is due", sentText, text, "the expected text sent as it is"},
		{"hex as text", []byte(hex.EncodeToString(want)), want, "the hex of the expected bytes, as text"},
		{"base64 twice", []byte(base64.StdEncoding.EncodeToString(want)), want, "encoded them twice"},
		{"JSON text as base64", []byte(base64.StdEncoding.EncodeToString([]byte(`{"k":1}`))), []byte(`{"k":1}`), "sent base64 where the protocol sends JSON text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spec.BytesMistake(tc.got, tc.want); !strings.Contains(got, tc.wantSubstr) {
				t.Errorf("BytesMistake = %q, want it to say %q", got, tc.wantSubstr)
			}
		})
	}
	if got := spec.BytesMistake([]byte("other"), want); got != "" {
		t.Errorf("unrelated bytes: %q", got)
	}
	if got := spec.BytesMistake(want, want); got != "" {
		t.Errorf("equal bytes: %q", got)
	}
}

// A byte field that is not base64 is refused naming the field, and a hex
// one says it looks like hex.
func TestStrictUnmarshalNamesTheByteField(t *testing.T) {
	var snap *c.Snapshot
	err := spec.StrictUnmarshal([]byte(`{"data":"6f6e65"}`), &snap)
	if err == nil {
		t.Fatal("hex of odd base64 length decoded")
	}
	for _, want := range []string{`field "data"`, `"6f6e65" is not base64`, `looks like hex (of "one")`, `base64 ("b25l")`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	var w struct {
		Writes []c.SnapshotWrite `json:"writes"`
	}
	err = spec.StrictUnmarshal([]byte(`{"writes":[{"identity":"a","session_id":"s","generation":0,"checkpoint_version":0,"fencing_token":0,"data":"a-b_"}]}`), &w)
	if err == nil || !strings.Contains(err.Error(), `field "writes[0].data"`) || !strings.Contains(err.Error(), "URL-safe") {
		t.Errorf("nested URL-safe base64: %v", err)
	}
	op, _ := c.Contract.Op("load_session_snapshot")
	_, err = spec.DecodeResult(op, []byte(`{"data":"6f6e65"}`))
	if err == nil || !strings.Contains(err.Error(), "load_session_snapshot result") || !strings.Contains(err.Error(), `field "data"`) {
		t.Errorf("DecodeResult: %v", err)
	}
}
