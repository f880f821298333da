package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// conn is one pinned connection and the statements prepared on it. A store
// runs a few dozen statements, each many times over a sweep; parsing each
// anew (database/sql prepares every Exec and Query it is handed) was a third
// of a simulated seed's CPU, so each connection parses a statement once.
// Its transactions are SQL statements too (begin, COMMIT, ROLLBACK), run on
// the connection like the rest: SQLite keeps a transaction per connection.
type conn struct {
	c *sql.Conn
	// begin opens a transaction: "BEGIN IMMEDIATE" for the writer, so that
	// it takes the write lock at once, "BEGIN" for a reader.
	begin string
	stmts map[string]*sql.Stmt
}

// stmt is query prepared on c, prepared now if it was not before. A
// connection is used by one caller at a time, so the map needs no lock.
func (c *conn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	s, err := c.c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = s
	return s, nil
}

func (c *conn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

// rollback ends the transaction a failure left open. SQLite has already
// rolled it back after some failures (a full disk, an I/O error), and then
// says no transaction is active: nothing is lost by ignoring that.
func (c *conn) rollback() {
	c.exec(context.Background(), "ROLLBACK")
}

func (c *conn) close() error {
	var errs []error
	for _, s := range c.stmts {
		errs = append(errs, s.Close())
	}
	errs = append(errs, c.c.Close())
	return errors.Join(errs...)
}

// Tx is one transaction of a store, on one connection: Write's or Read's.
// Its methods are *sqlitedb.Tx's that the stores use.
type Tx struct {
	conn *conn
	// rows are the queries' results, closed when the transaction ends if
	// the store left any open, as *sqlitedb.Tx does.
	rows []*sql.Rows
}

// ExecContext runs a statement that returns no rows.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.conn.exec(ctx, query, args...)
}

// QueryContext runs a query and returns its rows.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := tx.conn.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	tx.rows = append(tx.rows, rows)
	return rows, nil
}

// QueryRowContext runs a query expected to return at most one row; its
// Scan says sql.ErrNoRows when there is none, as *sql.Row's does.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *Row {
	rows, err := tx.QueryContext(ctx, query, args...)
	return &Row{rows: rows, err: err}
}

func (tx *Tx) closeRows() {
	for _, r := range tx.rows {
		r.Close()
	}
	tx.rows = nil
}

// Row is the result of QueryRowContext.
type Row struct {
	rows *sql.Rows
	err  error
}

// Scan copies the first row's columns into dest and closes the rows.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// pool is a file database's read connections, pinned, at most cap(slots)
// of them, each opened the first time it is needed.
type pool struct {
	db    *sql.DB
	free  chan *conn
	slots chan struct{}
	// mu orders a connection handed back against close, so that none is
	// left open after it.
	mu     sync.Mutex
	closed bool
}

func (p *pool) get(ctx context.Context) (*conn, error) {
	select {
	case c := <-p.free:
		return c, nil
	default:
	}
	select {
	case c := <-p.free:
		return c, nil
	case p.slots <- struct{}{}:
		c, err := p.db.Conn(ctx)
		if err != nil {
			<-p.slots
			return nil, err
		}
		return &conn{c: c, begin: "BEGIN", stmts: map[string]*sql.Stmt{}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pool) put(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.close()
		return
	}
	p.free <- c
}

func (p *pool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for {
		select {
		case c := <-p.free:
			errs = append(errs, c.close())
		default:
			return errors.Join(append(errs, p.db.Close())...)
		}
	}
}
