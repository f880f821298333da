// Package sqlitedb is the SQLite plumbing the reference stores share, on
// modernc.org/sqlite (pure Go): a file in WAL mode with a busy timeout, one
// serialized writer whose transactions start with BEGIN IMMEDIATE, and a
// bounded pool of read-only connections; or an in-memory database that every
// call of the store sees (one pinned connection for reads and writes, since
// each in-memory connection would otherwise be a database of its own).
//
// Every operation of a store runs as one transaction through Write or Read, so
// a failed operation changes nothing.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storecheck/storecheck/spec"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Defaults taken from the seeds' stores.
const (
	DefaultBusyTimeout = 5 * time.Second
	DefaultReadPool    = 4
)

// Options says how to open a database.
type Options struct {
	// Path is the database file; "" or ":memory:" opens an in-memory one.
	Path string
	// BusyTimeout is how long a statement waits for another connection's
	// lock before it fails; 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// ReadPool is the number of read connections of a file database; 0
	// means DefaultReadPool.
	ReadPool int
	// Schema is run (idempotently) when the database opens.
	Schema string
	// Check, when set, reads the file before anything is written to it
	// (before the journal mode is set and the schema run): on the writer's
	// connection, in a read transaction that is rolled back. A store that
	// must refuse a file unchanged (the client's marker) checks it here,
	// with no connection of its own to open.
	Check func(ctx context.Context, tx *Tx) error
	// IOKind is the contract's kind for failures of the database itself.
	IOKind spec.Kind
	// Synchronous is SQLite's synchronous setting for every connection
	// ("OFF", "NORMAL", "FULL"); "" leaves SQLite's default, FULL, under
	// which a commit is synced before it is acknowledged, as the seeds'
	// stores leave it. Only the deliberate bugs set it.
	Synchronous string
	// JournalMode is SQLite's journal_mode for a file database; "" is
	// WAL, the seeds' (continuity's conn setup). The deliberate bugs set
	// another, and the kit's tests of a runtime store in SQLite's default,
	// DELETE, which its seed does not rule out.
	JournalMode string
}

// DB is an open database.
type DB struct {
	ioKind spec.Kind
	closed atomic.Bool
	// writerDB holds the one writer connection; writer is it, pinned.
	// writeSlot serializes its users and, unlike a mutex, lets a waiting
	// caller give up when its context ends.
	writerDB  *sql.DB
	writer    *conn
	writeSlot chan struct{}
	// readers is the read pool of a file database; nil in memory, where
	// reads take the writer.
	readers *pool
}

// InMemory reports whether path names an in-memory database.
func InMemory(path string) bool { return path == "" || path == ":memory:" }

// Open opens (creating if needed) the database and applies the schema. It
// waits for another connection's lock at most the busy timeout, and no
// longer than ctx allows.
func Open(ctx context.Context, o Options) (*DB, error) {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadPool <= 0 {
		o.ReadPool = DefaultReadPool
	}
	if strings.ContainsAny(o.Path, "?#") {
		return nil, spec.Errorf(o.IOKind, "open %q: a database path may not contain '?' or '#'", o.Path)
	}
	busy := fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds())
	pragmas := []string{busy}
	if o.Synchronous != "" {
		pragmas = append(pragmas, "synchronous("+o.Synchronous+")")
	}
	db := &DB{ioKind: o.IOKind, writeSlot: make(chan struct{}, 1)}
	fail := func(step string, err error) (*DB, error) {
		db.Close()
		return nil, spec.Errorf(o.IOKind, "open %q: %s: %w", o.Path, step, err)
	}

	writerDSN := "file::memory:?" + url.Values{"_pragma": pragmas}.Encode()
	if !InMemory(o.Path) {
		writerDSN = "file:" + o.Path + "?" + url.Values{"_pragma": pragmas}.Encode()
	}
	var err error
	if db.writerDB, err = sql.Open("sqlite", writerDSN); err != nil {
		return fail("writer", err)
	}
	db.writerDB.SetMaxOpenConns(1)
	c, err := db.writerDB.Conn(ctx)
	if err != nil {
		return fail("writer", err)
	}
	db.writer = &conn{c: c, begin: "BEGIN IMMEDIATE", stmts: map[string]*sql.Stmt{}}
	if o.Check != nil {
		if err := db.check(ctx, o.Check); err != nil {
			db.Close()
			return nil, err
		}
	}
	if !InMemory(o.Path) {
		mode := o.JournalMode
		if mode == "" {
			mode = "WAL"
		}
		// Another connection holding the database keeps a deliberate
		// bug's mode from taking over a WAL file: it then keeps the
		// file's, as SQLite does when it cannot change it.
		if _, err = c.ExecContext(ctx, "PRAGMA journal_mode="+mode); err != nil && o.JournalMode == "" {
			return fail("journal_mode", err)
		}
	}
	if o.Schema != "" {
		if err = db.write(ctx, fmt.Sprintf("open %q: schema", o.Path), false, func(tx *Tx) error {
			// Run once, so not kept prepared; several statements in one.
			_, err := tx.conn.c.ExecContext(ctx, o.Schema)
			return err
		}); err != nil {
			db.Close()
			return nil, err
		}
	}
	if !InMemory(o.Path) {
		readerDSN := "file:" + o.Path + "?" + url.Values{"_pragma": append(pragmas, "query_only(1)")}.Encode()
		readers, err := sql.Open("sqlite", readerDSN)
		if err != nil {
			return fail("readers", err)
		}
		readers.SetMaxOpenConns(o.ReadPool)
		db.readers = &pool{db: readers, free: make(chan *conn, o.ReadPool), slots: make(chan struct{}, o.ReadPool)}
		// One reader opened now, so that a database it cannot read fails
		// the open, not the first read.
		r, err := db.readers.get(ctx)
		if err != nil {
			return fail("readers", err)
		}
		db.readers.put(r)
	}
	return db, nil
}

