package linearizability

// The workloads' big draws (Sizer): one kind of size each, picked by the
// draw's stream.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// bigValue is a value of spec.BigValue bytes, made once: a run's big
// snapshot or attachment, never all one byte (so a store that compresses
// or truncates shows it).
var bigValue = sync.OnceValue(func() []byte {
	return bytes.Repeat([]byte("storecheck big value 0123456789\n"), spec.BigValue/32)
})

// bigIdentities are n identities, the workload's own last: a store that
// drops the last partial chunk of a lookup drops them.
func (w ContinuityWorkload) bigIdentities(n int) []c.Identity {
	ids := make([]c.Identity, 0, n)
	real := max(w.Identities, 1)
	for i := range n - real {
		ids = append(ids, c.Identity(fmt.Sprint("agent-big-", i)))
	}
	for i := range real {
		ids = append(ids, c.Identity(fmt.Sprint("agent-", i)))
	}
	return ids
}

// Big is a resolve_many past a chunk of 50 identities, one past SQLite's
// bound parameters, or a snapshot of several MiB saved and loaded back.
func (w *continuityWorkload) Big(rnd *rand.Rand, _ int64, _ bool) (int, int) {
	cl := w.client(0)
	// The cheap draw most often: the 32,767 identities cost a seed's
	// worth of CPU.
	switch p := rnd.IntN(10); {
	case p < 5:
		cl.plan = append(cl.plan, c.ResolveMany{Identities: w.bigIdentities(spec.LookupChunk + 1 + rnd.IntN(10))})
	case p < 7:
		cl.plan = append(cl.plan, c.ResolveMany{Identities: w.bigIdentities(spec.MaxBoundParams + 1)})
	default:
		// An identity of no record, whose snapshot no record check refuses.
		save := c.SnapshotWrite{Identity: "agent-big-snapshot", SessionID: "session-big", Generation: 0, CheckpointVersion: 1, Data: bigValue()}
		cl.plan = append(cl.plan, c.SaveSessionSnapshot{Write: save}, c.LoadSessionSnapshot{SessionID: save.SessionID},
			c.SessionSnapshotMatchesCurrent{Candidate: save})
	}
	return 0, len(cl.plan)
}

// Big is work queued behind spec.ScanLimit batches a claim cannot take
// (not yet available) and claimed under the producer's own lease, or an
// attachment of several MiB staged and loaded back.
func (w *runtimeWorkload) Big(rnd *rand.Rand, now int64, _ bool) (int, int) {
	// A sixth of the draws declined: 104 operations over a queue of 101
	// batches cost half a run.
	switch rnd.IntN(6) {
	case 0:
		return 0, 0
	case 1, 2:
		cl := w.client(1, now)
		w.observe(cl, now)
		cl.plan = append(cl.plan, r.StageAttachment{SessionID: "session-1", AttachmentID: "att-big", Data: bigValue()},
			r.LoadAttachment{AttachmentID: "att-big"})
		return 1, len(cl.plan)
	}
	// A session of the draw's own, so that no ready batch the run queued
	// before comes first.
	cl := w.client(producer, now)
	// A client's first operation at a new now plans the epoch's claims
	// first: planned here, they are counted in the draw, not left out of
	// its end.
	w.observe(cl, now)
	later := now + int64(240*time.Hour/time.Millisecond)
	for i := range spec.ScanLimit {
		cl.plan = append(cl.plan, r.EnqueueQueuedWork{Draft: r.QueuedWorkBatchDraft{SessionID: bigSession, DeliveryPolicy: r.DeliverNextTurn,
			SlotPolicy: r.SlotExclusive, AvailableAtMs: later, Payloads: []spec.RawJSON{spec.RawJSON(fmt.Sprintf(`{"later":%d}`, i))}}})
	}
	cl.plan = append(cl.plan, readyWork(cl, bigSession), r.TryClaimSessionExecutionLease{SessionID: bigSession, OwnerID: cl.owner, TTLMs: 6_000},
		claimBig)
	return producer, len(cl.plan)
}

