//! The rusqlite transaction helper: the one place a store's transactions go
//! through, and so the natural home of its yield points and crash points.

use std::ops::Deref;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::{Context, Error, OpenRequest};

/// One connection, behind a lock of its own. Every operation goes through
/// [`Db::write`], [`Db::write_flow`], [`Db::read`] or [`Db::call`], which
/// take the lock for the operation's statements only, and reach the
/// operation's yield points where it holds neither that lock nor any
/// database lock: before the lock is taken (`<op>/before_write`,
/// `<op>/before_read`) and after it is given back (`<op>/after_write`,
/// `<op>/after_read`). After a commit, before its yield point, the crash
/// point `<op>/after_commit` is reached (a crash there loses only the
/// answer) if the store declares it; this one point may be left
/// undeclared, for the helper reaches it in every write whether the store
/// wants it or not. Every point the body reaches with [`Tx::crash_point`]
/// must be declared ([`crate::StoreDef::crash_points`]).
pub struct Db {
    conn: Mutex<Connection>,
}

/// What a [`Db::write_flow`] body decides: commit, or roll back every write
/// of the transaction; either way the operation answers the value.
pub enum Flow<T> {
    Commit(T),
    Rollback(T),
}

/// A transaction body's view: the connection (every rusqlite method, through
/// `Deref`) inside the transaction, and the operation's crash points between
/// its statements.
pub struct Tx<'a> {
    tx: Transaction<'a>,
    cx: &'a Context,
}

impl Deref for Tx<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.tx
    }
}

impl Tx<'_> {
    /// Crash point `<op>/<place>`, between two statements of the
    /// transaction: a crash there must leave nothing of the operation. The
    /// point must be declared ([`Context::crash_point`]).
    pub fn crash_point(&self, place: &str) {
        self.cx.crash_point(place);
    }

    /// The operation's context.
    pub fn context(&self) -> &Context {
        self.cx
    }
}

impl Db {
    /// A connection for `req`: its path, or a private in-memory database;
    /// its busy timeout is the open's `timeout_ms` (the open waits for a
    /// locked database that long, and no longer).
    pub fn connect(req: &OpenRequest) -> Result<Connection, Error> {
        let conn = match &req.path {
            Some(p) => Connection::open(p),
            None => Connection::open_in_memory(),
        }
        .map_err(|e| Error::io(format!("open {:?}: {e}", req.path.as_deref().unwrap_or(":memory:"))))?;
        conn.busy_timeout(Duration::from_millis(req.timeout_ms.max(1) as u64))?;
        Ok(conn)
    }

    pub fn new(conn: Connection) -> Db {
        Db { conn: Mutex::new(conn) }
    }

    /// The connection, outside any operation (opening, closing).
    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter(&self, cx: &Context) -> MutexGuard<'_, Connection> {
        let conn = self.lock();
        // A cheap C call, no statement: the busy handler waits until a
        // little before the kit stops waiting.
        let _ = conn.busy_timeout(Duration::from_millis(cx.busy_timeout_ms() as u64));
        conn
    }

    /// A write transaction (`BEGIN IMMEDIATE`: the write lock is taken
    /// before the first read, so the body's checks and writes see one state
    /// no other connection moves): committed when the body answers `Ok`,
    /// rolled back when it answers `Err`.
    pub fn write<T>(&self, cx: &Context, body: impl FnOnce(&Tx<'_>) -> Result<T, Error>) -> Result<T, Error> {
        self.write_flow(cx, |tx| body(tx).map(Flow::Commit))
    }

    /// A write transaction whose body decides commit or rollback
    /// ([`Flow`]); an `Err` rolls back too.
    pub fn write_flow<T>(&self, cx: &Context, body: impl FnOnce(&Tx<'_>) -> Result<Flow<T>, Error>) -> Result<T, Error> {
        self.transaction(cx, TransactionBehavior::Immediate, "write", body)
    }

    /// A read transaction (a deferred `BEGIN`: one snapshot for every
    /// statement of the body); it writes nothing, and ends with a commit.
    pub fn read<T>(&self, cx: &Context, body: impl FnOnce(&Tx<'_>) -> Result<T, Error>) -> Result<T, Error> {
        self.transaction(cx, TransactionBehavior::Deferred, "read", |tx| body(tx).map(Flow::Commit))
    }

    /// Statements outside any transaction (each its own, as SQLite runs a
    /// statement alone), under the connection's lock: `write` names the
    /// yield points `before_write`/`after_write`, else
    /// `before_read`/`after_read`.
    pub fn call<T>(&self, cx: &Context, write: bool, body: impl FnOnce(&Connection) -> Result<T, Error>) -> Result<T, Error> {
        let what = if write { "write" } else { "read" };
        cx.yield_point(&format!("before_{what}"))?;
        let out = {
            let conn = self.enter(cx);
            body(&conn)?
        };
        if write {
            cx.crash_point_if_declared("after_commit");
        }
        cx.yield_point(&format!("after_{what}"))?;
        Ok(out)
    }

    fn transaction<T>(
        &self,
        cx: &Context,
        behavior: TransactionBehavior,
        what: &str,
        body: impl FnOnce(&Tx<'_>) -> Result<Flow<T>, Error>,
    ) -> Result<T, Error> {
        cx.yield_point(&format!("before_{what}"))?;
        let writes = !matches!(behavior, TransactionBehavior::Deferred);
        let out = {
            let mut conn = self.enter(cx);
            let tx = Tx { tx: Transaction::new(&mut conn, behavior).map_err(|e| Error::io(format!("{}: begin: {e}", cx.op())))?, cx };
            match body(&tx)? {
                Flow::Commit(v) => {
                    tx.tx.commit().map_err(|e| Error::io(format!("{}: commit: {e}", cx.op())))?;
                    v
                }
                // Dropping a rusqlite transaction rolls it back.
                Flow::Rollback(v) => return Ok(v),
            }
        };
        if writes {
            cx.crash_point_if_declared("after_commit");
        }
        cx.yield_point(&format!("after_{what}"))?;
        Ok(out)
    }
}
