package linearizability

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// tornHistory is a history of the Rust example (the seeds ported), judged
// illegal before load_session was judged statement by statement: client 1's
// load_session (call 2083) answered head 22 and ckpt-22 with a token ledger
// that already held the usage of commit 23 (call 2080, return 2089), as the
// seed's statements outside a transaction may (runtime.load_session.statements).
func tornHistory(t testing.TB) History {
	return gzipHistory(t, "testdata/torn/rust-runtime-lin-torn-load_session.history.json.gz", model.Runtime{}.Contract())
}

// tornBudget is the check time of the saved torn history: its search takes
// seconds on an idle machine and over a minute on one loaded by parallel
// test binaries, and a check out of time is no verdict, which this test
// would read as a failure of the model.
const tornBudget = 5 * time.Minute

// The torn read is legal for the seed's reading and illegal for a backend
// that declares atomic_reads; the report then names the read.
func TestATornLoadSessionIsLegalUnlessReadsAreAtomic(t *testing.T) {
	h := tornHistory(t)
	if h.Capabilities.AtomicReads {
		t.Fatal("the history declares atomic_reads")
	}
	res, err := Check(model.For(model.Runtime{}, h.Capabilities), h, tornBudget)
	if err != nil || res.Verdict != Linearizable {
		t.Fatalf("the seed's reading: verdict %s (%v), want %s\n%s", res.Verdict, err, Linearizable, res.Explain(model.Runtime{}.Contract()))
	}
	atomic := h.Capabilities
	atomic.AtomicReads = true
	res, err = Check(model.For(model.Runtime{}, atomic), h, tornBudget)
	if err != nil || res.Verdict != Illegal {
		t.Fatalf("atomic_reads: verdict %s (%v), want %s", res.Verdict, err, Illegal)
	}
	if text := res.Explain(model.Runtime{}.Contract()); !strings.Contains(text, "client 1's load_session") {
		t.Errorf("the report does not name client 1's load_session:\n%s", text)
	}
}

// tornCheck checks entries (a runtime history) under the seed's reading
// and under atomic_reads.
func tornCheck(t *testing.T, entries []Entry) (seed, atomic Verdict) {
	t.Helper()
	h := History{Store: "runtime", Entries: entries}
	for i, caps := range []spec.Capabilities{{}, {AtomicReads: true}} {
		res, err := Check(model.For(model.Runtime{}, caps), h, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			seed = res.Verdict
		} else {
			atomic = res.Verdict
		}
	}
	return seed, atomic
}

// twoCommits is a lease and two commits, the second of which (calls 10 to
// 20) overlaps a load_session; each commit adds usage of its own.
func twoCommits() []Entry {
	const now = 1000
	token := r.LeaseToken("s", "o", now, 1)
	fence := r.SessionExecutionLeaseFence{SessionID: "s", OwnerID: "o", LeaseToken: token, FencingToken: 1}
	commit := func(n int, call, ret int64) Entry {
		return Entry{Client: 0, NowMS: now, Call: call, Return: ret,
			Op: r.CommitRuntimeState{Commit: r.RuntimeCommit{SessionID: "s", Lease: &fence, Graph: r.GraphDelta{Kind: r.GraphUnchanged},
				Checkpoint: []byte(fmt.Sprint("c", n)), UsageDeltas: []r.UsageEntry{{Source: "a", Model: "m", Usage: r.Usage{InputTokens: uint64(n)}}}}},
			Outcome: model.OK(r.CommitResult{HeadRevision: uint64(n), CheckpointRef: fmt.Sprint("ref", n)})}
	}
	return []Entry{
		{Client: 0, NowMS: now, Call: 1, Return: 2, Op: r.TryClaimSessionExecutionLease{SessionID: "s", OwnerID: "o", TTLMs: 100_000},
			Outcome: model.OK(&r.SessionExecutionLease{SessionID: "s", OwnerID: "o", LeaseToken: token, FencingToken: 1, ClaimedAtMs: now, ExpiresAtMs: now + 100_000})},
		commit(1, 3, 4),
		commit(2, 10, 20),
	}
}

// sessionAt is load_session's answer with the head of commit head and the
// ledger of commits 1 to ledger.
func sessionAt(head, ledger int, checkpoint string) *r.SessionRead {
	return &r.SessionRead{SessionID: "s", HeadRevision: uint64(head), CheckpointRef: fmt.Sprint("ref", head), Checkpoint: []byte(checkpoint),
		TokenLedger: []r.UsageEntry{{Source: "a", Model: "m", Usage: r.Usage{InputTokens: uint64(ledger * (ledger + 1) / 2)}}}}
}

