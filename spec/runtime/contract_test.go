package runtime

import (
	"context"
	"reflect"
	"regexp"
	"testing"

	"github.com/storecheck/storecheck/spec"
)

func TestSelectClaimPrefix(t *testing.T) {
	b := func(d DeliveryPolicy, s SlotPolicy, key string) QueuedWorkBatch {
		return QueuedWorkBatch{DeliveryPolicy: d, SlotPolicy: s, MergeKey: key}
	}
	next, intr := DeliverNextTurn, DeliverInterrupt
	m, x := SlotMergeable, SlotExclusive
	for _, tc := range []struct {
		name     string
		batches  []QueuedWorkBatch
		boundary QueuedWorkClaimBoundary
		max      int
		want     int
	}{
		{"nothing claimable", nil, BoundaryTurn, 5, 0},
		{"max 0", []QueuedWorkBatch{b(next, m, "k")}, BoundaryTurn, 0, 0},
		{"mergeable run of one key", []QueuedWorkBatch{b(next, m, "k"), b(next, m, "k"), b(next, m, "k")}, BoundaryTurn, 5, 3},
		{"up to max", []QueuedWorkBatch{b(next, m, "k"), b(next, m, "k"), b(next, m, "k")}, BoundaryTurn, 2, 2},
		{"another key ends it", []QueuedWorkBatch{b(next, m, "k"), b(next, m, "j"), b(next, m, "k")}, BoundaryTurn, 5, 1},
		{"the empty key is a key", []QueuedWorkBatch{b(next, m, ""), b(next, m, "")}, BoundaryTurn, 5, 2},
		{"exclusive first is alone", []QueuedWorkBatch{b(next, x, "k"), b(next, m, "k")}, BoundaryTurn, 5, 1},
		{"exclusive later ends it", []QueuedWorkBatch{b(next, m, "k"), b(next, x, "k")}, BoundaryTurn, 5, 1},
		{"next_turn first at a step", []QueuedWorkBatch{b(next, m, "k"), b(intr, m, "k")}, BoundaryStep, 5, 0},
		{"next_turn later at a step", []QueuedWorkBatch{b(intr, m, "k"), b(next, m, "k"), b(intr, m, "k")}, BoundaryStep, 5, 1},
		{"interrupt at a turn", []QueuedWorkBatch{b(intr, m, "k"), b(next, m, "k")}, BoundaryTurn, 5, 2},
	} {
		if got := SelectClaimPrefix(tc.batches, tc.boundary, tc.max); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// The other readings of the merge key.
	for _, tc := range []struct {
		name    string
		reading MergeReading
		batches []QueuedWorkBatch
		want    int
	}{
		{"key ignored: another key joins", MergeKeyIgnored, []QueuedWorkBatch{b(next, m, "k"), b(next, m, "j"), b(next, m, "")}, 3},
		{"key ignored: an exclusive batch still ends it", MergeKeyIgnored, []QueuedWorkBatch{b(next, m, "k"), b(next, x, "k")}, 1},
		{"empty key alone: first", MergeEmptyKeyAlone, []QueuedWorkBatch{b(next, m, ""), b(next, m, "")}, 1},
		{"empty key alone: later", MergeEmptyKeyAlone, []QueuedWorkBatch{b(next, m, "k"), b(next, m, "")}, 1},
		{"empty key alone: a key merges", MergeEmptyKeyAlone, []QueuedWorkBatch{b(next, m, "k"), b(next, m, "k")}, 2},
	} {
		if got := SelectClaimPrefixAs(tc.reading, tc.batches, BoundaryTurn, 5); got != tc.want {
			t.Errorf("%s (%s): %d, want %d", tc.name, tc.reading, got, tc.want)
		}
	}
}

func TestOpNamesAreDistinctSnakeCase(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for _, op := range Ops {
		n := op.Name()
		if !snake.MatchString(n) || seen[n] {
			t.Errorf("operation name %q is not a distinct snake_case name", n)
		}
		seen[n] = true
	}
}

// Apply answers every operation with a value of the type its Result names.
func TestApplyAnswersTheDeclaredResultType(t *testing.T) {
	for _, op := range Ops {
		v, err := Apply(context.Background(), typed{}, op)
		if err != nil {
			t.Fatalf("%s: %v", op.Name(), err)
		}
		want := op.(interface{ Result() any }).Result()
		if reflect.TypeOf(v) != reflect.TypeOf(want) {
			t.Errorf("%s: Apply answered %T, Result declares %T", op.Name(), v, want)
		}
	}
}

// typed is a Store that answers every operation with its result type's zero
// value.
type typed struct{}

func (typed) DurabilityTier(context.Context) (DurabilityTier, error)       { return Durable, nil }
func (typed) LoadSession(context.Context, ReadScope) (*SessionRead, error) { return nil, nil }
func (typed) LoadNode(context.Context, string) (*Node, error)              { return nil, nil }
func (typed) CommitRuntimeState(context.Context, RuntimeCommit) (CommitResult, error) {
	return CommitResult{}, nil
}
func (typed) TryClaimSessionExecutionLease(context.Context, string, string, uint64) (*SessionExecutionLease, error) {
	return nil, nil
}
func (typed) RenewSessionExecutionLease(context.Context, SessionExecutionLeaseFence, uint64) (SessionExecutionLease, error) {
	return SessionExecutionLease{}, nil
}
func (typed) ReleaseSessionExecutionLease(context.Context, SessionExecutionLeaseCompletion) error {
	return nil
}
func (typed) EnqueueQueuedWork(context.Context, QueuedWorkBatchDraft) (QueuedWorkBatch, error) {
	return QueuedWorkBatch{}, nil
}
func (typed) ClaimReadyQueuedWork(context.Context, string, SessionExecutionLeaseFence, string, QueuedWorkClaimBoundary, uint64, int) (*QueuedWorkClaim, error) {
	return nil, nil
}
func (typed) RenewQueuedWorkClaim(context.Context, QueuedWorkClaim, uint64) (QueuedWorkClaim, error) {
	return QueuedWorkClaim{}, nil
}
func (typed) AbandonQueuedWorkClaim(context.Context, QueuedWorkClaim) error { return nil }
func (typed) CancelQueuedWorkBatch(context.Context, string, string) (*QueuedWorkBatch, error) {
	return nil, nil
}
func (typed) ListQueuedWork(context.Context, string) ([]QueuedWorkBatch, error) { return nil, nil }
func (typed) ListPendingQueuedWork(context.Context, string) ([]QueuedWorkBatch, error) {
	return nil, nil
}
func (typed) SaveSessionMeta(context.Context, spec.RawJSON) error           { return nil }
func (typed) LoadSessionMeta(context.Context) (spec.RawJSON, error)         { return nil, nil }
func (typed) TombstoneNodes(context.Context, []string) error                { return nil }
func (typed) Vacuum(context.Context) (VacuumReport, error)                  { return VacuumReport{}, nil }
func (typed) GcUnreachable(context.Context) (GcReport, error)               { return GcReport{}, nil }
func (typed) StageAttachment(context.Context, string, string, []byte) error { return nil }
func (typed) LoadAttachment(context.Context, string) (*Attachment, error)   { return nil, nil }
func (typed) Close() error                                                  { return nil }
