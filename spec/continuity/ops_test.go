package continuity

import (
	"context"
	"reflect"
	"testing"

	"github.com/storecheck/storecheck/spec"
)

// fake is a Store that answers every operation with the zero value of its
// declared result type, so Apply and Proxy can be checked against Result.
type fake struct{ Store }

func (fake) ResolveMany(context.Context, []Identity) (map[Identity]Resolution, error) {
	return map[Identity]Resolution{}, nil
}
func (fake) LoadSessionSnapshot(context.Context, SessionID) (*Snapshot, error) { return nil, nil }
func (fake) SessionSnapshotMatchesCurrent(context.Context, MatchCandidate) (bool, error) {
	return false, nil
}
func (fake) DeleteSessionSnapshotIfCurrentRevision(context.Context, SessionID, string) (bool, error) {
	return false, nil
}
func (fake) SaveSessionSnapshot(context.Context, SnapshotWrite) error { return nil }
func (fake) UpsertContinuityRecord(context.Context, Record, FencingToken) error {
	return nil
}
func (fake) RollbackContinuityRecord(context.Context, Record, *Record, FencingToken) error {
	return nil
}
func (fake) DeleteContinuityRecord(context.Context, Identity, FencingToken) error { return nil }
func (fake) MaxFencingToken(context.Context) (FencingToken, error)                { return 0, nil }

// Every operation's names are distinct and snake_case, Apply yields the type
// its Result declares, and a Proxy refuses a result of another type.
func TestOpsDeclareTheirResults(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range Ops {
		if seen[op.Name()] {
			t.Errorf("two operations named %s", op.Name())
		}
		seen[op.Name()] = true
		v, err := Apply(context.Background(), fake{}, op)
		if err != nil {
			t.Fatalf("%s: %v", op.Name(), err)
		}
		if reflect.TypeOf(v) != reflect.TypeOf(op.Result()) {
			t.Errorf("%s yields %T, declares %T", op.Name(), v, op.Result())
		}
	}
	wrong := Proxy{Target: applierFunc(func(context.Context, spec.Op) (any, error) { return "a string", nil })}
	if _, err := wrong.MaxFencingToken(context.Background()); err == nil ||
		err.Error() != "continuity: backend answered max_fencing_token with string, want continuity.FencingToken" {
		t.Errorf("a wrongly typed result: %v", err)
	}
}

type applierFunc func(context.Context, spec.Op) (any, error)

func (f applierFunc) Apply(ctx context.Context, op spec.Op) (any, error) { return f(ctx, op) }
