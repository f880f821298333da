package spec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Contract describes one store to the parts of the kit that work with any
// store: its name, one zero value of each operation, and its error kinds.
type Contract struct {
	Name  string
	Ops   []Op
	Kinds []Kind
	// Rules is the contract's rule table (see Rule).
	Rules []Rule
	// Vocabularies are the word sets of the contract's string fields.
	Vocabularies []Vocabulary
	// Refusals are the error kinds each operation may answer, by
	// operation name, each with the rule that makes it: with the answers
	// of each result type, the cells of the coverage matrix (see Cells).
	Refusals map[string][]Refusal
	// DurabilityDeclared: the seed does not show whether the store syncs a
	// commit before it acknowledges it, so a backend may declare what its
	// writes survive (Capabilities.Durability), and is held to that.
	DurabilityDeclared bool
}

// Op finds an operation of the contract by name.
func (c Contract) Op(name string) (Op, bool) {
	for _, op := range c.Ops {
		if op.Name() == name {
			return op, true
		}
	}
	return nil, false
}

// HasKind reports whether k is in the contract's closed set.
func (c Contract) HasKind(k Kind) bool {
	for _, x := range c.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// DecodeOp decodes an operation value from its name and its arguments, the
// op value's JSON encoding. Unknown operations and unknown fields are errors
// that name them.
func (c Contract) DecodeOp(name string, args json.RawMessage) (Op, error) {
	zero, ok := c.Op(name)
	if !ok {
		return nil, fmt.Errorf("%s has no operation %q", c.Name, name)
	}
	v := reflect.New(reflect.TypeOf(zero))
	if len(args) > 0 && !bytes.Equal(args, []byte("null")) {
		if err := StrictUnmarshal(args, v.Interface()); err != nil {
			return nil, fmt.Errorf("%s %s: arguments: %w", c.Name, name, err)
		}
	}
	return v.Elem().Interface().(Op), nil
}

// DecodeResult decodes raw, a backend's result for op, into a value of the
// type op.Result() declares. An operation that yields nothing takes null (or
// no result at all); a value type (bool, a number, a string, a struct)
// refuses null; unknown fields are refused.
func DecodeResult(op Op, raw json.RawMessage) (any, error) {
	zero := op.Result()
	null := len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	if zero == nil {
		if !null {
			return nil, fmt.Errorf("%s yields nothing, but the backend answered %s", op.Name(), clip(raw, 80))
		}
		return nil, nil
	}
	t := reflect.TypeOf(zero)
	if null {
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			return zero, nil
		}
		return nil, fmt.Errorf("%s result: want a %s, the backend answered null", op.Name(), t)
	}
	v := reflect.New(t)
	if err := StrictUnmarshal(raw, v.Interface()); err != nil {
		return nil, fmt.Errorf("%s result: want a %s, the backend answered %s: %v", op.Name(), t, clip(raw, 80), err)
	}
	return v.Elem().Interface(), nil
}

// StrictUnmarshal decodes exactly one JSON value into v, refusing unknown
// fields, missing ones (every field without omitempty must be there, even
// as null), and anything after the value.
func StrictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var corrupt base64.CorruptInputError
		if errors.As(err, &corrupt) {
			if where, text, ok := badBytes(data, reflect.TypeOf(v), ""); ok {
				return fmt.Errorf("field %q: %s", where, NotBase64(text))
			}
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return requireFields(data, reflect.TypeOf(v), "")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// requireFields checks that data, a JSON value of type t, has every field t
// requires: a struct's fields without omitempty (those of embedded structs
// at the struct's own level, as encoding/json flattens them), in every
// element and value of slices and maps too. path names where, for the
// error.
func requireFields(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil {
			return nil // not an object: the decoder said so already, or it is a leaf
		}
		return requireMembers(members, t, path)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		var elems []json.RawMessage
		if json.Unmarshal(data, &elems) != nil {
			return nil
		}
		for i, e := range elems {
			if err := requireFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var vals map[string]json.RawMessage
		if json.Unmarshal(data, &vals) != nil {
			return nil
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := requireFields(vals[k], t.Elem(), fmt.Sprintf("%s[%q]", path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// badBytes finds, in data (a JSON value of type t), the first bytes field
// whose string is not base64: where it is and its text.
func badBytes(data []byte, t reflect.Type, path string) (string, string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return "", "", false
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			var text string
			if json.Unmarshal(data, &text) == nil {
				if _, err := base64.StdEncoding.DecodeString(text); err != nil {
					return path, text, true
				}
			}
			return "", "", false
		}
		var elems []json.RawMessage
		if json.Unmarshal(data, &elems) != nil {
			return "", "", false
		}
		for i, e := range elems {
			if w, text, ok := badBytes(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ok {
				return w, text, true
			}
		}
	case reflect.Map:
		var vals map[string]json.RawMessage
		if json.Unmarshal(data, &vals) != nil {
			return "", "", false
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if w, text, ok := badBytes(vals[k], t.Elem(), fmt.Sprintf("%s[%q]", path, k)); ok {
				return w, text, true
			}
		}
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil {
			return "", "", false
		}
		return badMember(members, t, path)
	}
	return "", "", false
}

func badMember(members map[string]json.RawMessage, t reflect.Type, path string) (string, string, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			if w, text, ok := badMember(members, f.Type, path); ok {
				return w, text, true
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		where := name
		if path != "" {
			where = path + "." + name
		}
		if raw, ok := members[name]; ok {
			if w, text, ok := badBytes(raw, f.Type, where); ok {
				return w, text, true
			}
		}
	}
	return "", "", false
}

func requireMembers(members map[string]json.RawMessage, t reflect.Type, path string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := requireMembers(members, ft, path); err != nil {
					return err
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		where := name
		if path != "" {
			where = path + "." + name
		}
		raw, ok := members[name]
		if !ok {
			if strings.Contains(","+opts+",", ",omitempty,") {
				continue
			}
			return fmt.Errorf("missing field %q", where)
		}
		if err := requireFields(raw, f.Type, where); err != nil {
			return err
		}
	}
	return nil
}

// clip is b as a string, cut to n bytes.
func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%s... (%d bytes)", b[:n], len(b))
	}
	return string(b)
}
