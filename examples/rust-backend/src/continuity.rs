//! Seed 003, meerkat-mobkit `LocalContinuityStore` (CONTRACT-06), on
//! synchronous rusqlite: the seed's SQL, checks and their order, its one
//! serialized writer and its bounded read pool. "Designed for
//! single-process": the upsert checks and writes outside any transaction,
//! under the writer's in-process mutex, so this store declares no
//! shared_files (main.rs).
//!
//! Where the seed goes through tokio (`run_blocking`), this runs on the
//! request's own thread. The yield points are where the seed's operation
//! holds neither the writer's mutex nor a reader: before `with_writer` /
//! `with_reader` take one, and after they give it back.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use storecheck_backend::{Context, Error, OpenRequest, Store, args, result, wire};

use crate::breaks;

pub const NAME: &str = "continuity";

pub const CRASH_POINTS: &[&str] = &[
    "save_session_snapshot/after_snapshot_upsert",
    "save_session_snapshot/after_commit",
    "upsert_continuity_record/after_commit",
    "rollback_continuity_record/after_snapshots_delete",
    "rollback_continuity_record/after_commit",
    "delete_continuity_record/after_snapshots_delete",
    "delete_continuity_record/after_commit",
    "delete_session_snapshot_if_current_revision/after_commit",
];

const READ_POOL_SIZE: usize = 4;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS continuity_records (
        identity       TEXT PRIMARY KEY,
        agent_runtime_id TEXT NOT NULL,
        session_id     TEXT NOT NULL,
        generation     INTEGER NOT NULL,
        checkpoint_version INTEGER NOT NULL,
        fencing_token  INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS session_snapshots (
        session_id     TEXT PRIMARY KEY,
        identity       TEXT NOT NULL,
        generation     INTEGER NOT NULL,
        checkpoint_version INTEGER NOT NULL,
        fencing_token  INTEGER NOT NULL,
        data           BLOB NOT NULL
    );";

// The seed's error variants, as the kit's kinds.
fn io(message: String) -> Error {
    Error::io(message)
}
fn not_found(identity: &str) -> Error {
    Error::new("not_found", format!("no continuity record for {identity}"))
}
fn stale_fencing_token(identity: &str, presented: u64, current: u64) -> Error {
    Error::new("stale_fencing_token", format!("identity {identity}: stale fencing token: presented {presented}, current {current}"))
}
fn stale_checkpoint_version(identity: &str, presented: u64, current: u64) -> Error {
    Error::new(
        "stale_checkpoint_version",
        format!("identity {identity}: stale checkpoint version: presented {presented}, current {current}"),
    )
}
fn stale_generation(identity: &str, presented: u64, current: u64) -> Error {
    Error::new("stale_continuity_generation", format!("identity {identity}: stale generation: presented {presented}, current {current}"))
}
fn corruption(message: String) -> Error {
    Error::new("corruption", message)
}

struct ReadConnectionPool {
    available: Mutex<Vec<Connection>>,
    ready: Condvar,
}

impl ReadConnectionPool {
    fn new(connections: Vec<Connection>) -> Self {
        debug_assert!(!connections.is_empty());
        Self { available: Mutex::new(connections), ready: Condvar::new() }
    }

    fn acquire(&self) -> Result<ReadConnectionGuard<'_>, Error> {
        let mut available = self.available.lock().map_err(|e| io(format!("read pool lock: {e}")))?;
        loop {
            if let Some(connection) = available.pop() {
                return Ok(ReadConnectionGuard { pool: self, connection: Some(connection) });
            }
            available = self.ready.wait(available).map_err(|e| io(format!("read pool wait: {e}")))?;
        }
    }

    fn with_connection<T>(&self, operation: impl FnOnce(&Connection) -> Result<T, Error>) -> Result<T, Error> {
        let connection = self.acquire()?;
        operation(connection.connection()?)
    }
}

struct ReadConnectionGuard<'a> {
    pool: &'a ReadConnectionPool,
    connection: Option<Connection>,
}

impl ReadConnectionGuard<'_> {
    fn connection(&self) -> Result<&Connection, Error> {
        self.connection.as_ref().ok_or_else(|| io("read pool guard lost its connection".into()))
    }
}

impl Drop for ReadConnectionGuard<'_> {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        let mut available = self.pool.available.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        available.push(connection);
        self.pool.ready.notify_one();
    }
}

