package model

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The models keep the count bounds of the rule tables as the specs check
// them, one below, at and one above each: a model that did not cap a read
// would let a backend that does not cap it through every check the model
// judges, though the workloads never reach 500 rows.
func TestClientModelKeepsTheCountBounds(t *testing.T) {
	m := Client{}
	const now = int64(1_767_225_600_000)
	at := time.UnixMilli(now).UTC()
	step := func(s State, op spec.Op) State {
		t.Helper()
		next, out := Expect(m, s, op, now)
		if out.Kind != "" {
			t.Fatalf("%s: %s", op.Name(), out)
		}
		return next
	}
	count := func(s State, op spec.Op) int {
		t.Helper()
		_, out := Expect(m, s, op, now)
		switch r := out.Result.(type) {
		case []cli.Intent:
			return len(r)
		case []cli.Task:
			return len(r)
		}
		t.Fatalf("%s answered %s", op.Name(), out)
		return 0
	}
	check := func(bound string, s State, op spec.Op, want int) {
		t.Helper()
		if got := count(s, op); got != want {
			t.Errorf("%s: %s %+v answers %d rows, want %d", bound, op.Name(), op, got, want)
		}
	}

	intents, tasks := m.Init(), m.Init()
	for n := 1; n <= 501; n++ {
		intents = step(intents, cli.EnqueueIntent{OpID: fmt.Sprintf("op-%04d", n), Envelope: spec.RawJSON(`{}`)})
		tasks = step(tasks, cli.OpenTask{Causality: cli.Causality{Task: fmt.Sprintf("t-%04d", n)}, Kind: cli.KindRoot})
		if n >= 99 && n <= 101 {
			check("client.due_intents.limit#default", intents, cli.DueIntents{Now: at}, min(n, 100))
			check("client.flush_order.now_and_batch#batch", intents, cli.FlushOrder{}, min(n, 100))
			check("client.open_tasks.limit#default", tasks, cli.OpenTasks{}, min(n, 100))
		}
	}
	for _, limit := range []uint32{499, 500, 501, math.MaxUint32} {
		want := int(min(limit, 500))
		check("client.due_intents.limit#cap", intents, cli.DueIntents{Now: at, Limit: limit}, want)
		check("client.open_tasks.limit#cap", tasks, cli.OpenTasks{Limit: limit}, want)
	}

	// events_since: exact to 100, and a prefix of at least 100 above it.
	events := m.Init()
	for i := range 102 {
		events = step(events, cli.AppendEvent{Type: "bulk", Data: spec.RawJSON(fmt.Sprint(i))})
	}
	_, out := Expect(m, events, cli.EventsSince{Limit: 102}, now)
	all := out.Result.([]cli.Event)
	if len(all) != 102 {
		t.Fatalf("events_since limit 102 of 102: the model guesses %d", len(all))
	}
	for _, tc := range []struct {
		limit   uint32
		allowed []int
	}{{99, []int{99}}, {100, []int{100}}, {101, []int{100, 101}}} {
		for _, n := range []int{98, 99, 100, 101, 102} {
			next, _ := Judge(m, events, cli.EventsSince{Limit: tc.limit}, now, OK(all[:n]))
			if ok := next != nil; ok != slices.Contains(tc.allowed, n) {
				t.Errorf("client.events_since.limit#exact: limit %d answered with %d events: allowed %v, want %v", tc.limit, n, ok, !ok)
			}
		}
	}
}

// The runtime model claims at most max_batches, and none for 0.
func TestRuntimeModelKeepsMaxBatches(t *testing.T) {
	m := Runtime{}
	const now = int64(1_767_225_600_000)
	s, out := Expect(m, m.Init(), r.TryClaimSessionExecutionLease{SessionID: "s", OwnerID: "w", TTLMs: 60_000}, now)
	lease := out.Result.(*r.SessionExecutionLease)
	for range 3 {
		s, _ = Expect(m, s, r.EnqueueQueuedWork{Draft: r.QueuedWorkBatchDraft{SessionID: "s", DeliveryPolicy: r.DeliverNextTurn,
			SlotPolicy: r.SlotMergeable, MergeKey: "k", AvailableAtMs: now}}, now)
	}
	for _, tc := range []struct{ max, want int }{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 3}} {
		_, out := Expect(m, s, r.ClaimReadyQueuedWork{SessionID: "s", Lease: lease.Fence(), OwnerID: "w", Boundary: r.BoundaryTurn,
			TTLMs: 1000, MaxBatches: tc.max}, now)
		c := out.Result.(*r.QueuedWorkClaim)
		got := 0
		if c != nil {
			got = len(c.Batches)
		}
		if got != tc.want {
			t.Errorf("runtime.claim_ready_queued_work.prefix#max_batches: max_batches %d of 3 claimable claims %d, want %d", tc.max, got, tc.want)
		}
	}
}
