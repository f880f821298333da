package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/suite"
)

// Contract is what the adapters know of one store's contract, all of it
// taken from the contract's package: its name, its operations, its closed set
// of error kinds, and how to hand a Target to the suite as that store. It is
// enough to speak the store over the wire and to check it.
type Contract struct {
	// Name is the contract's StoreName.
	Name string
	// Ops is the contract's Ops list: one zero value of every operation.
	Ops []spec.Op
	// Kinds is the contract's closed set of error kinds.
	Kinds []spec.Kind
	// Bind sets the store's opener of h to one that opens a Target with
	// open and hands the suite the contract's Proxy over it.
	Bind func(h *suite.Harness, open Opener)
}

// Contracts are the stores the adapters can speak, in report order. A new
// store registers here with one entry.
var Contracts = []Contract{
	{Name: continuity.StoreName, Ops: continuity.Ops, Kinds: continuity.Kinds,
		Bind: func(h *suite.Harness, open Opener) { h.Continuity = proxied(open, continuityProxy) }},
}

func continuityProxy(t Target) continuity.Store { return continuity.Proxy{Target: t} }

// proxied turns an Opener into a suite opener of store type S.
func proxied[S any](open Opener, proxy func(Target) S) func(context.Context, suite.Options) (S, error) {
	return func(ctx context.Context, o suite.Options) (S, error) {
		t, err := open(ctx, o)
		if err != nil {
			var zero S
			return zero, err
		}
		return proxy(t), nil
	}
}

// ContractOf finds a registered contract by store name.
func ContractOf(store string) (Contract, bool) {
	for _, c := range Contracts {
		if c.Name == store {
			return c, true
		}
	}
	return Contract{}, false
}

// Op finds the contract's operation of that name (its zero value).
func (c Contract) Op(name string) (spec.Op, bool) {
	for _, op := range c.Ops {
		if op.Name() == name {
			return op, true
		}
	}
	return nil, false
}

// HasKind reports whether k is one of the contract's kinds.
func (c Contract) HasKind(k spec.Kind) bool { return slices.Contains(c.Kinds, k) }

// DecodeOp decodes args, the JSON encoding of an operation value, into the
// contract's operation of that name. Unknown fields are refused.
func (c Contract) DecodeOp(name string, args json.RawMessage) (spec.Op, error) {
	zero, ok := c.Op(name)
	if !ok {
		return nil, fmt.Errorf("store %s has no operation %q", c.Name, name)
	}
	v := reflect.New(reflect.TypeOf(zero))
	if len(args) > 0 && string(args) != "null" {
		if err := strictUnmarshal(args, v.Interface()); err != nil {
			return nil, fmt.Errorf("%s %s: args: %w", c.Name, name, err)
		}
	}
	return v.Elem().Interface().(spec.Op), nil
}

// DecodeResult decodes raw, a backend's result for op, into a value of the
// type op.Result() names. An operation that yields nothing takes null (or
// no result at all); a value type (bool, a number, a string, a struct)
// refuses null.
func DecodeResult(op spec.Op, raw json.RawMessage) (any, error) {
	zero := op.Result()
	null := len(raw) == 0 || string(raw) == "null"
	if zero == nil {
		if !null {
			return nil, fmt.Errorf("the operation yields nothing, but the backend answered %s", clip(raw, 80))
		}
		return nil, nil
	}
	t := reflect.TypeOf(zero)
	if null {
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			return zero, nil
		}
		return nil, fmt.Errorf("want a %s, the backend answered null", t)
	}
	v := reflect.New(t)
	if err := strictUnmarshal(raw, v.Interface()); err != nil {
		return nil, fmt.Errorf("want a %s, the backend answered %s: %v", t, clip(raw, 80), err)
	}
	return v.Elem().Interface(), nil
}

// clip is b as a string, cut to n bytes.
func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%s... (%d bytes)", b[:n], len(b))
	}
	return string(b)
}