enum ReadConnections {
    /// `Connection::open_in_memory()` is private to one connection. Reads share
    /// the writer rather than accidentally observing independent databases.
    Writer,
    Pool(ReadConnectionPool),
}

pub struct LocalContinuityStore {
    writer: Mutex<Connection>,
    readers: ReadConnections,
}

impl LocalContinuityStore {
    fn with_reader<T>(&self, cx: &Context, operation: impl FnOnce(&Connection) -> Result<T, Error>) -> Result<T, Error> {
        cx.yield_point("before_read")?;
        let out = match &self.readers {
            ReadConnections::Writer => {
                let connection = self.writer.lock().map_err(|e| io(format!("writer lock: {e}")))?;
                operation(&connection)
            }
            ReadConnections::Pool(pool) => pool.with_connection(operation),
        }?;
        cx.yield_point("after_read")?;
        Ok(out)
    }

    fn with_writer<T>(&self, cx: &Context, operation: impl FnOnce(&mut Connection) -> Result<T, Error>) -> Result<T, Error> {
        cx.yield_point("before_write")?;
        let out = {
            let mut connection = self.writer.lock().map_err(|e| io(format!("writer lock: {e}")))?;
            let _ = connection.busy_timeout(Duration::from_millis(cx.busy_timeout_ms() as u64));
            operation(&mut connection)
        }?;
        cx.yield_point("after_write")?;
        Ok(out)
    }

    /// `LocalContinuityStore::open(path)`, or `in_memory()`. The seed's
    /// fixed `busy_timeout=5000` is the open's `timeout_ms` here
    /// (continuity.open_waits_for_lock).
    pub fn open(req: &OpenRequest) -> Result<Self, Error> {
        let busy = format!("PRAGMA busy_timeout={};", req.timeout_ms.max(1));
        let Some(path) = &req.path else {
            let writer = Connection::open_in_memory().map_err(|e| io(format!("in-memory open: {e}")))?;
            writer.execute_batch(SCHEMA).map_err(|e| io(format!("schema: {e}")))?;
            return Ok(Self { writer: Mutex::new(writer), readers: ReadConnections::Writer });
        };
        let writer = Connection::open(path).map_err(|e| io(format!("open writer: {e}")))?;
        writer.execute_batch(&format!("{busy} PRAGMA journal_mode=WAL;")).map_err(|e| io(format!("pragma: {e}")))?;
        writer.execute_batch(SCHEMA).map_err(|e| io(format!("schema: {e}")))?;

        let mut readers = Vec::with_capacity(READ_POOL_SIZE);
        for index in 0..READ_POOL_SIZE {
            let reader = Connection::open(path).map_err(|e| io(format!("open reader {index}: {e}")))?;
            reader
                .execute_batch(&format!("{busy} PRAGMA journal_mode=WAL; PRAGMA query_only=ON;"))
                .map_err(|e| io(format!("configure reader {index}: {e}")))?;
            readers.push(reader);
        }
        Ok(Self { writer: Mutex::new(writer), readers: ReadConnections::Pool(ReadConnectionPool::new(readers)) })
    }

