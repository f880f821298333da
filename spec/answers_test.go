package spec_test

import (
	"slices"
	"testing"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Every contract declares the kinds its operations refuse with against
// its own table: operations it has, kinds of its closed set, rules that
// govern the operation (or the whole store). Every kind but io (any
// operation's, when the store cannot work) and the client's
// schema_mismatch (opening's, no operation) is some operation's.
func TestRefusalsNameTheContractsRules(t *testing.T) {
	for _, c := range contracts {
		for _, err := range c.CheckRefusals() {
			t.Error(err)
		}
		used := map[spec.Kind]bool{}
		for _, rs := range c.Refusals {
			for _, r := range rs {
				used[r.Kind] = true
			}
		}
		for _, k := range c.Kinds {
			if !used[k] && k != spec.ErrIO && k != cli.ErrSchemaMismatch {
				t.Errorf("%s: no operation refuses with %s", c.Name, k)
			}
		}
		cells := c.Cells()
		for _, op := range c.Ops {
			n := 0
			for _, cell := range cells {
				if cell.Op == op.Name() {
					n++
				}
			}
			// Two answers of a result at most, one of them io at least.
			if n < 2 {
				t.Errorf("%s %s: %d cells", c.Name, op.Name(), n)
			}
			if !slices.ContainsFunc(cells, func(cell spec.Cell) bool { return cell.Key() == spec.CellKey(op.Name(), "io") }) {
				t.Errorf("%s %s: no io cell", c.Name, op.Name())
			}
		}
	}
}

// A result's answer is one its type names, whatever it holds.
func TestAnswerOfIsOneOfTheResultAnswers(t *testing.T) {
	snap := &c.Snapshot{}
	for _, tc := range []struct {
		op     spec.Op
		result any
		want   string
	}{
		{c.SaveSessionSnapshot{}, nil, "ok"},
		{c.MaxFencingToken{}, c.FencingToken(0), "ok"},
		{c.SessionSnapshotMatchesCurrent{}, true, "true"},
		{c.SessionSnapshotMatchesCurrent{}, false, "false"},
		{c.LoadSessionSnapshot{}, (*c.Snapshot)(nil), "null"},
		{c.LoadSessionSnapshot{}, nil, "null"},
		{c.LoadSessionSnapshot{}, snap, "non-null"},
		{c.ResolveMany{}, map[c.Identity]c.Resolution{}, "empty"},
		{c.ResolveMany{}, map[c.Identity]c.Resolution{"a": {}}, "non-empty"},
		{r.ListQueuedWork{}, []r.QueuedWorkBatch(nil), "empty"},
		{r.ListQueuedWork{}, []r.QueuedWorkBatch{{}}, "non-empty"},
		{r.LoadSessionMeta{}, spec.RawJSON(nil), "empty"},
		{r.LoadSessionMeta{}, spec.RawJSON(`{}`), "non-empty"},
		{r.Vacuum{}, r.VacuumReport{}, "ok"},
		{cli.GetOutHead{}, (*string)(nil), "null"},
	} {
		got := spec.AnswerOf(tc.op, tc.result, "")
		if got != tc.want || !slices.Contains(spec.ResultAnswers(tc.op), got) {
			t.Errorf("%s answered %#v: %q, want %q of %v", tc.op.Name(), tc.result, got, tc.want, spec.ResultAnswers(tc.op))
		}
	}
	if got := spec.AnswerOf(c.SaveSessionSnapshot{}, nil, c.ErrNotFound); got != "not_found" {
		t.Errorf("a refusal's answer is %q, want its kind", got)
	}
}
