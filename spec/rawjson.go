package spec

import "encoding/json"

// RawJSON is JSON text a store keeps without interpreting it (an envelope, a
// node, a config). In an operation value it travels as a JSON string that
// holds the text verbatim: whitespace and key order are kept exactly, and
// text that is not JSON at all can still be presented, for the store to
// refuse. (json.RawMessage would be re-encoded compactly, and could not
// carry invalid text.)
type RawJSON []byte

// MarshalJSON encodes the text as a JSON string; nil is null.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return json.Marshal(string(r))
}

// UnmarshalJSON decodes a JSON string (or null) into the text it holds.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*r = RawJSON(s)
	return nil
}

// String is the text.
func (r RawJSON) String() string { return string(r) }
