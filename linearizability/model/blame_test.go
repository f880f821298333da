package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
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
		{"bad_request: no rule, though the model allows a refusal", upsert, Fail(spec.ErrBadRequest), []Branch{{Outcome: Fail(c.ErrStaleFencingToken), Rule: "continuity.upsert_continuity_record.fence_not_lower"}}, nil,
			nil, "no rule of the contract"},
		{"bad_request: no rule where the model allows ok", save, Fail(spec.ErrBadRequest), []Branch{{Outcome: OK(nil)}}, nil,
			nil, "the backend refusing the request itself"},
		{"a bool: every rule, saying why", c.SessionSnapshotMatchesCurrent{}, OK(true), []Branch{{Outcome: OK(false)}}, nil,
			[]string{"continuity.session_snapshot_matches_current.whole_tuple", "continuity.session_snapshot_matches_current.row_fence_is_provenance"}, "cannot tell which"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := BlameOf(contract, tc.op, tc.got, tc.allowed, tc.writers, nil)
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

// A claim with max_batches 0 answers none and checks nothing
// (runtime.claim_ready_queued_work.max_zero): a backend that goes on to
// check the lease and refuses, or claims, broke that rule alone (bug
// runtime_max_zero_claims_all), not lease_live nor the claim's rules.
func TestAClaimOfMaxZeroBlamesMaxZeroAlone(t *testing.T) {
	m := Runtime{}
	op := r.ClaimReadyQueuedWork{SessionID: "s", Lease: r.SessionExecutionLeaseFence{SessionID: "s", OwnerID: "o", LeaseToken: "t", FencingToken: 1},
		OwnerID: "o", Boundary: r.BoundaryTurn, TTLMs: 1000, MaxBatches: 0}
	allowed := m.Step(m.Init(), op, 0)
	claimed := &r.QueuedWorkClaim{ClaimID: "c", LeaseToken: "k", SessionID: "s", OwnerID: "o", FencingToken: 1}
	for _, got := range []Outcome{Fail(r.ErrSessionExecutionLeaseExpired), OK(claimed)} {
		b := BlameOf(m.Contract(), op, got, allowed, nil, nil)
		if want := []string{"runtime.claim_ready_queued_work.max_zero"}; !slices.Equal(b.Rules, want) {
			t.Errorf("answer %s: blamed %v (%s), want %v", got, b.Rules, b.Why, want)
		}
	}
}

// A read whose differing values are the ones a writer wrote blames, of the
// writers, that one: the rule refusing it where the read came when the
// contract refuses it there, else its rules naming the fields; with no
// model to ask (again nil) every writer's rules naming the fields.
func TestBlameOfAReadNarrowsToTheWriteItShows(t *testing.T) {
	contract := Continuity{}.Contract()
	shown := c.Record{Identity: "a", AgentRuntimeID: "rt", SessionID: "s", Generation: 1, CheckpointVersion: 0}
	want := shown
	want.CheckpointVersion = 2
	read := c.ResolveMany{Identities: []c.Identity{"a"}}
	got := OK(map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &shown}})
	allowed := []Branch{{Outcome: OK(map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &want}})}}
	late := c.UpsertContinuityRecord{Record: shown, Fence: 3}
	save := c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: "a", SessionID: "s", Generation: 1, CheckpointVersion: 2, FencingToken: 5}}
	writers := []spec.Op{late, save}
	refuses := func(spec.Op) []Branch {
		return []Branch{{Outcome: Fail(c.ErrStaleFencingToken), Rule: "continuity.upsert_continuity_record.fence_not_lower"}}
	}
	accepts := func(spec.Op) []Branch { return []Branch{{Outcome: OK(nil)}} }
	readRules := []string{"continuity.resolve_many.ready_or_uninitialized", "continuity.resolve_many.one_read_per_identity"}
	for _, tc := range []struct {
		name  string
		again func(spec.Op) []Branch
		rules []string
	}{
		{"refused where the read came", refuses, append(slices.Clone(readRules), "continuity.upsert_continuity_record.fence_not_lower")},
		{"accepted there", accepts, append(slices.Clone(readRules), "continuity.upsert_continuity_record.checkpoint_version_kept")},
	} {
		b := BlameOf(contract, read, got, allowed, writers, tc.again)
		if !slices.Equal(b.Rules, tc.rules) || !strings.Contains(b.Why, "upsert_continuity_record") {
			t.Errorf("%s: blamed %v (%s), want %v", tc.name, b.Rules, b.Why, tc.rules)
		}
	}
	wide := BlameOf(contract, read, got, allowed, writers, nil)
	if !slices.Contains(wide.Rules, "continuity.save_session_snapshot.saves_and_advances") {
		t.Errorf("with no model to ask, the save's rules that name checkpoint_version are suspects too: %v", wide.Rules)
	}
}

// A read after a crash inside a write that touches it may show the write
// half applied: the blame adds, of the write's rules naming the field that
// differs, the one making its writes one transaction (a save's
// saves_and_advances, not its version or order checks); a write none of
// whose rules names the field, or an answer the blame already explains
// by that rule, leaves it as it was.
func TestAHalfAppliedWriteIsBlamedByItsTransactionRule(t *testing.T) {
	contract := Continuity{}.Contract()
	rec := c.Record{Identity: "a", AgentRuntimeID: "rt", SessionID: "s", Generation: 1, CheckpointVersion: 3}
	want := rec
	want.CheckpointVersion = 4
	read := c.ResolveMany{Identities: []c.Identity{"a"}}
	got := OK(map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &rec}})
	allowed := []Branch{{Outcome: OK(map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &want}})}}
	save := c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: "a", SessionID: "s", Generation: 1, CheckpointVersion: 4, FencingToken: 1}}
	b := BlameOf(contract, read, got, allowed, nil, nil)
	half := HalfApplied(contract, b, save, got, allowed)
	if added := half.Rules[len(b.Rules):]; !slices.Equal(added, []string{"continuity.save_session_snapshot.saves_and_advances"}) || !strings.Contains(half.Why, "half applied") {
		t.Errorf("added %v (%s), want the save's saves_and_advances alone", added, half.Why)
	}
	if !slices.Equal(half.Rules[:len(b.Rules)], b.Rules) {
		t.Errorf("the read's own rules changed: %v, was %v", half.Rules, b.Rules)
	}
	// A snapshot's bytes are named by no rule of a delete by revision.
	del := c.DeleteSessionSnapshotIfCurrentRevision{SessionID: "s", ExpectedRevision: "r"}
	if same := HalfApplied(contract, b, del, got, allowed); !slices.Equal(same.Rules, b.Rules) || same.Why != b.Why {
		t.Errorf("a write whose rules name no differing field widened the blame: %v (%s)", same.Rules, same.Why)
	}
	if again := HalfApplied(contract, half, save, got, allowed); !slices.Equal(again.Rules, half.Rules) {
		t.Errorf("a rule already blamed was added twice: %v", again.Rules)
	}
}
