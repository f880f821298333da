package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// Marshal writes f as JSON: its kind's name as "type", and its fields.
func Marshal(f Fault) ([]byte, error) {
	k := KindOf(f)
	if k == nil {
		return nil, fmt.Errorf("fault %T has no name", f)
	}
	fields, err := k.encode(f)
	if err != nil {
		return nil, err
	}
	// The fields' object, with the name first: {"type":...,fields...}.
	name, _ := json.Marshal(k.Name)
	out := append([]byte(`{"type":`), name...)
	rest := fields[1:]
	if len(rest) > 1 {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// Unmarshal reads a fault Marshal wrote; an unknown type or field, or a
// field the type does not have, is an error that names it.
func Unmarshal(b []byte) (Fault, error) {
	var fields map[string]json.RawMessage
	if err := strictJSON(b, &fields); err != nil {
		return nil, fmt.Errorf("fault: %w", err)
	}
	var name string
	if t, ok := fields["type"]; ok {
		if err := json.Unmarshal(t, &name); err != nil {
			return nil, fmt.Errorf("fault: type: %w", err)
		}
	}
	k := byName[name]
	if k == nil {
		return nil, fmt.Errorf("unknown fault type %q (want one of %v)", name, Names)
	}
	delete(fields, "type")
	keys := make([]string, 0, len(fields))
	for key := range fields {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if !slices.Contains(k.fields, key) {
			return nil, fmt.Errorf("fault %s has no %s", k.Name, key)
		}
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	return k.decode(rest)
}

// strictJSON decodes the one JSON value b holds into v, refusing unknown
// fields and trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