// A load_session whose head is commit 1's and whose ledger already holds
// commit 2's (overlapping it) is the seed's statements seeing two moments:
// legal, unless the backend declared atomic reads. The parts are in the
// seed's order: a ledger older than the head is never legal, nor a head
// read before commit 1, nor a checkpoint the head's ref never named.
func TestLoadSessionStatementsSeeSuccessiveMoments(t *testing.T) {
	for _, c := range []struct {
		name         string
		read         *r.SessionRead
		seed, atomic Verdict
	}{
		{"one moment, before commit 2", sessionAt(1, 1, "c1"), Linearizable, Linearizable},
		{"one moment, after commit 2", sessionAt(2, 2, "c2"), Linearizable, Linearizable},
		{"head before commit 2, ledger after", sessionAt(1, 2, "c1"), Linearizable, Illegal},
		{"ledger before commit 2, head after", sessionAt(2, 1, "c2"), Illegal, Illegal},
		{"head of commit 2 with commit 1's checkpoint", sessionAt(2, 2, "c1"), Illegal, Illegal},
	} {
		entries := append(twoCommits(), Entry{Client: 1, Op: r.LoadSession{}, NowMS: 1000, Call: 11, Return: 21, Outcome: model.OK(c.read)})
		if seed, atomic := tornCheck(t, entries); seed != c.seed || atomic != c.atomic {
			t.Errorf("%s: %s under the seed's reading, %s under atomic_reads; want %s and %s", c.name, seed, atomic, c.seed, c.atomic)
		}
	}
	// The head's ref read before commit 2, its checkpoint after a
	// collection took it (get_checkpoint_conn's None), and so the ledger
	// after commit 2: legal only when the collection overlaps the read.
	for _, c := range []struct {
		name         string
		gc           [2]int64
		seed, atomic Verdict
	}{
		{"the collection overlapping", [2]int64{12, 18}, Linearizable, Illegal},
		{"the collection after", [2]int64{30, 40}, Illegal, Illegal},
	} {
		entries := append(twoCommits(),
			Entry{Client: 2, Op: r.GcUnreachable{}, NowMS: 1000, Call: c.gc[0], Return: c.gc[1], Outcome: model.OK(r.GcReport{RemovedCheckpointCount: 1})},
			Entry{Client: 1, Op: r.LoadSession{}, NowMS: 1000, Call: 11, Return: 21, Outcome: model.OK(sessionAt(1, 2, ""))})
		if seed, atomic := tornCheck(t, entries); seed != c.seed || atomic != c.atomic {
			t.Errorf("no checkpoint, %s: %s under the seed's reading, %s under atomic_reads; want %s and %s", c.name, seed, atomic, c.seed, c.atomic)
		}
	}
}

// A batch listed with no items is legal when a cancel that removed it
// overlaps the list (the seed reads each row's items after the rows), and
// only then; a backend that declared atomic reads always answers items.
func TestListedBatchWithoutItemsWasGone(t *testing.T) {
	draft := r.QueuedWorkBatchDraft{SessionID: "s", DeliveryPolicy: r.DeliverNextTurn, SlotPolicy: r.SlotExclusive, Payloads: []spec.RawJSON{spec.RawJSON(`1`)}}
	batch := r.QueuedWorkBatch{BatchID: "b", SessionID: "s", DeliveryPolicy: r.DeliverNextTurn, SlotPolicy: r.SlotExclusive, AvailableAtMs: 0,
		EnqueuedAtMs: 1000, Items: []r.QueuedWorkItem{{ItemID: r.ItemID("b", 0), Payload: spec.RawJSON(`1`)}}}
	itemless := batch
	itemless.Items = nil
	for _, c := range []struct {
		name         string
		cancel       [2]int64
		listed       r.QueuedWorkBatch
		seed, atomic Verdict
	}{
		{"with its items", [2]int64{10, 20}, batch, Linearizable, Linearizable},
		{"without items, the cancel overlapping", [2]int64{10, 20}, itemless, Linearizable, Illegal},
		{"without items, the cancel after", [2]int64{30, 40}, itemless, Illegal, Illegal},
	} {
		entries := []Entry{
			{Client: 0, NowMS: 1000, Call: 1, Return: 2, Op: r.EnqueueQueuedWork{Draft: draft}, Outcome: model.OK(batch)},
			{Client: 0, NowMS: 1000, Call: c.cancel[0], Return: c.cancel[1], Op: r.CancelQueuedWorkBatch{SessionID: "s", BatchID: "b"}, Outcome: model.OK(&batch)},
			{Client: 1, NowMS: 1000, Call: 11, Return: 21, Op: r.ListQueuedWork{SessionID: "s"}, Outcome: model.OK([]r.QueuedWorkBatch{c.listed})},
		}
		if seed, atomic := tornCheck(t, entries); seed != c.seed || atomic != c.atomic {
			t.Errorf("%s: %s under the seed's reading, %s under atomic_reads; want %s and %s", c.name, seed, atomic, c.seed, c.atomic)
		}
	}
}

func BenchmarkCheckTornHistory(b *testing.B) {
	h := tornHistory(b)
	for _, atomic := range []bool{false, true} {
		caps := h.Capabilities
		caps.AtomicReads = atomic
		b.Run(fmt.Sprint("atomic=", atomic), func(b *testing.B) {
			for b.Loop() {
				if _, err := Check(model.For(model.Runtime{}, caps), h, 10*time.Minute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