// check runs fn on the writer's connection in a read transaction (BEGIN,
// which takes no lock until fn reads, and never a write lock), rolled back.
// Its errors are fn's, unwrapped: the store says what a failed check is.
func (db *DB) check(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	if _, err := db.writer.c.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	tx := &Tx{conn: db.writer}
	err := fn(ctx, tx)
	tx.closeRows()
	db.writer.rollback()
	return err
}

// Write runs fn in one writer transaction (BEGIN IMMEDIATE) and commits when
// fn returns nil. A contract error from fn passes through unchanged; any
// other failure becomes the contract's io kind, naming op. After the commit
// it reaches the crash point "<op>/after_commit" (spec.CrashPoint); fn
// reaches the store's own between its writes. It reaches the yield points
// "<op>/before_write" before it waits for the writer, and "<op>/after_write"
// once the writer is free again (spec.Yield).
func (db *DB) Write(ctx context.Context, op string, fn func(tx *Tx) error) error {
	return db.write(ctx, op, true, fn)
}

func (db *DB) write(ctx context.Context, op string, point bool, fn func(tx *Tx) error) error {
	if err := spec.Yield(ctx, op+"/before_write"); err != nil {
		return err
	}
	if err := db.writeLocked(ctx, op, point, fn); err != nil {
		return err
	}
	return spec.Yield(ctx, op+"/after_write")
}

// writeLocked runs fn under the writer, which no yield point may hold.
func (db *DB) writeLocked(ctx context.Context, op string, point bool, fn func(tx *Tx) error) error {
	select {
	case db.writeSlot <- struct{}{}:
	case <-ctx.Done():
		return spec.Errorf(db.ioKind, "%s: waiting for the writer: %w", op, ctx.Err())
	}
	defer func() { <-db.writeSlot }()
	if db.closed.Load() {
		return spec.Errorf(db.ioKind, "%s: store is closed", op)
	}
	if err := db.run(ctx, op, db.writer, fn); err != nil {
		return err
	}
	if point {
		return spec.CrashPoint(ctx, op+"/after_commit")
	}
	return nil
}

// Read runs fn in one read transaction: a consistent view of the database.
// It reaches the yield points "<op>/before_read" and "<op>/after_read".
func (db *DB) Read(ctx context.Context, op string, fn func(tx *Tx) error) error {
	if db.readers == nil {
		// One connection: the read takes the writer's, but it commits
		// nothing, so it reaches no after_commit crash point.
		return db.write(ctx, op, false, fn)
	}
	if db.closed.Load() {
		return spec.Errorf(db.ioKind, "%s: store is closed", op)
	}
	if err := spec.Yield(ctx, op+"/before_read"); err != nil {
		return err
	}
	c, err := db.readers.get(ctx)
	if err != nil {
		return spec.Errorf(db.ioKind, "%s: waiting for a reader: %w", op, err)
	}
	err = db.run(ctx, op, c, fn)
	db.readers.put(c)
	if err != nil {
		return err
	}
	return spec.Yield(ctx, op+"/after_read")
}

func (db *DB) run(ctx context.Context, op string, c *conn, fn func(tx *Tx) error) error {
	if _, err := c.exec(ctx, c.begin); err != nil {
		return spec.Errorf(db.ioKind, "%s: begin: %w", op, err)
	}
	tx := &Tx{conn: c}
	err := fn(tx)
	tx.closeRows()
	if err != nil {
		c.rollback()
		var kind *spec.Error
		if errors.As(err, &kind) {
			return err
		}
		return spec.Errorf(db.ioKind, "%s: %w", op, err)
	}
	if _, err := c.exec(ctx, "COMMIT"); err != nil {
		c.rollback()
		return spec.Errorf(db.ioKind, "%s: commit: %w", op, err)
	}
	return nil
}

// Close waits for the write in progress, then closes every connection. It is
// safe to call more than once.
func (db *DB) Close() error {
	db.writeSlot <- struct{}{}
	defer func() { <-db.writeSlot }()
	if db.closed.Swap(true) {
		return nil
	}
	var errs []error
	if db.writer != nil {
		errs = append(errs, db.writer.close())
	}
	if db.writerDB != nil {
		errs = append(errs, db.writerDB.Close())
	}
	if db.readers != nil {
		errs = append(errs, db.readers.close())
	}
	return errors.Join(errs...)
}