    fn max_fencing_token(&self, cx: &Context) -> Result<u64, Error> {
        self.with_reader(cx, |connection| {
            connection
                .query_row(
                    "SELECT COALESCE(MAX(t), 0) FROM (
                        SELECT MAX(fencing_token) AS t FROM continuity_records
                        UNION ALL
                        SELECT MAX(fencing_token) AS t FROM session_snapshots
                    )",
                    [],
                    |row| row.get::<_, u64>(0),
                )
                .map_err(|e| io(format!("max_fencing_token: {e}")))
        })
    }

    fn resolve_many(&self, cx: &Context, identities: Vec<String>) -> Result<BTreeMap<String, Resolution>, Error> {
        self.with_reader(cx, |connection| {
            let mut map = BTreeMap::new();
            for id in &identities {
                let mut stmt = connection
                    .prepare_cached(
                        "SELECT agent_runtime_id, session_id, generation, checkpoint_version
                             FROM continuity_records WHERE identity = ?1",
                    )
                    .map_err(|e| io(format!("prepare: {e}")))?;
                let row = stmt
                    .query_row(rusqlite::params![id.as_str()], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, u64>(2)?, row.get::<_, u64>(3)?))
                    })
                    .optional()
                    .map_err(|e| io(format!("query: {e}")))?;
                match row {
                    Some((runtime_id, session_id_str, generation, cpv)) => {
                        let record = Record {
                            identity: id.clone(),
                            agent_runtime_id: parse_runtime_id(&runtime_id)
                                .map_err(|e| corruption(format!("invalid runtime_id in store: {e}")))?,
                            session_id: parse_session_id(&session_id_str)
                                .map_err(|e| corruption(format!("invalid session_id in store: {e}")))?,
                            generation,
                            checkpoint_version: cpv,
                        };
                        map.insert(id.clone(), Resolution { state: "ready", record: Some(record) });
                    }
                    None => {
                        map.insert(id.clone(), Resolution { state: "uninitialized", record: None });
                    }
                }
            }
            Ok(map)
        })
    }

    fn load_session_snapshot(&self, cx: &Context, session_id: String) -> Result<Option<Snapshot>, Error> {
        self.with_reader(cx, |connection| {
            let mut stmt = connection
                .prepare_cached("SELECT data FROM session_snapshots WHERE session_id = ?1")
                .map_err(|e| io(format!("prepare: {e}")))?;
            let row = stmt
                .query_row(rusqlite::params![session_id], |row| row.get::<_, Vec<u8>>(0))
                .optional()
                .map_err(|e| io(format!("query: {e}")))?;
            Ok(row.map(|data| Snapshot { data }))
        })
    }

    fn session_snapshot_matches_current(&self, cx: &Context, candidate: SnapshotWrite) -> Result<bool, Error> {
        self.with_reader(cx, |connection| {
            connection
                .query_row(
                    "SELECT EXISTS(
                            SELECT 1
                            FROM session_snapshots AS snapshot
                            JOIN continuity_records AS continuity
                              ON continuity.identity = snapshot.identity
                             AND continuity.session_id = snapshot.session_id
                             AND continuity.generation = snapshot.generation
                             AND continuity.checkpoint_version = snapshot.checkpoint_version
                            WHERE snapshot.session_id = ?1
                              AND snapshot.identity = ?2
                              AND snapshot.generation = ?3
                              AND snapshot.checkpoint_version = ?4
                              AND continuity.fencing_token = ?5
                              AND snapshot.fencing_token <= ?5
                              AND snapshot.data = ?6
                        )",
                    rusqlite::params![
                        candidate.session_id,
                        candidate.identity.as_str(),
                        candidate.generation,
                        candidate.checkpoint_version,
                        candidate.fencing_token,
                        &candidate.data,
                    ],
                    |row| row.get::<_, bool>(0),
                )
                .map_err(|e| io(format!("match session snapshot: {e}")))
        })
    }

    fn delete_session_snapshot_if_current_revision(
        &self,
        cx: &Context,
        session_id: String,
        expected_current_revision: String,
    ) -> Result<bool, Error> {
        self.with_writer(cx, |connection| {
            let tx = connection.transaction().map_err(|e| io(format!("begin tx: {e}")))?;

            let data = tx
                .query_row("SELECT data FROM session_snapshots WHERE session_id = ?1", rusqlite::params![session_id], |row| {
                    row.get::<_, Vec<u8>>(0)
                })
                .optional()
                .map_err(|e| io(format!("query snapshot: {e}")))?;

            let Some(data) = data else {
                return Ok(false);
            };
            let session: Value =
                serde_json::from_slice(&data).map_err(|e| io(format!("deserialize session snapshot for revision check: {e}")))?;
            let current_revision = session_projection_cas_token(&session)?;
            if current_revision != expected_current_revision {
                return Ok(false);
            }

            let deleted = tx
                .execute("DELETE FROM session_snapshots WHERE session_id = ?1", rusqlite::params![session_id])
                .map_err(|e| io(format!("delete snapshot: {e}")))?;
            tx.commit().map_err(|e| io(format!("commit snapshot delete: {e}")))?;
            cx.crash_point("after_commit");
            Ok(deleted > 0)
        })
    }

    fn save_session_snapshot(&self, cx: &Context, w: SnapshotWrite) -> Result<(), Error> {
        let SnapshotWrite { identity, session_id, generation, checkpoint_version: version, fencing_token, data } = w;
        self.with_writer(cx, |connection| {
            // Keep the check, snapshot upsert, and record version/fence
            // advance in one writer transaction.
            let tx = connection.unchecked_transaction().map_err(|e| io(format!("begin tx: {e}")))?;

            let mut stmt = tx
                .prepare_cached(
                    "SELECT session_id, generation, fencing_token, checkpoint_version
                         FROM continuity_records WHERE identity = ?1",
                )
                .map_err(|e| io(format!("prepare: {e}")))?;
            let existing = stmt
                .query_row(rusqlite::params![identity.as_str()], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, u64>(1)?, row.get::<_, u64>(2)?, row.get::<_, u64>(3)?))
                })
                .optional()
                .map_err(|e| io(format!("query: {e}")))?;
            drop(stmt);

            let record_was_present = existing.is_some();
            if let Some((current_session_id, current_generation, current_token, current_version)) = existing {
                if current_session_id != session_id || current_generation != generation {
                    return Err(not_found(&identity));
                }
                if fencing_token < current_token {
                    return Err(stale_fencing_token(&identity, fencing_token, current_token));
                }
                if version <= current_version {
                    return Err(stale_checkpoint_version(&identity, version, current_version));
                }
            }

            let existing_snapshot_owner = tx
                .query_row(
                    "SELECT identity, generation FROM session_snapshots WHERE session_id = ?1",
                    rusqlite::params![session_id],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, u64>(1)?)),
                )
                .optional()
                .map_err(|e| io(format!("query snapshot owner: {e}")))?;
            if let Some((snapshot_identity, snapshot_generation)) = existing_snapshot_owner
                && (snapshot_identity != identity.as_str() || snapshot_generation != generation)
            {
                return Err(corruption(format!(
                    "session snapshot {session_id} is owned by {snapshot_identity}/generation \
                         {snapshot_generation}, not {identity}/generation {generation}"
                )));
            }

            tx.execute(
                "INSERT INTO session_snapshots (session_id, identity, generation, checkpoint_version, fencing_token, data)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT(session_id) DO UPDATE SET
                        identity = excluded.identity,
                        generation = excluded.generation,
                        checkpoint_version = excluded.checkpoint_version,
                        fencing_token = excluded.fencing_token,
                        data = excluded.data",
                rusqlite::params![session_id, identity.as_str(), generation, version, fencing_token, &data,],
            )
            .map_err(|e| io(format!("upsert snapshot: {e}")))?;
            cx.crash_point("after_snapshot_upsert");

            tx.execute(
                "UPDATE continuity_records
                     SET checkpoint_version = ?1, fencing_token = ?2
                     WHERE identity = ?3 AND session_id = ?4 AND generation = ?5",
                rusqlite::params![version, fencing_token, identity.as_str(), session_id, generation,],
            )
            .map_err(|e| io(format!("update continuity after snapshot: {e}")))?;
            if record_was_present && tx.changes() == 0 {
                return Err(not_found(&identity));
            }

            tx.commit().map_err(|e| io(format!("commit tx: {e}")))?;
            cx.crash_point("after_commit");
            Ok(())
        })
    }

    fn upsert_continuity_record(&self, cx: &Context, record: Record, fencing_token: u64) -> Result<(), Error> {
        self.with_writer(cx, |connection| {
            let mut stmt = connection
                .prepare_cached("SELECT fencing_token, generation FROM continuity_records WHERE identity = ?1")
                .map_err(|e| io(format!("prepare: {e}")))?;
            let existing = stmt
                .query_row(rusqlite::params![record.identity.as_str()], |row| Ok((row.get::<_, u64>(0)?, row.get::<_, u64>(1)?)))
                .optional()
                .map_err(|e| io(format!("query: {e}")))?;
            drop(stmt);

            if let Some((current_token, current_generation)) = existing {
                if fencing_token < current_token && !breaks::on(breaks::CONTINUITY_UPSERT_FENCE) {
                    return Err(stale_fencing_token(&record.identity, fencing_token, current_token));
                }
                if record.generation < current_generation {
                    return Err(stale_generation(&record.identity, record.generation, current_generation));
                }
            }

            connection
                .execute(
                    "INSERT INTO continuity_records (identity, agent_runtime_id, session_id, generation, checkpoint_version, fencing_token)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT(identity) DO UPDATE SET
                            agent_runtime_id = excluded.agent_runtime_id,
                            session_id = excluded.session_id,
                            generation = excluded.generation,
                            checkpoint_version = CASE
                                WHEN continuity_records.generation = excluded.generation
                                THEN MAX(continuity_records.checkpoint_version, excluded.checkpoint_version)
                                ELSE excluded.checkpoint_version
                            END,
                            fencing_token = excluded.fencing_token",
                    rusqlite::params![
                        record.identity.as_str(),
                        record.agent_runtime_id.as_str(),
                        record.session_id,
                        record.generation,
                        record.checkpoint_version,
                        fencing_token,
                    ],
                )
                .map_err(|e| io(format!("upsert record: {e}")))?;
            cx.crash_point("after_commit");
            Ok(())
        })
    }

    fn rollback_continuity_record(
        &self,
        cx: &Context,
        expected_attempt: Record,
        previous: Option<Record>,
        fencing_token: u64,
    ) -> Result<(), Error> {
        self.with_writer(cx, |connection| {
            if previous.as_ref().is_some_and(|record| record.identity != expected_attempt.identity) {
                return Err(corruption(format!(
                    "reset rollback identity mismatch: attempted {}, previous {}",
                    expected_attempt.identity,
                    previous.as_ref().map(|record| record.identity.as_str()).unwrap_or_default(),
                )));
            }

            let tx = connection.unchecked_transaction().map_err(|e| io(format!("begin tx: {e}")))?;
            let current = tx
                .query_row(
                    "SELECT agent_runtime_id, session_id, generation, fencing_token
                         FROM continuity_records WHERE identity = ?1",
                    rusqlite::params![expected_attempt.identity.as_str()],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, u64>(2)?, row.get::<_, u64>(3)?)),
                )
                .optional()
                .map_err(|e| io(format!("query: {e}")))?
                .ok_or_else(|| not_found(&expected_attempt.identity))?;

            let (current_runtime_id, current_session_id, current_generation, current_token) = current;
            if current_token != fencing_token {
                return Err(stale_fencing_token(&expected_attempt.identity, fencing_token, current_token));
            }
            if current_runtime_id != expected_attempt.agent_runtime_id.as_str()
                || current_session_id != expected_attempt.session_id
                || current_generation != expected_attempt.generation
            {
                return Err(stale_generation(&expected_attempt.identity, expected_attempt.generation, current_generation));
            }

            // Only the provisional reset generation is abandoned. Older
            // snapshots remain the rollback authority for the restored
            // row, while a concurrently advanced generation is protected
            // by the exact CAS above.
            tx.execute(
                "DELETE FROM session_snapshots WHERE identity = ?1 AND generation = ?2",
                rusqlite::params![expected_attempt.identity.as_str(), expected_attempt.generation,],
            )
            .map_err(|e| io(format!("delete attempted snapshots: {e}")))?;
            cx.crash_point("after_snapshots_delete");

            if let Some(previous) = previous {
                tx.execute(
                    "UPDATE continuity_records
                         SET agent_runtime_id = ?1,
                             session_id = ?2,
                             generation = ?3,
                             checkpoint_version = ?4,
                             fencing_token = ?5
                         WHERE identity = ?6",
                    rusqlite::params![
                        previous.agent_runtime_id.as_str(),
                        previous.session_id,
                        previous.generation,
                        previous.checkpoint_version,
                        fencing_token,
                        expected_attempt.identity.as_str(),
                    ],
                )
                .map_err(|e| io(format!("restore previous record: {e}")))?;
            } else {
                tx.execute("DELETE FROM continuity_records WHERE identity = ?1", rusqlite::params![expected_attempt.identity.as_str()])
                    .map_err(|e| io(format!("delete attempted record: {e}")))?;
            }

            tx.commit().map_err(|e| io(format!("commit tx: {e}")))?;
            cx.crash_point("after_commit");
            Ok(())
        })
    }

    fn delete_continuity_record(&self, cx: &Context, identity: String, fencing_token: u64) -> Result<(), Error> {
        self.with_writer(cx, |connection| {
            // Keep the fence check and both deletes in one transaction so
            // failures cannot leave a half-deleted identity.
            let tx = connection.unchecked_transaction().map_err(|e| io(format!("begin tx: {e}")))?;

            let mut stmt = tx
                .prepare_cached("SELECT fencing_token FROM continuity_records WHERE identity = ?1")
                .map_err(|e| io(format!("prepare: {e}")))?;
            let existing_token = stmt
                .query_row(rusqlite::params![identity.as_str()], |row| row.get::<_, u64>(0))
                .optional()
                .map_err(|e| io(format!("query: {e}")))?;
            drop(stmt);

            if let Some(current) = existing_token
                && fencing_token < current
            {
                return Err(stale_fencing_token(&identity, fencing_token, current));
            }

            tx.execute("DELETE FROM session_snapshots WHERE identity = ?1", rusqlite::params![identity.as_str()])
                .map_err(|e| io(format!("delete snapshots: {e}")))?;
            cx.crash_point("after_snapshots_delete");
            tx.execute("DELETE FROM continuity_records WHERE identity = ?1", rusqlite::params![identity.as_str()])
                .map_err(|e| io(format!("delete record: {e}")))?;
            tx.commit().map_err(|e| io(format!("commit tx: {e}")))?;
            cx.crash_point("after_commit");
            Ok(())
        })
    }
}

