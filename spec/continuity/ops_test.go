package continuity

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
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

// Every operation survives a JSON round trip by name, and so does its result.
func TestOpsRoundTripThroughJSON(t *testing.T) {
	prev := &Record{Identity: "i", AgentRuntimeID: "rt", SessionID: "s", Generation: 1, CheckpointVersion: 2}
	for _, op := range []spec.Op{
		ResolveMany{Identities: []Identity{"a", "b"}},
		SaveSessionSnapshot{Write: SnapshotWrite{Identity: "i", SessionID: "s", CheckpointVersion: 3, FencingToken: 4, Data: []byte{0, 1, 255}}},
		RollbackContinuityRecord{Attempt: *prev, Previous: prev, Fence: 9},
		MaxFencingToken{},
	} {
		raw, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Contract.DecodeOp(op.Name(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, op) {
			t.Errorf("%s: %#v came back as %#v", op.Name(), op, back)
		}
	}
	if _, err := Contract.DecodeOp("upsert_continuity_record", []byte(`{"record":{},"fense":1}`)); err == nil ||
		!strings.Contains(err.Error(), `unknown field "fense"`) {
		t.Errorf("a misspelt field: %v", err)
	}
	if _, err := Contract.DecodeOp("upsert", nil); err == nil || err.Error() != `continuity has no operation "upsert"` {
		t.Errorf("an unknown operation: %v", err)
	}
	res := map[Identity]Resolution{"a": {State: Ready, Record: prev}, "b": {State: Uninitialized}}
	raw, _ := json.Marshal(res)
	back, err := spec.DecodeResult(ResolveMany{}, raw)
	if err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("resolve_many result: %#v, %v", back, err)
	}
	if _, err := spec.DecodeResult(MaxFencingToken{}, []byte(`"seven"`)); err == nil {
		t.Error("a string decoded as a fencing token")
	}
	if _, err := spec.DecodeResult(UpsertContinuityRecord{}, []byte(`true`)); err == nil {
		t.Error("a value decoded for an operation that yields nothing")
	}
}
