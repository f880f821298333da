package stores

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/spec"
)

// For every registered store and every operation: the zero value
// round-trips through JSON by name, and the reference yields the type the
// operation declares.
func TestOperationsDeclareWhatTheReferenceYields(t *testing.T) {
	ctx := context.Background()
	for _, s := range All {
		target, err := s.Reference(ctx, spec.OpenOptions{Clock: clockwork.NewFakeClock()})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range s.Contract.Ops {
			raw, err := json.Marshal(op)
			if err != nil {
				t.Fatal(err)
			}
			back, err := s.Contract.DecodeOp(op.Name(), raw)
			again, _ := json.Marshal(back)
			if err != nil || string(again) != string(raw) {
				t.Errorf("%s %s: %s came back as %s (%v)", s.Name(), op.Name(), raw, again, err)
			}
			v, err := target.Apply(ctx, op)
			if err != nil {
				continue // a zero value may be refused; its type is then not shown
			}
			if reflect.TypeOf(v) != reflect.TypeOf(op.Result()) {
				t.Errorf("%s %s yields %T, declares %T", s.Name(), op.Name(), v, op.Result())
			}
		}
		target.Close()
	}
}

// Every registered store is whole: a contract with the io kind every store
// shares, a model over the same contract, its reference's crash points,
// and bugs of its own that the registry names.
func TestEveryStoreIsRegisteredWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All {
		if seen[s.Name()] {
			t.Errorf("%s is registered twice", s.Name())
		}
		seen[s.Name()] = true
		if !s.Contract.HasKind(spec.ErrIO) {
			t.Errorf("%s: the contract has no %s kind", s.Name(), spec.ErrIO)
		}
		if s.Model != nil && s.Model.Contract().Name != s.Name() {
			t.Errorf("%s: the model is of %s", s.Name(), s.Model.Contract().Name)
		}
		if s.Model != nil && s.Workload == nil {
			t.Errorf("%s: a model and no workload", s.Name())
		}
		if s.Reference == nil || len(s.CrashPoints) == 0 {
			t.Errorf("%s: no reference opener or no crash points", s.Name())
		}
		for _, b := range s.Bugs {
			if b.Store() != s.Name() {
				t.Errorf("%s lists bug %s of %s", s.Name(), b.Name(), b.Store())
			}
		}
	}
	info := Reference().Info()
	if !slices.Equal(info.Stores, Names()) {
		t.Errorf("the reference backend implements %v, the registry has %v", info.Stores, Names())
	}
}