/// `AgentRuntimeId::parse` and `SessionId::parse` are not shown (READINGS
/// C2): every string the kit sends is one.
fn parse_runtime_id(s: &str) -> Result<String, String> {
    Ok(s.to_string())
}
fn parse_session_id(s: &str) -> Result<String, String> {
    Ok(s.to_string())
}

/// `meerkat_core::session_store::session_projection_cas_token(&session)` is
/// not shown (READINGS C1): the snapshot read as a JSON document (any JSON
/// value is a session here), written back as serde_json writes a `Value`
/// (compact, keys sorted), and its 64-bit FNV-1a, in hex. Declared
/// `snapshot_revision: "opaque"`.
fn session_projection_cas_token(session: &Value) -> Result<String, Error> {
    let text = serde_json::to_vec(session).map_err(|e| io(format!("session projection: {e}")))?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Ok(format!("proj-fnv1a64-{h:016x}"))
}

#[derive(Serialize, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Record {
    identity: String,
    agent_runtime_id: String,
    session_id: String,
    generation: u64,
    checkpoint_version: u64,
}

#[derive(Serialize)]
struct Resolution {
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<Record>,
}

#[derive(Serialize)]
struct Snapshot {
    #[serde(with = "wire::bytes")]
    data: Vec<u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotWrite {
    identity: String,
    session_id: String,
    generation: u64,
    checkpoint_version: u64,
    fencing_token: u64,
    #[serde(with = "wire::bytes")]
    data: Vec<u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Identities {
    identities: Option<Vec<String>>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArg {
    session_id: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Candidate {
    candidate: SnapshotWrite,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteIfRevision {
    session_id: String,
    expected_revision: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Save {
    write: SnapshotWrite,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Upsert {
    record: Record,
    fence: u64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rollback {
    attempt: Record,
    previous: Option<Record>,
    fence: u64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Delete {
    identity: String,
    fence: u64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

impl Store for LocalContinuityStore {
    fn apply(&self, cx: &Context, op: &str, a: Value) -> Result<Value, Error> {
        match op {
            "resolve_many" => {
                let a: Identities = args(op, a)?;
                result(&self.resolve_many(cx, a.identities.unwrap_or_default())?)
            }
            "load_session_snapshot" => {
                let a: SessionArg = args(op, a)?;
                result(&self.load_session_snapshot(cx, a.session_id)?)
            }
            "session_snapshot_matches_current" => {
                let a: Candidate = args(op, a)?;
                result(&self.session_snapshot_matches_current(cx, a.candidate)?)
            }
            "delete_session_snapshot_if_current_revision" => {
                let a: DeleteIfRevision = args(op, a)?;
                result(&self.delete_session_snapshot_if_current_revision(cx, a.session_id, a.expected_revision)?)
            }
            "save_session_snapshot" => {
                let a: Save = args(op, a)?;
                self.save_session_snapshot(cx, a.write).map(|()| Value::Null)
            }
            "upsert_continuity_record" => {
                let a: Upsert = args(op, a)?;
                self.upsert_continuity_record(cx, a.record, a.fence).map(|()| Value::Null)
            }
            "rollback_continuity_record" => {
                let a: Rollback = args(op, a)?;
                self.rollback_continuity_record(cx, a.attempt, a.previous, a.fence).map(|()| Value::Null)
            }
            "delete_continuity_record" => {
                let a: Delete = args(op, a)?;
                self.delete_continuity_record(cx, a.identity, a.fence).map(|()| Value::Null)
            }
            "max_fencing_token" => {
                let _: NoArgs = args(op, a)?;
                result(&self.max_fencing_token(cx)?)
            }
            _ => Err(Error::unknown_op(NAME, op)),
        }
    }
}
