package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// Contract describes one store to the parts of the kit that work with any
// store: its name, one zero value of each operation, and its error kinds.
type Contract struct {
	Name  string
	Ops   []Op
	Kinds []Kind
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
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v.Interface()); err != nil {
			return nil, fmt.Errorf("%s %s: arguments: %w", c.Name, name, err)
		}
	}
	return v.Elem().Interface().(Op), nil
}

// DecodeResult decodes op's result from JSON into the type op.Result
// declares. An operation that yields nothing accepts only null or nothing.
func DecodeResult(op Op, raw json.RawMessage) (any, error) {
	zero := op.Result()
	if zero == nil {
		if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s yields nothing, got %s", op.Name(), raw)
	}
	// null is the zero result: a nil pointer or slice, and a nil opaque
	// value too (json.RawMessage would otherwise keep the text "null").
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return zero, nil
	}
	v := reflect.New(reflect.TypeOf(zero))
	if err := json.Unmarshal(raw, v.Interface()); err != nil {
		return nil, fmt.Errorf("%s result: want %T: %w", op.Name(), zero, err)
	}
	return v.Elem().Interface(), nil
}
