package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// A failure names the rule it breaks, as narrow as the answers allow: the
// rule an allowed answer names; else the rule that makes the refusal the
// backend answered; else the rules naming the field that differs, the
// writes' before it included; else every rule of the operation, saying
// why.
func TestBlameNarrowsToTheRuleBroken(t *testing.T) {
	contract := Continuity{}.Contract()
	rec := c.Record{Identity: "a", AgentRuntimeID: "rt", SessionID: "s", Generation: 1, CheckpointVersion: 2}
	read := c.ResolveMany{Identities: []c.Identity{"a"}}
	want := map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &rec}}
	lowered := rec
	lowered.CheckpointVersion = 0
	gotRead := map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &lowered}}
	upsert := c.UpsertContinuityRecord{Record: rec, Fence: 1}
	save := c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: "a", SessionID: "s", Generation: 1, CheckpointVersion: 3, FencingToken: 1}}
	for _, tc := range []struct {
		name    string
		op      spec.Op
		got     Outcome
		allowed []Branch
		writers []spec.Op
		rules   []string
		why     string
	}{
		{"an allowed answer's rule", upsert, OK(nil), []Branch{{Outcome: Fail(c.ErrStaleFencingToken), Rule: "continuity.upsert_continuity_record.fence_not_lower"}}, nil,
			[]string{"continuity.upsert_continuity_record.fence_not_lower"}, "decides the answer"},
		{"the refusal's rule", save, Fail(c.ErrStaleFencingToken), []Branch{{Outcome: OK(nil)}}, nil,
			[]string{"continuity.save_session_snapshot.fence_not_lower"}, "the only rule that refuses"},
		{"the refusal's rule the backend did not apply", save, OK(nil), []Branch{{Outcome: Fail(c.ErrStaleCheckpointVersion)}}, nil,
			[]string{"continuity.save_session_snapshot.version_must_advance"}, "the model refuses"},
		{"a read of a field a write set", read, OK(gotRead), []Branch{{Outcome: OK(want)}}, []spec.Op{upsert},
			[]string{"continuity.resolve_many.ready_or_uninitialized", "continuity.resolve_many.one_read_per_identity", "continuity.upsert_continuity_record.checkpoint_version_kept"}, "checkpoint_version"},
		{"a read with no write to blame", read, OK(gotRead), []Branch{{Outcome: OK(want)}}, nil,
			[]string{"continuity.resolve_many.ready_or_uninitialized", "continuity.resolve_many.one_read_per_identity"}, "decides together"},
		{"a bool: every rule, saying why", c.SessionSnapshotMatchesCurrent{}, OK(true), []Branch{{Outcome: OK(false)}}, nil,
			[]string{"continuity.session_snapshot_matches_current.whole_tuple", "continuity.session_snapshot_matches_current.row_fence_is_provenance"}, "cannot tell which"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := BlameOf(contract, tc.op, tc.got, tc.allowed, tc.writers)
			if !slices.Equal(b.Rules, tc.rules) || !strings.Contains(b.Why, tc.why) {
				t.Errorf("blame %v (%s), want %v (%q in why)", b.Rules, b.Why, tc.rules, tc.why)
			}
			for _, id := range b.Rules {
				if _, ok := contract.Rule(id); !ok {
					t.Errorf("%s is no rule of the contract", id)
				}
			}
		})
	}
}
