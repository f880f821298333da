package runtime

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

const ttl = uint64(1000)

func open(t testing.TB, path string, clock clockwork.Clock) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: path, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Owners on two handles of one file race for one session's lease; the store
// serializes them so that exactly one owner wins while the lease is live,
// and after it expires exactly one wins again with the next fencing token.
func TestTwoHandlesRaceForOneLease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	clock := clockwork.NewFakeClock()
	handles := []*Store{open(t, path, clock), open(t, path, clock)}
	ctx := context.Background()
	race := func() []*r.SessionExecutionLease {
		var mu sync.Mutex
		var won []*r.SessionExecutionLease
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := handles[i%2].TryClaimSessionExecutionLease(ctx, "s", "owner-"+string(rune('a'+i)), ttl)
				if err != nil {
					t.Error(err)
					return
				}
				if l != nil {
					mu.Lock()
					won = append(won, l)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return won
	}
	first := race()
	if len(first) != 1 || first[0].FencingToken != 1 {
		t.Fatalf("first race: %d winners %+v, want one with fencing token 1", len(first), first)
	}
	clock.Advance(time.Duration(ttl) * time.Millisecond)
	second := race()
	if len(second) != 1 || second[0].FencingToken != 2 {
		t.Fatalf("second race: %d winners %+v, want one with fencing token 2", len(second), second)
	}
}

// Claimers on two handles race for queued batches; no batch is ever in two
// live claims.
func TestTwoHandlesNeverShareABatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claims.db")
	clock := clockwork.NewFakeClock()
	handles := []*Store{open(t, path, clock), open(t, path, clock)}
	ctx := context.Background()
	l, err := handles[0].TryClaimSessionExecutionLease(ctx, "s", "runtime", 60_000)
	if err != nil || l == nil {
		t.Fatal(l, err)
	}
	const batches = 24
	for i := range batches {
		// A merge key of its own makes every claim take one batch.
		d := r.QueuedWorkBatchDraft{SessionID: "s", DeliveryPolicy: r.DeliverNextTurn, SlotPolicy: r.SlotMergeable,
			MergeKey: string(rune('a' + i)), Payloads: []spec.RawJSON{spec.RawJSON(`1`)}}
		if _, err := handles[i%2].EnqueueQueuedWork(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	owner := map[string]string{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := handles[w%2].ClaimReadyQueuedWork(ctx, "s", l.Fence(), "worker", r.BoundaryTurn, ttl, 2)
				if err != nil {
					t.Error(err)
					return
				}
				if c == nil {
					return
				}
				mu.Lock()
				for _, b := range c.Batches {
					if prev, ok := owner[b.BatchID]; ok {
						t.Errorf("batch %s in claims %s and %s", b.BatchID, prev, c.ClaimID)
					}
					owner[b.BatchID] = c.ClaimID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(owner) != batches {
		t.Fatalf("%d batches claimed, want %d", len(owner), batches)
	}
}

// now + ttl saturates rather than wrapping into the past.
func TestTTLSaturates(t *testing.T) {
	clock := clockwork.NewFakeClock()
	s := open(t, "", clock)
	l, err := s.TryClaimSessionExecutionLease(context.Background(), "s", "o", ^uint64(0))
	if err != nil || l == nil {
		t.Fatal(l, err)
	}
	if l.ExpiresAtMs <= l.ClaimedAtMs {
		t.Fatalf("a huge ttl wrapped around: claimed %d, expires %d", l.ClaimedAtMs, l.ExpiresAtMs)
	}
}

func benchStore(b *testing.B, mode string, clock clockwork.Clock) *Store {
	path := ""
	if mode == "file" {
		path = filepath.Join(b.TempDir(), "bench.db")
	}
	return open(b, path, clock)
}

// Benchmarks of the commit, claim and lease operations, in a file and in
// memory, beside BenchmarkContinuity.
func BenchmarkRuntime(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"memory", "file"} {
		b.Run(mode+"/commit_runtime_state", func(b *testing.B) {
			s := benchStore(b, mode, clockwork.NewFakeClock())
			l, err := s.TryClaimSessionExecutionLease(ctx, "s", "o", 3_600_000)
			if err != nil || l == nil {
				b.Fatal(l, err)
			}
			fence := l.Fence()
			checkpoint := make([]byte, 4096)
			i := 0
			for b.Loop() {
				i++
				id, parent := "n-"+strconv.Itoa(i), "n-"+strconv.Itoa(i-1)
				checkpoint[0], checkpoint[1] = byte(i), byte(i>>8)
				cm := r.RuntimeCommit{SessionID: "s", Lease: &fence, Checkpoint: checkpoint,
					Graph:       r.GraphDelta{Kind: r.GraphAppend, Nodes: []r.Node{{NodeID: id, ParentID: parent, Data: spec.RawJSON(`{"text":"x"}`)}}, LeafNodeID: id},
					UsageDeltas: []r.UsageEntry{{Source: "agent", Model: "m", Usage: r.Usage{InputTokens: 10, OutputTokens: 5}}}}
				if _, err := s.CommitRuntimeState(ctx, cm); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The clock moves on each time, so every extension writes a new
		// expiry.
		b.Run(mode+"/try_claim_session_execution_lease", func(b *testing.B) {
			clock := clockwork.NewFakeClock()
			s := benchStore(b, mode, clock)
			for b.Loop() {
				clock.Advance(time.Millisecond)
				if l, err := s.TryClaimSessionExecutionLease(ctx, "s", "o", 60_000); err != nil || l == nil {
					b.Fatal(l, err)
				}
			}
		})
		b.Run(mode+"/renew_session_execution_lease", func(b *testing.B) {
			clock := clockwork.NewFakeClock()
			s := benchStore(b, mode, clock)
			l, err := s.TryClaimSessionExecutionLease(ctx, "s", "o", 60_000)
			if err != nil || l == nil {
				b.Fatal(l, err)
			}
			for b.Loop() {
				clock.Advance(time.Millisecond)
				if _, err := s.RenewSessionExecutionLease(ctx, l.Fence(), 60_000); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/claim_ready_queued_work", func(b *testing.B) {
			// Each claim takes the batch the previous one let expire.
			clock := clockwork.NewFakeClock()
			s := benchStore(b, mode, clock)
			l, err := s.TryClaimSessionExecutionLease(ctx, "s", "o", 3_600_000_000)
			if err != nil || l == nil {
				b.Fatal(l, err)
			}
			d := r.QueuedWorkBatchDraft{SessionID: "s", DeliveryPolicy: r.DeliverNextTurn, SlotPolicy: r.SlotMergeable,
				Payloads: []spec.RawJSON{spec.RawJSON(`{"text":"x"}`)}}
			if _, err := s.EnqueueQueuedWork(ctx, d); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				clock.Advance(time.Second)
				if c, err := s.ClaimReadyQueuedWork(ctx, "s", l.Fence(), "w", r.BoundaryTurn, 1000, 4); err != nil || c == nil {
					b.Fatal(c, err)
				}
			}
		})
		b.Run(mode+"/enqueue_queued_work", func(b *testing.B) {
			s := benchStore(b, mode, clockwork.NewFakeClock())
			d := r.QueuedWorkBatchDraft{SessionID: "s", DeliveryPolicy: r.DeliverNextTurn, SlotPolicy: r.SlotMergeable,
				Payloads: []spec.RawJSON{spec.RawJSON(`{"text":"x"}`)}}
			for b.Loop() {
				if _, err := s.EnqueueQueuedWork(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
