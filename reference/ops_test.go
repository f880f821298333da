package reference

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/suite"
)

// For every store and every operation: the zero value round-trips through
// JSON by name, and the reference yields the type the operation declares.
func TestOperationsDeclareWhatTheReferenceYields(t *testing.T) {
	ctx := context.Background()
	h := Harness(Options{Direct: true})
	opts := suite.Options{Clock: clockwork.NewFakeClock()}
	for _, tc := range []struct {
		contract spec.Contract
		open     func() (adapters.Target, error)
	}{
		{contractOf(t, "continuity"), func() (adapters.Target, error) {
			s, err := h.Continuity(ctx, opts)
			if err != nil {
				return nil, err
			}
			return adapters.Continuity(s), nil
		}},
		{contractOf(t, "runtime"), func() (adapters.Target, error) {
			s, err := h.Runtime(ctx, opts)
			if err != nil {
				return nil, err
			}
			return adapters.Runtime(s), nil
		}},
		{contractOf(t, "client"), func() (adapters.Target, error) {
			s, err := h.Client(ctx, opts)
			if err != nil {
				return nil, err
			}
			return adapters.Client(s), nil
		}},
	} {
		target, err := tc.open()
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range tc.contract.Ops {
			raw, err := json.Marshal(op)
			if err != nil {
				t.Fatal(err)
			}
			back, err := tc.contract.DecodeOp(op.Name(), raw)
			again, _ := json.Marshal(back)
			if err != nil || string(again) != string(raw) {
				t.Errorf("%s %s: %s came back as %s (%v)", tc.contract.Name, op.Name(), raw, again, err)
			}
			v, err := target.Apply(ctx, op)
			if err != nil {
				continue // a zero value may be refused; its type is then not shown
			}
			if reflect.TypeOf(v) != reflect.TypeOf(op.Result()) {
				t.Errorf("%s %s yields %T, declares %T", tc.contract.Name, op.Name(), v, op.Result())
			}
		}
		target.Close()
	}
}

func contractOf(t *testing.T, name string) spec.Contract {
	for _, c := range Contracts {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no contract %s", name)
	return spec.Contract{}
}
