package spec_test

import (
	"testing"

	"github.com/storecheck/storecheck/spec"
)

type claimish struct {
	ClaimID  string   `json:"claim_id"`
	BatchIDs []string `json:"batch_ids"`
	Next     *claimish
	Count    int
}

type refOp struct {
	Claim claimish
	Many  map[string]string
}

func (refOp) Name() string { return "ref_op" }
func (refOp) Result() any  { return nil }

func TestResolveReplacesEveryReferenceAndLeavesTheOriginal(t *testing.T) {
	answers := spec.Answers{
		"c0.1": map[string]any{"claim_id": "k-9", "batches": []any{map[string]any{"batch_id": "b-1"}}},
	}
	op := refOp{
		Claim: claimish{
			ClaimID:  spec.Ref("c0.1", "claim_id"),
			BatchIDs: []string{spec.Ref("c0.1", "batches.0.batch_id"), "plain", spec.Ref("c0.1", "batches.3.batch_id")},
			Next:     &claimish{ClaimID: spec.Ref("c7.0", "claim_id")},
			Count:    3,
		},
		Many: map[string]string{"a": spec.Ref("c0.1", "claim_id")},
	}
	got := answers.Resolve(op).(refOp)
	if got.Claim.ClaimID != "k-9" || got.Claim.BatchIDs[0] != "b-1" || got.Claim.BatchIDs[1] != "plain" || got.Many["a"] != "k-9" {
		t.Fatalf("resolved %+v", got)
	}
	if want := spec.Unresolved("c0.1", "batches.3.batch_id"); got.Claim.BatchIDs[2] != want {
		t.Errorf("a path the answer lacks: %q, want %q", got.Claim.BatchIDs[2], want)
	}
	if want := spec.Unresolved("c7.0", "claim_id"); got.Claim.Next.ClaimID != want {
		t.Errorf("an answer never seen: %q, want %q", got.Claim.Next.ClaimID, want)
	}
	if !spec.IsRef(op.Claim.ClaimID) || !spec.IsRef(op.Claim.BatchIDs[0]) || !spec.IsRef(op.Claim.Next.ClaimID) || !spec.IsRef(op.Many["a"]) {
		t.Errorf("Resolve changed the operation it was given: %+v", op)
	}
	plain := refOp{Claim: claimish{ClaimID: "x"}}
	if r := answers.Resolve(plain).(refOp); r.Claim.ClaimID != "x" {
		t.Errorf("an operation without references: %+v", r)
	}
}
