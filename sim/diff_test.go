package sim

import (
	"strings"
	"testing"

	"github.com/storecheck/storecheck/linearizability/model"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// A mismatch shows the difference only: the keys in which the backend's
// answer and the model's differ, down to the one field, "…" for what is
// left out; a hole matches what the backend put there; a key one side
// lacks shows as absent; answers that are not both objects stay whole.
func TestAMismatchShowsTheDifferenceOnly(t *testing.T) {
	got := `{"agent-0":{"state":"uninitialized"},"agent-1":{"record":{"agent_runtime_id":"rt-1","generation":0,"identity":"agent-1"},"state":"ready"}}`
	for _, tc := range []struct {
		name        string
		got         string
		allowed     []string
		wantGot     string
		wantAllowed []string
	}{
		{"one field", got,
			[]string{`{"agent-0":{"state":"uninitialized"},"agent-1":{"record":{"agent_runtime_id":"rt-1-rival","generation":0,"identity":"agent-1"},"state":"ready"}} (rule continuity.resolve_many.reads)`},
			`{"agent-1":{"record":{"agent_runtime_id":"rt-1",…},…},…}`,
			[]string{`{"agent-1":{"record":{"agent_runtime_id":"rt-1-rival",…},…},…} (rule continuity.resolve_many.reads)`}},
		{"a key one side lacks", got,
			[]string{`{"agent-1":{"record":{"agent_runtime_id":"rt-1","generation":0,"identity":"agent-1"},"state":"ready"}}`},
			`{"agent-0":{"state":"uninitialized"},…}`, []string{`{"agent-0":(absent),…}`}},
		{"a hole matches", `{"checkpoint_ref":"sha256:e3b0","head_revision":2}`,
			[]string{`{"checkpoint_ref":"` + model.Hole("checkpoint", 1) + `","head_revision":1} (rule runtime.commit_runtime_state.checkpoint)`},
			`{"head_revision":2,…}`, []string{`{"head_revision":1,…} (rule runtime.commit_runtime_state.checkpoint)`}},
		{"several allowed: the union of their differences", `{"a":1,"b":2,"c":3}`,
			[]string{`{"a":9,"b":2,"c":3}`, `{"a":1,"b":8,"c":3}`, "not_found (rule x.y)"},
			`{"a":1,"b":2,…}`, []string{`{"a":9,"b":2,…}`, `{"a":1,"b":8,…}`, "not_found (rule x.y)"}},
		{"not objects", "5", []string{"7 (rule continuity.max_fencing_token.high_water)"},
			"5", []string{"7 (rule continuity.max_fencing_token.high_water)"}},
		{"a kind against an object", "not_found", []string{`{"a":1}`}, "not_found", []string{`{"a":1}`}},
	} {
		g, a := Differing(tc.got, tc.allowed)
		if g != tc.wantGot || strings.Join(a, "\n") != strings.Join(tc.wantAllowed, "\n") {
			t.Errorf("%s:\n got %s\n     %s\nwant %s\n     %s", tc.name, g, strings.Join(a, "\n     "), tc.wantGot, strings.Join(tc.wantAllowed, "\n     "))
		}
	}
	// The failure's message says the difference, its fields keep the
	// whole values.
	f := &Failure{Step: 6, What: "0004 client 0: resolve_many {}", Op: "resolve_many",
		Got: model.Outcome{Result: map[string]any{"a": 1, "b": 2}}, Allowed: []string{`{"a":1,"b":3} (rule r)`}}
	if msg := f.Error(); !strings.Contains(msg, `the backend answered {"b":2,…}, the model allows {"b":3,…} (rule r)`) {
		t.Fatalf("the message: %s", msg)
	}
	if f.Allowed[0] != `{"a":1,"b":3} (rule r)` {
		t.Fatalf("Error changed the failure's Allowed: %q", f.Allowed)
	}
}

// A read the seed runs as a statement per identity (resolve_many) is
// judged part by part: when one part is refused, the failure compares that
// part to what the model allows for it, so an identity the backend read
// right (here agent-0, uninitialized) is no difference, and the blame's
// fields are the wrong one's alone.
func TestAPartOfASplitReadShowsItsOwnDifference(t *testing.T) {
	o := newOracle(model.Continuity{})
	rec := c.Record{Identity: "agent-1", AgentRuntimeID: "rt", SessionID: "s", Generation: 1, CheckpointVersion: 6}
	up := c.UpsertContinuityRecord{Record: rec, Fence: 1}
	o.call(0, up, 0, false)
	if _, _, ok := o.ret(0, up, model.OK(nil)); !ok {
		t.Fatal("the upsert was refused")
	}
	stale := rec
	stale.CheckpointVersion = 5
	read := c.ResolveMany{Identities: []c.Identity{"agent-1", "agent-0"}}
	got := model.OK(map[c.Identity]c.Resolution{"agent-0": {State: c.Uninitialized}, "agent-1": {State: c.Ready, Record: &stale}})
	o.call(1, read, 0, false)
	allowed, judged, ok := o.ret(1, read, got)
	if ok {
		t.Fatal("a read of checkpoint version 5 after an upsert of 6 was allowed")
	}
	part, isMap := judged.Result.(map[c.Identity]c.Resolution)
	if !isMap || len(part) != 1 || part["agent-1"].Record == nil {
		t.Fatalf("judged %v, want agent-1's part alone", judged)
	}
	f := &Failure{Step: 2, What: "0001 client 0: resolve_many {}", Op: "resolve_many", Got: got, Part: &judged, Allowed: model.Allowed(allowed)}
	msg := f.Error()
	if strings.Contains(msg, "agent-0") || !strings.Contains(msg, `"checkpoint_version":5`) || !strings.Contains(msg, `"checkpoint_version":6`) {
		t.Errorf("the message shows more than the part's difference: %s", msg)
	}
	if b := model.BlameOf(model.Continuity{}.Contract(), read, judged, allowed, nil, nil); strings.Contains(b.Why, "agent-0") {
		t.Errorf("the blame takes agent-0 for a differing field: %s", b.Why)
	}
}
