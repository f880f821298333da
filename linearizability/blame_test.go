package linearizability

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/linearizability/model"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// A check-then-write race (bug continuity_upsert_check_outside_tx): an
// upsert under fence 3 overlaps one under fence 5 and lands after it, and a
// read then shows the fence-3 record. The order that places both upserts
// puts fence 3 first, so the read is what no order places; its blame is
// the read's own rules and the one rule the stale write broke
// (fence_not_lower: the contract refuses it where the read came), not
// every rule of every write that names the fields that differ.
func TestAReadOfALateWriteBlamesTheRuleTheWriteBroke(t *testing.T) {
	late := c.Record{Identity: "a", AgentRuntimeID: "rt-late", SessionID: "s-late", Generation: 1, CheckpointVersion: 0}
	newer := c.Record{Identity: "a", AgentRuntimeID: "rt-new", SessionID: "s-new", Generation: 1, CheckpointVersion: 0}
	read := func(r c.Record) model.Outcome {
		return model.OK(map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &r}})
	}
	h := History{Store: c.StoreName, Entries: []Entry{
		{Client: 0, Op: c.UpsertContinuityRecord{Record: late, Fence: 3}, Call: 0, Return: 10, Outcome: model.OK(nil)},
		{Client: 1, Op: c.UpsertContinuityRecord{Record: newer, Fence: 5}, Call: 1, Return: 2, Outcome: model.OK(nil)},
		{Client: 1, Op: c.ResolveMany{Identities: []c.Identity{"a"}}, Call: 11, Return: 12, Outcome: read(late)},
	}}
	res, err := Check(model.Continuity{}, h, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Illegal || len(res.Stuck) == 0 {
		t.Fatalf("verdict %v, stuck %v: the history is illegal", res.Verdict, res.Stuck)
	}
	st := res.Stuck[0]
	want := []string{"continuity.resolve_many.ready_or_uninitialized", "continuity.resolve_many.one_read_per_identity",
		"continuity.upsert_continuity_record.fence_not_lower"}
	if st.Entry.Op.Name() != "resolve_many" || !slices.Equal(st.Rules, want) {
		t.Fatalf("stuck at %s, blamed %v (%s); want resolve_many blamed %v", st.Entry.Op.Name(), st.Rules, st.Why, want)
	}
	if !strings.Contains(st.Why, "refuses that write with stale_fencing_token") {
		t.Errorf("the why does not say the write is refused where the read came: %s", st.Why)
	}
}
