package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storecheck/storecheck/spec"
)

const ioKind spec.Kind = "io"

func open(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{Path: path, Schema: "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER)", IOKind: ioKind})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The read pool has DefaultReadPool connections, each usable at once, and
// never more.
func TestReadPoolIsBounded(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "pool.db"))
	var active, most atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range DefaultReadPool + 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Read(context.Background(), "read", func(tx *Tx) error {
				var n int
				if err := tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM kv").Scan(&n); err != nil {
					return err
				}
				now := active.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				<-release
				active.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for most.Load() < DefaultReadPool && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // give a fifth reader the chance to break the bound
	close(release)
	wg.Wait()
	if got := most.Load(); got != DefaultReadPool {
		t.Fatalf("at most %d readers were active at once, want %d", got, DefaultReadPool)
	}
}

// In memory, every call sees the one database, reads and writes alike, from
// any goroutine.
func TestInMemoryIsOneDatabase(t *testing.T) {
	db := open(t, "")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.Write(context.Background(), "put", func(tx *Tx) error {
				_, err := tx.ExecContext(context.Background(), "INSERT INTO kv VALUES (?, ?)", string(rune('a'+i)), i)
				return err
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := db.Read(context.Background(), "count", func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM kv").Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	if n != 16 {
		t.Fatalf("read %d rows, want the 16 written", n)
	}
}

// A failed function rolls its transaction back, and a contract error passes
// through with its kind while any other becomes io.
func TestWriteIsAllOrNothing(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "tx.db"))
	const stale spec.Kind = "stale"
	err := db.Write(context.Background(), "half", func(tx *Tx) error {
		if _, err := tx.ExecContext(context.Background(), "INSERT INTO kv VALUES ('a', 1)"); err != nil {
			return err
		}
		return spec.Errorf(stale, "refused after a write")
	})
	if !errors.Is(err, stale) {
		t.Fatalf("got %v, want kind %s", err, stale)
	}
	err = db.Write(context.Background(), "bad sql", func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), "INSERT INTO nowhere VALUES (1)")
		return err
	})
	if spec.KindOf(err) != ioKind {
		t.Fatalf("got %v, want kind io", err)
	}
	var n int
	db.Read(context.Background(), "count", func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM kv").Scan(&n)
	})
	if n != 0 {
		t.Fatalf("a failed write left %d rows", n)
	}
}

// A writer waiting for the slot gives up when its context ends.
func TestWriterWaitHonoursContext(t *testing.T) {
	db := open(t, "")
	hold := make(chan struct{})
	go db.Write(context.Background(), "hold", func(*Tx) error { <-hold; return nil })
	defer close(hold)
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := db.Write(ctx, "wait", func(*Tx) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || spec.KindOf(err) != ioKind {
		t.Fatalf("got %v, want an io error caused by the deadline", err)
	}
}

// Opening a database another connection holds write-locked waits the busy
// timeout, then fails with io naming the lock.
func TestOpenWaitsTheBusyTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	lock, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	conn, _ := lock.Conn(context.Background())
	defer conn.Close()
	for _, q := range []string{"PRAGMA journal_mode=WAL", "BEGIN IMMEDIATE"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	_, err = Open(context.Background(), Options{Path: path, BusyTimeout: 300 * time.Millisecond, Schema: "CREATE TABLE IF NOT EXISTS kv (k TEXT)", IOKind: ioKind})
	took := time.Since(start)
	if spec.KindOf(err) != ioKind || took < 250*time.Millisecond || took > 3*time.Second {
		t.Fatalf("open took %v and returned %v; want an io error after about 300ms", took, err)
	}
}

func TestClosedStoreRefuses(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "closed.db"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("a second close: %v", err)
	}
	for _, f := range []func(context.Context, string, func(*Tx) error) error{db.Write, db.Read} {
		if err := f(context.Background(), "after close", func(*Tx) error { return nil }); spec.KindOf(err) != ioKind {
			t.Fatalf("got %v, want io", err)
		}
	}
}

func TestPathWithQueryCharactersIsRefused(t *testing.T) {
	_, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "a?b.db"), IOKind: ioKind})
	if spec.KindOf(err) != ioKind {
		t.Fatalf("got %v, want io", err)
	}
}
