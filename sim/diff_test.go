package sim

import (
	"strings"
	"testing"

	"github.com/storecheck/storecheck/linearizability/model"
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