// bigSession is the runtime big draw's session: nobody else leases it.
const bigSession = "session-big"

// claimBig claims the big session's work under the lease the step before
// took: its first, fence 1, its token the one that step was answered.
const claimBig planned = "claim the big session's work"

func (w *runtimeWorkload) buildBig(cl *runtimeClient) spec.Op {
	lease := r.SessionExecutionLeaseFence{SessionID: bigSession, OwnerID: cl.owner,
		LeaseToken: spec.Ref(spec.OpID(cl.n, cl.step-1), "lease_token"), FencingToken: 1}
	return r.ClaimReadyQueuedWork{SessionID: bigSession, Lease: lease, OwnerID: cl.owner, Boundary: r.BoundaryTurn, TTLMs: 6_000, MaxBatches: 1}
}

// Big is an intent bumped past what 8 bits count and a task opened past
// what 16 bits count, then read back; or more due intents and open tasks
// than a read's limit of 0 (cli.DefaultLimit) or a flush pass
// (cli.FlushBatchSize) takes, or than its cap (cli.MaxLimit), then read
// with those limits. The seed has no operation that writes many rows, so
// the rows are one operation each, in a burst; the checker copies a table
// at each, so n rows cost about n squared: the 501 rows (a thousand
// operations, where a run issues 200) in half the draws, the 101 in a
// quarter; a forgetful run, where the checker also keeps every state since
// a failed sync (101 rows cost a second there), makes the intent's draw in
// half and none in the other half.
func (w *clientWorkload) Big(rnd *rand.Rand, nowMS int64, forgetful bool) (int, int) {
	m := w.memory(0)
	p := rnd.IntN(8)
	switch {
	case forgetful && p >= 4:
		return 0, 0
	case p < 2 || forgetful:
		id := "op-big"
		m.then = append(m.then, cli.EnqueueIntent{OpID: id, Envelope: []byte(`{"causality":{"task":"task-big","attempt":0},"body":0}`)})
		for range spec.Counter8 + 1 {
			m.then = append(m.then, cli.BumpIntent{OpID: id, NextAttemptAt: Epoch, LastError: "refused"})
		}
		// A task's attempt is the caller's: one call passes 16 bits.
		task := cli.Causality{Task: "task-big", Attempt: uint32(spec.Counter16 + 1 + rnd.IntN(1000))}
		m.then = append(m.then, cli.GetIntent{OpID: id}, cli.OpenTask{Causality: task, Kind: cli.KindRoot}, cli.GetTask{TaskID: task.Task})
	case p < 6:
		w.rows(m, cli.MaxLimit+1, nowMS)
	default:
		w.rows(m, cli.DefaultLimit+1, nowMS)
	}
	return 0, len(m.then)
}

// rows plans n due intents and n open tasks, then the reads with a limit
// of 0 and one past the cap, and a flush pass.
func (w *clientWorkload) rows(m *clientMemory, n int, nowMS int64) {
	for i := range n {
		m.then = append(m.then, cli.EnqueueIntent{OpID: fmt.Sprint(bulk, "op-", i), Envelope: spec.RawJSON(fmt.Sprintf(`{"bulk":%d}`, i))},
			cli.OpenTask{Causality: cli.Causality{Task: fmt.Sprint(bulk, "task-", i)}, Kind: cli.KindRoot})
	}
	// Due as they are enqueued (at the store's now); the scans look an
	// hour on, past every one of them.
	scan := time.UnixMilli(nowMS).Add(time.Hour).UTC()
	m.then = append(m.then, cli.FlushOrder{}, cli.DueIntents{Now: scan, Limit: 0}, cli.DueIntents{Now: scan, Limit: cli.MaxLimit + 1},
		cli.OpenTasks{Limit: 0}, cli.OpenTasks{Limit: cli.MaxLimit + 1})
}

// bulk begins the ids of a big draw's many rows: Observe reads none of
// them back (they would cost a run's worth of reads).
const bulk = "bulk-"
