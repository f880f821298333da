package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
)

// Contract describes one store to the parts of the kit that work with any
// store: its name, one zero value of each operation, and its error kinds.
type Contract struct {
	Name  string
	Ops   []Op
	Kinds []Kind
	// Rules is the contract's rule table (see Rule).
	Rules []Rule
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
// fields and anything after the value.
func StrictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
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
