package client

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: path, Clock: clockwork.NewFakeClockAt(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// SQLite integers are signed 64-bit: a generation above that range is
// refused with io, and nothing is written.
func TestGenerationBeyondInt64IsRefused(t *testing.T) {
	s := open(t, "")
	ctx := context.Background()
	v := cli.VersionedSession{Generation: math.MaxInt64 + 1, AgentState: cli.AgentReady, ResourceState: cli.ResourceOpen}
	if _, err := s.UpsertSession(ctx, "t", v); spec.KindOf(err) != cli.ErrIO {
		t.Fatalf("got %v, want io", err)
	}
	if r, _ := s.GetSession(ctx, "t"); r != nil {
		t.Fatalf("a refused upsert wrote %+v", r)
	}
	v.Generation = math.MaxInt64
	if ok, err := s.UpsertSession(ctx, "t", v); err != nil || !ok {
		t.Fatalf("the largest int64 generation: %v %v", ok, err)
	}
}

// Two handles on one file race to enqueue the same op ids and then to settle
// them: every op is new to exactly one handle, every accept acts (a bump
// that came first leaves the intent live), and once accepted no intent comes
// back.
func TestTwoHandlesSerializeTheOutbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	handles := []*Store{open(t, path), open(t, path)}
	ctx := context.Background()
	const n = 40
	added := make([][n]bool, 2)
	accepted := make([]bool, n)
	errs := make(chan error, 4*n)
	var wg sync.WaitGroup
	for h, s := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				ok, err := s.EnqueueIntent(ctx, fmt.Sprint("op-", i), spec.RawJSON(`{}`))
				if err != nil {
					errs <- err
				}
				added[h][i] = ok
			}
			for i := range n {
				var err error
				if h == 0 {
					accepted[i], err = s.AcceptIntent(ctx, fmt.Sprint("op-", i), spec.RawJSON(`{}`))
				} else {
					_, err = s.BumpIntent(ctx, fmt.Sprint("op-", i), epoch, "refused")
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range n {
		if added[0][i] == added[1][i] {
			t.Fatalf("op-%d: enqueue answered %v on both handles", i, added[0][i])
		}
		if !accepted[i] {
			t.Fatalf("op-%d: the accept did not act", i)
		}
		for _, s := range handles {
			if ok, err := s.BumpIntent(ctx, fmt.Sprint("op-", i), epoch, "late"); err != nil || ok {
				t.Fatalf("op-%d: a bump after the accept answered %v %v", i, ok, err)
			}
		}
	}
	if got, _ := handles[1].PendingIntentCount(ctx); got != 0 {
		t.Fatalf("pending %d, want 0", got)
	}
}

// Two handles race session tuples with rising seqs through the gate: the
// stored pair ends at the highest one presented, whichever handle wrote it.
func TestTwoHandlesKeepTheSessionGate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gate.db")
	handles := []*Store{open(t, path), open(t, path)}
	ctx := context.Background()
	var wg sync.WaitGroup
	for h, s := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				v := cli.VersionedSession{Generation: 1, Seq: uint64(2*i + h), AgentState: cli.AgentReady, ResourceState: cli.ResourceOpen}
				if _, err := s.UpsertSession(ctx, "t", v); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range handles {
		if r, err := s.GetSession(ctx, "t"); err != nil || r == nil || r.Seq != 99 {
			t.Fatalf("stored %+v %v, want seq 99", r, err)
		}
	}
}

func benchStore(b *testing.B, mode string) *Store {
	path := ""
	if mode == "file" {
		path = filepath.Join(b.TempDir(), "bench.db")
	}
	return open(b, path)
}

// fillOutbox writes n intents in one transaction: a quarter settled, the
// rest live with next attempt times spread over the hour after epoch.
func fillOutbox(b *testing.B, s *Store, n int) {
	err := s.db.Write(context.Background(), "fill", func(tx *sqlitedb.Tx) error {
		for i := range n {
			state := []string{"pending", "retrying", "pending", "accepted"}[i%4]
			next := epoch.Add(time.Duration(i*7919%3600000) * time.Millisecond)
			if _, err := tx.ExecContext(context.Background(), `INSERT INTO intents (`+intentColumns+`) VALUES (?, '{"causality":{"task":"t"}}', 0, ?, ?, NULL, '', ?, ?)`,
				fmt.Sprint("fill-", i), state, ms(next), ms(epoch), ms(epoch)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// Benchmarks of the client store's hot paths, beside BenchmarkContinuity:
// enqueue, a due scan over a 10,000-row outbox, and the session upsert.
func BenchmarkClient(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"memory", "file"} {
		b.Run(mode+"/enqueue_intent", func(b *testing.B) {
			s := benchStore(b, mode)
			env := spec.RawJSON(`{"kind":"complete","causality":{"task":"t","hop":1}}`)
			i := 0
			for b.Loop() {
				i++
				if ok, err := s.EnqueueIntent(ctx, fmt.Sprint("op-", i), env); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(mode+"/due_intents_10000", func(b *testing.B) {
			s := benchStore(b, mode)
			fillOutbox(b, s, 10_000)
			now := epoch.Add(30 * time.Minute)
			for b.Loop() {
				if in, err := s.DueIntents(ctx, now, cli.FlushBatchSize); err != nil || len(in) != cli.FlushBatchSize {
					b.Fatal(len(in), err)
				}
			}
		})
		b.Run(mode+"/upsert_session", func(b *testing.B) {
			s := benchStore(b, mode)
			v := cli.VersionedSession{Generation: 1, AgentState: cli.AgentReady, DeliveryState: "delivering", ResourceState: cli.ResourceOpen,
				RecoverySubstate: "none", DesiredJSON: `{}`, ObservedJSON: `{}`, BackendRef: `{"backend":"acp","task_id":"s"}`}
			for b.Loop() {
				v.Seq++
				if ok, err := s.UpsertSession(ctx, "t", v); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// The reference keeps the out-head as its reading of the seed's
// head_preview (client.HeadPreview): 200 code points whole, a longer head
// cut to them and "…". The contract allows any function of the head, so no
// spec checks this; this test does, of the reference alone.
func TestOutHeadIsTheReferencePreview(t *testing.T) {
	s := open(t, "")
	ctx := context.Background()
	for task, head := range map[string]string{
		"whole": strings.Repeat("é", cli.HeadPreviewRunes),
		"cut":   strings.Repeat("é", 150) + strings.Repeat("x", 60),
	} {
		if err := s.PutOutHead(ctx, task, head); err != nil {
			t.Fatal(err)
		}
		got, err := s.OutHead(ctx, task)
		if err != nil || got == nil || *got != cli.HeadPreview(head) {
			t.Errorf("%s: out_head %v (%v), want %q", task, got, err, cli.HeadPreview(head))
		}
	}
}
