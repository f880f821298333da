package spec

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSameResult(t *testing.T) {
	type rec struct {
		Data []byte
		Tags map[string]int
		Next *rec
	}
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{[]byte(nil), []byte{}, true},
		{rec{Data: nil}, rec{Data: []byte{}}, true},
		{rec{Tags: map[string]int{}}, rec{}, true},
		{rec{Data: []byte("a")}, rec{Data: []byte("b")}, false},
		{&rec{Next: &rec{Data: []byte("x")}}, &rec{Next: &rec{Data: []byte("x")}}, true},
		{&rec{}, (*rec)(nil), false},
		{map[string]rec{"a": {}}, map[string]rec{"b": {}}, false},
		{true, false, false},
		{uint64(1), int64(1), false},
		{time.UnixMilli(5).UTC(), time.UnixMilli(5).In(time.FixedZone("x", 3600)), true},
		{struct{ T time.Time }{time.UnixMilli(5)}, struct{ T time.Time }{time.UnixMilli(6)}, false},
		{json.RawMessage(`{"a": 1, "b": [2]}`), json.RawMessage(`{"b":[2],"a":1}`), true},
		{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`), false},
		{json.RawMessage(nil), json.RawMessage{}, true},
		{json.RawMessage(`x`), json.RawMessage(`y`), false},
	} {
		if got := SameResult(tc.a, tc.b); got != tc.want {
			t.Errorf("SameResult(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRawJSONTravelsVerbatim(t *testing.T) {
	type op struct {
		Data RawJSON `json:"data"`
	}
	for _, text := range []string{`{"a": 1,  "b" : [1, 2]}`, `not json {`, ``} {
		b, err := json.Marshal(op{Data: RawJSON(text)})
		if err != nil {
			t.Fatal(err)
		}
		var back op
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if string(back.Data) != text || back.Data == nil {
			t.Errorf("%q came back as %q", text, back.Data)
		}
	}
	b, _ := json.Marshal(op{})
	var back op
	if string(b) != `{"data":null}` || json.Unmarshal(b, &back) != nil || back.Data != nil {
		t.Errorf("nil: %s -> %#v", b, back)
	}
}
