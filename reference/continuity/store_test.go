package continuity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// SQLite integers are signed 64-bit: a token above that range is refused
// with io, and nothing is written.
func TestTokensBeyondInt64AreRefused(t *testing.T) {
	s := open(t, "")
	ctx := context.Background()
	r := c.Record{Identity: "i", AgentRuntimeID: "rt", SessionID: "s"}
	err := s.UpsertContinuityRecord(ctx, r, math.MaxInt64+1)
	if spec.KindOf(err) != c.ErrIO {
		t.Fatalf("got %v, want io", err)
	}
	m, _ := s.ResolveMany(ctx, []c.Identity{"i"})
	if m["i"].State != c.Uninitialized {
		t.Fatalf("a refused upsert wrote %+v", m["i"])
	}
	if err := s.UpsertContinuityRecord(ctx, r, math.MaxInt64); err != nil {
		t.Fatalf("the largest int64 token: %v", err)
	}
	if got, _ := s.MaxFencingToken(ctx); got != math.MaxInt64 {
		t.Fatalf("max fence %d", got)
	}
}

// Writers on two handles of one file race to advance one identity's fence;
// the store serializes them so that no stale fence ever lands: the stored
// fence only grows and ends at the largest one presented.
func TestTwoHandlesSerializeFenceChecks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	handles := []*Store{open(t, path), open(t, path)}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for h, s := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				fence := c.FencingToken(2*i + h)
				r := c.Record{Identity: "race", AgentRuntimeID: c.RuntimeID(fmt.Sprint("rt-", h)), SessionID: "s"}
				if err := s.UpsertContinuityRecord(ctx, r, fence); err != nil && !errors.Is(err, c.ErrStaleFencingToken) {
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
	for _, s := range handles {
		if got, _ := s.MaxFencingToken(ctx); got != 99 {
			t.Fatalf("max fence %d, want 99", got)
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

// Benchmarks of the main operations, in a file (WAL, synchronous=FULL, the
// seed's settings) and in memory. Later issues compare against these.
func BenchmarkContinuity(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"memory", "file"} {
		b.Run(mode+"/upsert_continuity_record", func(b *testing.B) {
			s := benchStore(b, mode)
			fence := c.FencingToken(0)
			for b.Loop() {
				fence++
				if err := s.UpsertContinuityRecord(ctx, c.Record{Identity: "i", AgentRuntimeID: "rt", SessionID: "s"}, fence); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/save_session_snapshot", func(b *testing.B) {
			s := benchStore(b, mode)
			if err := s.UpsertContinuityRecord(ctx, c.Record{Identity: "i", AgentRuntimeID: "rt", SessionID: "s"}, 1); err != nil {
				b.Fatal(err)
			}
			data := make([]byte, 4096)
			version := c.CheckpointVersion(0)
			for b.Loop() {
				version++
				if err := s.SaveSessionSnapshot(ctx, c.SnapshotWrite{Identity: "i", SessionID: "s", CheckpointVersion: version, FencingToken: 1, Data: data}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/resolve_many_8", func(b *testing.B) {
			s := benchStore(b, mode)
			var ids []c.Identity
			for i := range 8 {
				id := c.Identity(fmt.Sprint("id-", i))
				ids = append(ids, id)
				if err := s.UpsertContinuityRecord(ctx, c.Record{Identity: id, AgentRuntimeID: "rt", SessionID: c.SessionID(id)}, 1); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := s.ResolveMany(ctx, ids); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/session_snapshot_matches_current", func(b *testing.B) {
			s := benchStore(b, mode)
			w := c.SnapshotWrite{Identity: "i", SessionID: "s", CheckpointVersion: 1, FencingToken: 1, Data: make([]byte, 4096)}
			s.UpsertContinuityRecord(ctx, c.Record{Identity: "i", AgentRuntimeID: "rt", SessionID: "s"}, 1)
			if err := s.SaveSessionSnapshot(ctx, w); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if ok, err := s.SessionSnapshotMatchesCurrent(ctx, w); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(mode+"/max_fencing_token", func(b *testing.B) {
			s := benchStore(b, mode)
			s.UpsertContinuityRecord(ctx, c.Record{Identity: "i", AgentRuntimeID: "rt", SessionID: "s"}, 1)
			for b.Loop() {
				if _, err := s.MaxFencingToken(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
