//! Seed 002, onlyne `ClientStore` + `SessionLedger`, on synchronous
//! rusqlite: the seed's DDL, SQL and checks, on one connection behind the
//! store's lock (the crate's `Db`: `Db::call` is the seed's `self.conn()?`
//! and its statements, with a yield point before the lock is taken and
//! after it is given back). Every write is one statement, or
//! `upsert_session`'s transaction, so two processes may share a file
//! (shared_files). The helpers the seed imports from `crate::server` and
//! does not show are read in READINGS.md (K-entries).

use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use storecheck_backend::wire::Time;
use storecheck_backend::{Context, Db, Error, OpenRequest, Store, args, result};

pub const NAME: &str = "client";

pub const CRASH_POINTS: &[&str] = &[
    "upsert_session/after_session_write",
    "upsert_session/after_close_others",
    "bind_task/after_close_others",
    "enqueue_intent/after_commit",
    "bump_intent/after_commit",
    "defer_intent/after_commit",
    "accept_intent/after_commit",
    "exhaust_intent/after_commit",
    "delete_intent/after_commit",
    "append_event/after_commit",
    "upsert_session/after_commit",
    "bump_session_version/after_commit",
    "bind_task/after_commit",
    "release_binding/after_commit",
    "open_task/after_commit",
    "settle_task/after_commit",
    "insert_fault/after_commit",
];

const CLIENT_MARKER: &str = "onlyne-client";
const CLIENT_SCHEMA_VERSION: i64 = 3;
const DEFAULT_LIMIT: i64 = 100;
pub const INTENT_FLUSH_BATCH_SIZE: u32 = 100;

pub const CLIENT_DDL: &str = r#"-- The client's own mirror of the sessions it holds, keyed the way the server's
-- mirror is: a session row answers for a session, and which delivery that
-- session serves lives in `session_tasks` below.
--
-- Two columns are the client's alone, because only the process that holds a
-- session can answer them: `backend` names the backend that ran it (`acp`,
-- `exec`, `orca`, `external`, … — which one comes from the role's drive under
-- the placement this machine resolved) and `backend_ref` is the reference that
-- backend answers to. There is no `role` column: one client serves one role,
-- and the workspace config owns that fact.
CREATE TABLE IF NOT EXISTS sessions(
  session_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  agent_state TEXT NOT NULL,
  delivery_state TEXT NOT NULL,
  resource_state TEXT NOT NULL,
  recovery_substate TEXT NOT NULL,
  observed_json TEXT NOT NULL,
  backend TEXT,
  backend_ref TEXT,
  -- The (generation, seq) gate. The reducer's isolate-after-N and
  -- terminate-after-N policy needs a persisted counter, so this pair carries
  -- DEFAULT_ISOLATE_AFTER and DEFAULT_TERMINATE_AFTER.
  desired_json TEXT NOT NULL,
  mismatch_count INTEGER NOT NULL DEFAULT 0,
  -- When this client last wrote about the session. A reader judges a row's
  -- freshness by it, and the tuple's own version lives in the pair above.
  last_seen TEXT NOT NULL,
  -- When the tuple last moved. Both clocks are the kernel's unix seconds,
  -- encoded through this crate's own helper on every write.
  updated_at TEXT NOT NULL
);
-- Which delivery a session serves: the same table, columns and keys as the
-- server's, and the only place a binding lives on this side too.
CREATE TABLE IF NOT EXISTS session_tasks(
  session_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  bound_at TEXT NOT NULL,
  released_at TEXT,
  PRIMARY KEY (session_id, task_id)
);
CREATE INDEX IF NOT EXISTS session_tasks_task_idx ON session_tasks(task_id);
CREATE INDEX IF NOT EXISTS session_tasks_open_idx ON session_tasks(session_id, released_at);
-- The task's own record. How its work ended is not a session dimension: the
-- session tuple says what this session can prove about its agent, intent,
-- resource, and recovery line, and `project` needs the task's verdict handed
-- in before it can say whether the session is over. A row is opened when a
-- delivery becomes a session, from the envelope's causality, and settled once;
-- a verdict that arrives for a task this process never opened writes its own
-- row, so a completion is never dropped because of who opened what. `kind` is
-- how the delivery reached this role: `root` for work given here, `relay` for
-- work handed down from a parent task.
CREATE TABLE IF NOT EXISTS task(
  task_id TEXT PRIMARY KEY,
  kind TEXT,
  parent_task TEXT,
  hop INTEGER NOT NULL DEFAULT 0,
  attempt INTEGER NOT NULL DEFAULT 0,
  -- TaskState's own snake_case tag from onlyne-proto's lifecycle vocabulary.
  -- `pending` is the open state, and the settle write is the only thing that
  -- leaves it, so `settled_at IS NULL` and `task_state = 'pending'` answer the
  -- same question.
  task_state TEXT NOT NULL,
  opened_at TEXT NOT NULL,
  settled_at TEXT
);
CREATE TABLE IF NOT EXISTS intents(
  op_id TEXT PRIMARY KEY,
  env_json TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  state TEXT NOT NULL,
  next_attempt_at TEXT NOT NULL,
  receipt_json TEXT,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS intents_state_due_idx ON intents(state,next_attempt_at);
CREATE TABLE IF NOT EXISTS out_head_cache(
  task_id TEXT PRIMARY KEY,
  head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS prose_cache(
  role TEXT PRIMARY KEY,
  prose TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  cached_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS config_cache(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
-- The client keeps its own fault rows: the bridge records them locally, so a
-- restart still shows what the process found wrong.
CREATE TABLE IF NOT EXISTS faults(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT,
  role TEXT,
  session_id TEXT,
  generation INTEGER,
  seq INTEGER,
  desired_json TEXT,
  observed_json TEXT,
  intent TEXT,
  -- An exhausted intent is observable through the local fault and the fault
  -- report; the attempt count is what an operator reads before intervening.
  attempt INTEGER,
  backend_ref TEXT,
  kind TEXT NOT NULL,
  reason TEXT NOT NULL,
  state TEXT NOT NULL,
  -- Encoded from the kernel's unix seconds through this crate's own helper on
  -- every write.
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS faults_task_kind_generation_idx ON faults(task_id,kind,generation);
CREATE TABLE IF NOT EXISTS events(
  seq INTEGER PRIMARY KEY,
  type TEXT NOT NULL,
  data_json TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_type_idx ON events(type);"#;
/// Where `open_connection` keeps the marker (READINGS K1): a one-row table of
/// its own for the marker, SQLite's `user_version` for the schema version.
const MARKER_TABLE: &str = "onlyne_store_marker";

type StoreResult<T> = Result<T, Error>;

fn sqlite(e: rusqlite::Error) -> Error {
    Error::io(format!("sqlite: {e}"))
}

fn invalid(message: String) -> Error {
    Error::new("invalid_argument", message)
}

// --- The crate::server helpers the seed imports and does not show.

/// `rfc3339(Utc::now())`: UTC, nanoseconds, fixed width, so that the seed's
/// text comparisons (`next_attempt_at<=?`, `ORDER BY next_attempt_at`) are
/// time order (READINGS K2).
fn rfc3339(t: Time) -> String {
    t.format(9)
}

/// `unix_to_rfc3339(secs)`: whole seconds (K3).
fn unix_to_rfc3339(secs: i64) -> String {
    Time::from_unix_secs(secs).format(0)
}

/// `rfc3339_to_unix(text)`: the unix seconds of a stored time.
fn rfc3339_to_unix(text: &str) -> i64 {
    Time::parse(text).map(|t| t.secs).unwrap_or_default()
}

/// A stored time, as the wire carries it.
fn stored_time(text: &str) -> rusqlite::Result<Time> {
    Time::parse(text).map_err(|e| conversion_error(0, e))
}

/// `SESSION_ID_FOR_TASK` (K5): the session of the task's most recently
/// opened binding, open or released.
const SESSION_ID_FOR_TASK: &str = "(SELECT st.session_id FROM session_tasks AS st WHERE st.task_id=? ORDER BY st.rowid DESC LIMIT 1)";

/// `OPEN_BINDING_TASK` (K6): the task of the session's open binding, "" when
/// none.
const OPEN_BINDING_TASK: &str = "COALESCE((SELECT ob.task_id FROM session_tasks AS ob WHERE ob.session_id=sessions.session_id AND ob.released_at IS NULL ORDER BY ob.rowid DESC LIMIT 1),'')";

/// `open_binding_conn` (K7): close the session's other open bindings, then
/// open the pair: a released pair is opened anew (a new row), an open one is
/// left as it is. The count is how many rows the insert moved.
fn open_binding_conn(conn: &Connection, cx: &Context, session_id: &str, task_id: &str, at_secs: i64) -> StoreResult<usize> {
    let at = unix_to_rfc3339(at_secs);
    conn.execute(
        "UPDATE session_tasks SET released_at=? WHERE session_id=? AND task_id<>? AND released_at IS NULL",
        params![at, session_id, task_id],
    )
    .map_err(sqlite)?;
    cx.crash_point("after_close_others");
    conn.execute("DELETE FROM session_tasks WHERE session_id=? AND task_id=? AND released_at IS NOT NULL", params![session_id, task_id])
        .map_err(sqlite)?;
    conn.execute(
        "INSERT OR IGNORE INTO session_tasks(session_id,task_id,bound_at,released_at) VALUES(?,?,?,NULL)",
        params![session_id, task_id, at],
    )
    .map_err(sqlite)
}

/// `release_binding_conn`: only an open binding is released.
fn release_binding_conn(conn: &Connection, session_id: &str, task_id: &str, at_secs: i64) -> StoreResult<usize> {
    conn.execute(
        "UPDATE session_tasks SET released_at=? WHERE session_id=? AND task_id=? AND released_at IS NULL",
        params![unix_to_rfc3339(at_secs), session_id, task_id],
    )
    .map_err(sqlite)
}

/// `append_event_conn` (K9): `seq INTEGER PRIMARY KEY` given no value, so
/// SQLite numbers the event (one past the largest).
fn append_event_conn(conn: &Connection, now: Time, kind: &str, data: &Value) -> StoreResult<i64> {
    conn.execute("INSERT INTO events(type,data_json,created_at) VALUES(?,?,?)", params![kind, encode(data)?, rfc3339(now)])
        .map_err(sqlite)?;
    Ok(conn.last_insert_rowid())
}

/// `events_since_conn` (K10).
fn events_since_conn(conn: &Connection, seq: i64, limit: u32) -> StoreResult<Vec<EventRecord>> {
    let mut stmt = conn.prepare("SELECT seq,type,data_json,created_at FROM events WHERE seq>? ORDER BY seq LIMIT ?").map_err(sqlite)?;
    let rows = stmt
        .query_map(params![seq, sql_limit(limit)], |r| {
            let data: String = r.get(2)?;
            Ok(EventRecord {
                seq: r.get(0)?,
                kind: r.get(1)?,
                data: decode_json(&data).map_err(|e| conversion_error(2, e))?,
                created_at: stored_time(&r.get::<_, String>(3)?)?,
            })
        })
        .map_err(sqlite)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sqlite)?;
    Ok(rows)
}

/// `event_head_conn` (K10).
fn event_head_conn(conn: &Connection) -> StoreResult<i64> {
    conn.query_row("SELECT COALESCE(MAX(seq),0) FROM events", [], |r| r.get(0)).map_err(sqlite)
}

/// `head_preview` (K8): at most 240 bytes of the head, cut at a character
/// boundary, with no mark.
fn head_preview(head: &str) -> String {
    let mut end = head.len().min(240);
    while !head.is_char_boundary(end) {
        end -= 1;
    }
    head[..end].to_string()
}

/// `string_tag(&task_state)` (K11): onlyne_proto's TaskState, whose words
/// the seed does not list; these four are the ones it names (`pending` is
/// "the open state"), and another word cannot be a TaskState.
fn string_tag(state: &str) -> StoreResult<String> {
    match state {
        "pending" | "completed" | "failed" | "cancelled" => Ok(state.to_string()),
        other => Err(invalid(format!("{other:?} is not a TaskState (pending, completed, failed, cancelled)"))),
    }
}

/// `serde_json::to_string(value)`: a `Value` as serde writes it.
fn encode(v: &Value) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| Error::io(format!("serialization: {e}")))
}

fn decode_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// A JSON text off the wire as the seed's `&Value` parameter: not JSON is
/// refused (K15); `null` is the JSON value null.
fn json_arg(what: &str, text: Option<String>) -> StoreResult<Value> {
    match text {
        None => Ok(Value::Null),
        Some(t) => serde_json::from_str(&t).map_err(|e| invalid(format!("{what} is not JSON: {e}"))),
    }
}

/// A stored JSON value back on the wire: null is none.
fn json_out(v: &Value) -> Option<String> {
    if v.is_null() { None } else { Some(v.to_string()) }
}

// --- The store.

pub struct ClientStore {
    path: String,
    inner: Db,
    /// The open failed the schema gate: nothing else runs.
    closed: AtomicBool,
}

impl ClientStore {
    pub fn open(req: &OpenRequest) -> StoreResult<Self> {
        let conn = open_connection(req, "client", CLIENT_MARKER, CLIENT_DDL, CLIENT_SCHEMA_VERSION)?;
        Ok(Self { path: req.path.clone().unwrap_or_else(|| ":memory:".into()), inner: Db::new(conn), closed: AtomicBool::new(false) })
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    fn now(cx: &Context) -> Time {
        Time::from_unix_ms(cx.now_ms())
    }

    fn write<T>(&self, cx: &Context, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        self.inner.call(cx, true, f)
    }

    fn read<T>(&self, cx: &Context, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        self.inner.call(cx, false, f)
    }

    pub fn enqueue_intent(&self, cx: &Context, op_id: &str, env_json: &Value) -> StoreResult<bool> {
        self.write(cx, |conn| {
            let now = rfc3339(Self::now(cx));
            let changed = conn.execute(
                "INSERT OR IGNORE INTO intents(op_id,env_json,attempt,state,next_attempt_at,receipt_json,last_error,created_at,updated_at) VALUES(?,?,0,'pending',?,NULL,NULL,?,?)",
                params![op_id, encode(env_json)?, now, now, now],
            ).map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn due_intents(&self, cx: &Context, now: Time, limit: u32) -> StoreResult<Vec<IntentRow>> {
        self.read(cx, |conn| {
            let rows = conn
                .prepare(
                    "SELECT op_id,env_json,attempt,state,next_attempt_at,receipt_json,last_error,created_at,updated_at FROM intents WHERE state IN ('pending','retrying') AND next_attempt_at<=? ORDER BY next_attempt_at,created_at,rowid LIMIT ?",
                ).map_err(sqlite)?
                .query_map(params![rfc3339(now), sql_limit(limit)], intent_row).map_err(sqlite)?
                .collect::<Result<Vec<_>, _>>().map_err(sqlite)?;
            Ok(rows)
        })
    }

    pub fn bump_intent(&self, cx: &Context, op_id: &str, next_attempt_at: Time, error: &str) -> StoreResult<bool> {
        self.write(cx, |conn| {
            let changed = conn.execute(
                "UPDATE intents SET state='retrying',attempt=attempt+1,next_attempt_at=?,last_error=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')",
                params![rfc3339(next_attempt_at), error, rfc3339(Self::now(cx)), op_id],
            ).map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn defer_intent(&self, cx: &Context, op_id: &str, next_attempt_at: Time, error: &str) -> StoreResult<bool> {
        self.write(cx, |conn| {
            let changed = conn.execute(
                "UPDATE intents SET state='retrying',next_attempt_at=?,last_error=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')",
                params![rfc3339(next_attempt_at), error, rfc3339(Self::now(cx)), op_id],
            ).map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn accept_intent(&self, cx: &Context, op_id: &str, receipt_json: &Value) -> StoreResult<bool> {
        self.write(cx, |conn| {
            let changed = conn
                .execute(
                    "UPDATE intents SET state='accepted',receipt_json=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')",
                    params![encode(receipt_json)?, rfc3339(Self::now(cx)), op_id],
                )
                .map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn exhaust_intent(&self, cx: &Context, op_id: &str, error: &str) -> StoreResult<bool> {
        self.write(cx, |conn| {
            let changed = conn
                .execute(
                    "UPDATE intents SET state='exhausted',last_error=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')",
                    params![error, rfc3339(Self::now(cx)), op_id],
                )
                .map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn pending_intent_count(&self, cx: &Context) -> StoreResult<i64> {
        self.read(cx, |conn| {
            conn.query_row("SELECT COUNT(*) FROM intents WHERE state IN ('pending','retrying')", [], |r| r.get(0)).map_err(sqlite)
        })
    }

    pub fn delete_intent(&self, cx: &Context, op_id: &str) -> StoreResult<bool> {
        self.write(cx, |conn| Ok(conn.execute("DELETE FROM intents WHERE op_id=?", params![op_id]).map_err(sqlite)? == 1))
    }

    pub fn flush_order(&self, cx: &Context) -> StoreResult<Vec<IntentRow>> {
        self.due_intents(cx, Self::now(cx), INTENT_FLUSH_BATCH_SIZE)
    }

    /// Not in the seed (the contract adds it, K18): one row as it is.
    pub fn intent(&self, cx: &Context, op_id: &str) -> StoreResult<Option<IntentRow>> {
        self.read(cx, |conn| {
            conn.query_row(
                "SELECT op_id,env_json,attempt,state,next_attempt_at,receipt_json,last_error,created_at,updated_at FROM intents WHERE op_id=?",
                params![op_id],
                intent_row,
            )
            .optional()
            .map_err(sqlite)
        })
    }

    pub fn append_event(&self, cx: &Context, kind: &str, data: &Value) -> StoreResult<i64> {
        self.write(cx, |conn| append_event_conn(conn, Self::now(cx), kind, data))
    }

    pub fn events_since(&self, cx: &Context, seq: i64, limit: u32) -> StoreResult<Vec<EventRecord>> {
        self.read(cx, |conn| events_since_conn(conn, seq, limit))
    }

    pub fn event_head(&self, cx: &Context) -> StoreResult<i64> {
        self.read(cx, event_head_conn)
    }

    pub fn put_out_head(&self, cx: &Context, task_id: &str, head: &str) -> StoreResult<bool> {
        self.write(cx, |conn| {
            Ok(conn
                .execute(
                    "INSERT INTO out_head_cache(task_id,head) VALUES(?,?) ON CONFLICT(task_id) DO UPDATE SET head=excluded.head",
                    params![task_id, head_preview(head)],
                )
                .map_err(sqlite)?
                == 1)
        })
    }

    pub fn out_head(&self, cx: &Context, task_id: &str) -> StoreResult<Option<String>> {
        self.read(cx, |conn| {
            conn.query_row("SELECT head FROM out_head_cache WHERE task_id=?", params![task_id], |r| r.get(0)).optional().map_err(sqlite)
        })
    }

    pub fn put_prose(&self, cx: &Context, role: &str, prose: &str, spec_hash: &str) -> StoreResult<bool> {
        self.write(cx, |conn| {
            Ok(conn.execute(
                "INSERT INTO prose_cache(role,prose,spec_hash,cached_at) VALUES(?,?,?,?) ON CONFLICT(role) DO UPDATE SET prose=excluded.prose,spec_hash=excluded.spec_hash,cached_at=excluded.cached_at",
                params![role, prose, spec_hash, rfc3339(Self::now(cx))],
            ).map_err(sqlite)? == 1)
        })
    }

    /// The seed's `prose` answers (prose, spec_hash); the contract also
    /// wants the row's cached_at (K17).
    pub fn prose(&self, cx: &Context, role: &str) -> StoreResult<Option<(String, String, String)>> {
        self.read(cx, |conn| {
            conn.query_row("SELECT prose,spec_hash,cached_at FROM prose_cache WHERE role=?", params![role], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(sqlite)
        })
    }

    pub fn put_config(&self, cx: &Context, key: &str, value: &str) -> StoreResult<bool> {
        self.write(cx, |conn| {
            Ok(conn
                .execute(
                    "INSERT INTO config_cache(key,value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    params![key, value],
                )
                .map_err(sqlite)?
                == 1)
        })
    }

    pub fn config(&self, cx: &Context, key: &str) -> StoreResult<Option<String>> {
        self.read(cx, |conn| {
            conn.query_row("SELECT value FROM config_cache WHERE key=?", params![key], |r| r.get(0)).optional().map_err(sqlite)
        })
    }

    pub fn bump_session_version(&self, cx: &Context, task_id: &str, generation: u64, seq: u64) -> StoreResult<bool> {
        self.write(cx, |conn| {
            let generation = generation as i64;
            let seq = seq as i64;
            let changed = conn
                .execute(
                    &format!(
                        "UPDATE sessions SET generation=?,seq=?,updated_at=? WHERE session_id={SESSION_ID_FOR_TASK} AND (? > generation OR (? = generation AND ? > seq))"
                    ),
                    params![generation, seq, rfc3339(Self::now(cx)), task_id, generation, generation, seq],
                )
                .map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn open_task(&self, cx: &Context, causality: &Causality, kind: &str) -> StoreResult<bool> {
        if kind.is_empty() {
            // K12: a kind is how the delivery reached this role; the empty
            // word names no way.
            return Err(invalid("open_task: the empty kind names no way a delivery reached this role".into()));
        }
        self.write(cx, |conn| {
            let now = rfc3339(Self::now(cx));
            let changed = conn.execute(
                "INSERT INTO task(task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at) VALUES(?,?,?,?,?,'pending',?,NULL)
             ON CONFLICT(task_id) DO UPDATE SET kind=excluded.kind,parent_task=excluded.parent_task,hop=excluded.hop,attempt=MAX(excluded.attempt,task.attempt)",
                params![causality.task, kind, causality.parent_task, causality.hop as i64, causality.attempt as i64, now],
            ).map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn settle_task(&self, cx: &Context, task_id: &str, task_state: &str) -> StoreResult<bool> {
        let tag = string_tag(task_state)?;
        self.write(cx, |conn| {
            let now = rfc3339(Self::now(cx));
            let changed = conn.execute(
                "INSERT INTO task(task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at) VALUES(?,NULL,NULL,0,0,?,?,?)
             ON CONFLICT(task_id) DO UPDATE SET task_state=excluded.task_state,settled_at=excluded.settled_at WHERE task.settled_at IS NULL",
                params![task_id, tag, now, now],
            ).map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    pub fn task(&self, cx: &Context, task_id: &str) -> StoreResult<Option<TaskRow>> {
        self.read(cx, |conn| {
            conn.query_row(
                "SELECT task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at FROM task WHERE task_id=?",
                params![task_id],
                task_row,
            )
            .optional()
            .map_err(sqlite)
        })
    }

    pub fn open_tasks(&self, cx: &Context, limit: u32) -> StoreResult<Vec<TaskRow>> {
        self.read(cx, |conn| {
            let rows = conn
                .prepare("SELECT task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at FROM task WHERE settled_at IS NULL ORDER BY opened_at,rowid LIMIT ?")
                .map_err(sqlite)?
                .query_map(params![sql_limit(limit)], task_row)
                .map_err(sqlite)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sqlite)?;
            Ok(rows)
        })
    }

    pub fn active_sessions(&self, cx: &Context) -> StoreResult<Vec<LiveSession>> {
        self.read(cx, |conn| {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT session_id,{OPEN_BINDING_TASK},resource_state FROM sessions \
             WHERE agent_state IN ('booting', 'ready', 'idle') \
             AND (resource_state != 'closed' OR agent_state IN ('ready', 'idle')) \
             ORDER BY session_id"
                ))
                .map_err(sqlite)?;
            let rows = stmt
                .query_map(params![], |row| {
                    let resource_state: String = row.get(2)?;
                    Ok(LiveSession { session_id: row.get(0)?, task_id: row.get(1)?, suspended: resource_state == "closed" })
                })
                .map_err(sqlite)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sqlite)?;
            Ok(rows)
        })
    }

    pub fn release_binding(&self, cx: &Context, session_id: &str, task_id: &str) -> StoreResult<usize> {
        self.write(cx, |conn| release_binding_conn(conn, session_id, task_id, Self::now(cx).secs))
    }

    pub fn bind_task(&self, cx: &Context, session_id: &str, task_id: &str) -> StoreResult<usize> {
        self.write(cx, |conn| open_binding_conn(conn, cx, session_id, task_id, Self::now(cx).secs))
    }

    // --- SessionLedger.

    fn get_session(&self, cx: &Context, task_id: &str) -> StoreResult<Option<SessionRecord>> {
        self.read(cx, |conn| {
            conn.query_row(
                &format!("SELECT {} FROM sessions WHERE session_id={SESSION_ID_FOR_TASK}", CLIENT_SESSION_COLUMNS),
                params![task_id],
                |row| session_record_row(row, task_id),
            )
            .optional()
            .map_err(sqlite)
        })
    }

    fn upsert_session(&self, cx: &Context, task_id: &str, version: &VersionedSession) -> StoreResult<bool> {
        self.write(cx, |conn| {
            let (backend, session_id) = backend_parts(task_id, &version.backend_ref);
            let tx = conn.unchecked_transaction().map_err(sqlite)?;
            let changed = tx.execute(
                "INSERT INTO sessions(session_id,generation,seq,agent_state,delivery_state,resource_state,recovery_substate,observed_json,backend,backend_ref,desired_json,mismatch_count,last_seen,updated_at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)
             ON CONFLICT(session_id) DO UPDATE SET generation=excluded.generation,seq=excluded.seq,agent_state=excluded.agent_state,delivery_state=excluded.delivery_state,resource_state=excluded.resource_state,recovery_substate=excluded.recovery_substate,observed_json=excluded.observed_json,backend=COALESCE(excluded.backend,sessions.backend),backend_ref=excluded.backend_ref,desired_json=excluded.desired_json,mismatch_count=excluded.mismatch_count,last_seen=excluded.last_seen,updated_at=excluded.updated_at
             WHERE excluded.generation > sessions.generation OR (excluded.generation = sessions.generation AND excluded.seq > sessions.seq)",
                params![
                    &session_id,
                    version.generation,
                    version.seq,
                    version.agent_state,
                    version.delivery_state,
                    version.resource_state,
                    version.recovery_substate,
                    version.observed_json,
                    backend,
                    version.backend_ref,
                    version.desired_json,
                    version.mismatch_count,
                    unix_to_rfc3339(version.updated_at),
                    unix_to_rfc3339(version.updated_at)
                ],
            ).map_err(sqlite)?;
            cx.crash_point("after_session_write");
            if changed == 1 {
                open_binding_conn(&tx, cx, &session_id, task_id, version.updated_at)?;
            }
            tx.commit().map_err(sqlite)?;
            Ok(changed == 1)
        })
    }

    fn task_is_known(&self, cx: &Context, task_id: &str) -> StoreResult<bool> {
        self.read(cx, |conn| {
            // The binding is the record of a delivery having become a session here,
            // which is exactly what this asks.
            let session_count: i64 =
                conn.query_row("SELECT COUNT(*) FROM session_tasks WHERE task_id=?", params![task_id], |r| r.get(0)).map_err(sqlite)?;
            if session_count > 0 {
                return Ok(true);
            }
            Ok(intent_stats(conn, task_id)?.is_some())
        })
    }

    fn task_attempt(&self, cx: &Context, task_id: &str) -> StoreResult<i64> {
        self.read(cx, |conn| Ok(intent_stats(conn, task_id)?.unwrap_or(0)))
    }

    fn list_faults(&self, cx: &Context, task_id: &str) -> StoreResult<Vec<FaultRecord>> {
        self.read(cx, |conn| {
            let rows = conn
                .prepare(
                    "SELECT id,task_id,session_id,generation,seq,desired_json,observed_json,intent,attempt,backend_ref,kind,reason,state,created_at FROM faults WHERE task_id=? ORDER BY id",
                ).map_err(sqlite)?
                .query_map(params![task_id], fault_record_row).map_err(sqlite)?
                .collect::<Result<Vec<_>, _>>().map_err(sqlite)?;
            Ok(rows)
        })
    }

    fn insert_fault(&self, cx: &Context, fault: &FaultRecord) -> StoreResult<i64> {
        self.write(cx, |conn| {
            conn.execute(
                "INSERT INTO faults(task_id,role,session_id,generation,seq,desired_json,observed_json,intent,attempt,backend_ref,kind,reason,state,created_at) VALUES(?,NULL,?,?,?,?,?,?,?,?,?,?,?,?)",
                params![
                    fault.task_id,
                    fault.session_id,
                    fault.generation,
                    fault.seq,
                    fault.desired_json,
                    fault.observed_json,
                    fault.intent,
                    fault.attempt,
                    fault.backend_ref,
                    fault.kind,
                    fault.reason,
                    fault.state,
                    unix_to_rfc3339(fault.created_at)
                ],
            ).map_err(sqlite)?;
            Ok(conn.last_insert_rowid())
        })
    }
}

/// `open_connection(&path, "client", CLIENT_MARKER, CLIENT_DDL,
/// CLIENT_SCHEMA_VERSION)` (K1): the marker is read before anything is
/// written, so a refused file is left byte for byte; a file with no marker
/// table is taken as new (the DDL is all `IF NOT EXISTS`) and marked.
fn open_connection(req: &OpenRequest, _name: &str, marker: &str, ddl: &str, version: i64) -> StoreResult<Connection> {
    let conn = Db::connect(req)?;
    let marked: bool = conn
        .query_row("SELECT COUNT(*) > 0 FROM sqlite_master WHERE type='table' AND name=?", [MARKER_TABLE], |r| r.get(0))
        .map_err(sqlite)?;
    if marked {
        check_marker(&conn, req, marker, version)?;
    }
    if req.path.is_some() {
        conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(())).map_err(sqlite)?;
    }
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE;
         {ddl}
         CREATE TABLE IF NOT EXISTS {MARKER_TABLE}(marker TEXT NOT NULL);
         INSERT INTO {MARKER_TABLE}(marker) SELECT '{marker}' WHERE NOT EXISTS (SELECT 1 FROM {MARKER_TABLE});
         COMMIT;"
    ))
    .map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        sqlite(e)
    })?;
    // A file another process marked meanwhile is checked as any other.
    let stamped: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(sqlite)?;
    if stamped == 0 {
        conn.execute_batch(&format!("PRAGMA user_version={version}")).map_err(sqlite)?;
    }
    check_marker(&conn, req, marker, version)?;
    Ok(conn)
}

fn check_marker(conn: &Connection, req: &OpenRequest, marker: &str, version: i64) -> StoreResult<()> {
    let found: Option<String> =
        conn.query_row(&format!("SELECT marker FROM {MARKER_TABLE} LIMIT 1"), [], |r| r.get(0)).optional().map_err(sqlite)?;
    let found_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(sqlite)?;
    if found.as_deref() != Some(marker) || found_version != version {
        return Err(Error::new(
            "schema_mismatch",
            format!(
                "client store {}: marker {} version {found_version}, this build reads {marker} version {version}",
                req.path.as_deref().unwrap_or(":memory:"),
                found.as_deref().map_or("(none)".to_string(), |m| format!("{m:?}"))
            ),
        ));
    }
    Ok(())
}

/// write_foreign_schema: a new file this store's open reads as carrying
/// `marker` at `version`, in its own layout.
pub fn write_foreign_schema(path: &str, marker: &str, version: i64) -> StoreResult<()> {
    if std::path::Path::new(path).exists() {
        return Err(Error::bad_request(format!("write_foreign_schema: {path} exists already")));
    }
    let conn = Connection::open(path).map_err(sqlite)?;
    conn.execute_batch(&format!("CREATE TABLE {MARKER_TABLE}(marker TEXT NOT NULL); PRAGMA user_version={version};")).map_err(sqlite)?;
    conn.execute(&format!("INSERT INTO {MARKER_TABLE}(marker) VALUES(?)"), [marker]).map_err(sqlite)?;
    Ok(())
}

fn intent_stats(conn: &Connection, task_id: &str) -> StoreResult<Option<i64>> {
    let mut stmt = conn.prepare("SELECT env_json,attempt FROM intents").map_err(sqlite)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))).map_err(sqlite)?;
    let mut max_attempt: Option<i64> = None;
    for row in rows {
        let (env_json, attempt) = row.map_err(sqlite)?;
        if intent_task_matches(&env_json, task_id) {
            max_attempt = Some(max_attempt.map_or(attempt, |current| current.max(attempt)));
        }
    }
    Ok(max_attempt)
}

fn intent_task_matches(env_json: &str, task_id: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(env_json) else {
        return false;
    };
    value.get("causality").and_then(|v| v.get("task")).and_then(Value::as_str) == Some(task_id)
}

fn backend_parts(task_id: &str, backend_ref: &str) -> (Option<String>, String) {
    let parsed = serde_json::from_str::<Value>(backend_ref).ok();
    let backend = parsed.as_ref().and_then(|v| v.get("backend")).and_then(Value::as_str).map(str::to_string);
    let session_id = parsed.as_ref().and_then(|v| v.get("task_id")).and_then(Value::as_str).unwrap_or(task_id).to_string();
    (backend, session_id)
}

const CLIENT_SESSION_COLUMNS: &str = "session_id,agent_state,delivery_state,resource_state,recovery_substate,desired_json,observed_json,generation,seq,backend_ref,mismatch_count,updated_at";

fn session_record_row(r: &Row<'_>, task_id: &str) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        session_id: r.get(0)?,
        task_id: task_id.to_string(),
        agent_state: r.get(1)?,
        delivery_state: r.get(2)?,
        resource_state: r.get(3)?,
        recovery_substate: r.get(4)?,
        desired_json: r.get(5)?,
        observed_json: r.get(6)?,
        generation: r.get(7)?,
        seq: r.get(8)?,
        backend_ref: r.get::<_, Option<String>>(9)?.unwrap_or_default(),
        mismatch_count: r.get(10)?,
        updated_at: Time::from_unix_secs(rfc3339_to_unix(&r.get::<_, String>(11)?)),
    })
}

fn task_row(r: &Row<'_>) -> rusqlite::Result<TaskRow> {
    let state_word: String = r.get(5)?;
    let task_state = string_tag(&state_word).map_err(|e| conversion_error(5, format!("task_state column holds {state_word:?}: {e}")))?;
    Ok(TaskRow {
        task_id: r.get(0)?,
        kind: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
        parent_task: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        hop: r.get(3)?,
        attempt: r.get(4)?,
        state: task_state,
        opened_at: stored_time(&r.get::<_, String>(6)?)?,
        settled_at: r.get::<_, Option<String>>(7)?.map(|t| stored_time(&t)).transpose()?,
    })
}

fn fault_record_row(r: &Row<'_>) -> rusqlite::Result<FaultRecord> {
    Ok(FaultRecord {
        id: r.get(0)?,
        task_id: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
        session_id: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        generation: r.get::<_, Option<i64>>(3)?.unwrap_or_default(),
        seq: r.get::<_, Option<i64>>(4)?.unwrap_or_default(),
        desired_json: r.get::<_, Option<String>>(5)?.unwrap_or_else(|| "{}".to_string()),
        observed_json: r.get::<_, Option<String>>(6)?.unwrap_or_else(|| "{}".to_string()),
        intent: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
        attempt: r.get::<_, Option<i64>>(8)?.unwrap_or_default(),
        backend_ref: r.get::<_, Option<String>>(9)?.unwrap_or_else(|| "{}".to_string()),
        kind: r.get(10)?,
        reason: r.get(11)?,
        state: r.get(12)?,
        created_at: r.get::<_, Option<String>>(13)?.map(|text| rfc3339_to_unix(&text)).unwrap_or_default(),
    })
}

fn intent_row(r: &Row<'_>) -> rusqlite::Result<IntentRow> {
    let env_text: String = r.get(1)?;
    let receipt_text: Option<String> = r.get(5)?;
    let env_json = decode_json(&env_text).map_err(|e| conversion_error(1, e))?;
    let receipt_json = receipt_text.map(|text| decode_json(&text).map_err(|e| conversion_error(5, e))).transpose()?;
    Ok(IntentRow {
        op_id: r.get(0)?,
        env_json,
        attempt: r.get(2)?,
        state: r.get(3)?,
        next_attempt_at: stored_time(&r.get::<_, String>(4)?)?,
        receipt_json,
        last_error: r.get(6)?,
        created_at: stored_time(&r.get::<_, String>(7)?)?,
        updated_at: stored_time(&r.get::<_, String>(8)?)?,
    })
}

fn sql_limit(limit: u32) -> i64 {
    if limit == 0 { DEFAULT_LIMIT } else { i64::from(limit.min(500)) }
}

fn conversion_error(index: usize, message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, Type::Text, message.into())
}

// --- The rows, and how they travel.

pub struct IntentRow {
    op_id: String,
    env_json: Value,
    attempt: i64,
    state: String,
    next_attempt_at: Time,
    receipt_json: Option<Value>,
    last_error: Option<String>,
    created_at: Time,
    updated_at: Time,
}

#[derive(Serialize)]
struct IntentWire {
    op_id: String,
    envelope: Option<String>,
    attempt: i64,
    state: String,
    next_attempt_at: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    receipt: Option<String>,
    last_error: String,
    created_at: Time,
    updated_at: Time,
}

impl IntentRow {
    fn wire(&self) -> IntentWire {
        IntentWire {
            op_id: self.op_id.clone(),
            envelope: json_out(&self.env_json),
            attempt: self.attempt,
            state: self.state.clone(),
            next_attempt_at: self.next_attempt_at,
            receipt: self.receipt_json.as_ref().and_then(json_out),
            last_error: self.last_error.clone().unwrap_or_default(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

pub struct EventRecord {
    seq: i64,
    kind: String,
    data: Value,
    created_at: Time,
}

#[derive(Serialize)]
struct EventWire {
    seq: i64,
    #[serde(rename = "type")]
    kind: String,
    data: Option<String>,
    created_at: Time,
}

#[derive(Serialize)]
pub struct TaskRow {
    task_id: String,
    kind: String,
    parent_task: String,
    hop: i64,
    attempt: i64,
    state: String,
    opened_at: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    settled_at: Option<Time>,
}

#[derive(Serialize)]
pub struct LiveSession {
    session_id: String,
    task_id: String,
    suspended: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Causality {
    task: String,
    parent_task: String,
    hop: u64,
    attempt: u64,
}

/// The tuple as the seed's VersionedSession holds it: `updated_at` in unix
/// seconds (the wire's time, cut to the second).
struct VersionedSession {
    generation: u64,
    seq: u64,
    agent_state: String,
    delivery_state: String,
    resource_state: String,
    recovery_substate: String,
    desired_json: String,
    observed_json: String,
    backend_ref: String,
    mismatch_count: i64,
    updated_at: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionedSessionWire {
    generation: u64,
    seq: u64,
    agent_state: String,
    delivery_state: String,
    resource_state: String,
    recovery_substate: String,
    desired_json: String,
    observed_json: String,
    backend_ref: String,
    mismatch_count: i64,
    updated_at: Time,
}

#[derive(Serialize)]
struct SessionRecord {
    session_id: String,
    task_id: String,
    generation: u64,
    seq: u64,
    agent_state: String,
    delivery_state: String,
    resource_state: String,
    recovery_substate: String,
    desired_json: String,
    observed_json: String,
    backend_ref: String,
    mismatch_count: i64,
    updated_at: Time,
}

/// A fault as the seed's FaultRecord holds it (created_at in unix seconds).
struct FaultRecord {
    id: i64,
    task_id: String,
    session_id: String,
    generation: i64,
    seq: i64,
    desired_json: String,
    observed_json: String,
    intent: String,
    attempt: i64,
    backend_ref: String,
    kind: String,
    reason: String,
    state: String,
    created_at: i64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultWire {
    id: i64,
    task_id: String,
    session_id: String,
    generation: i64,
    seq: i64,
    desired_json: String,
    observed_json: String,
    intent: String,
    attempt: i64,
    backend_ref: String,
    kind: String,
    reason: String,
    state: String,
    created_at: Time,
}

impl From<FaultWire> for FaultRecord {
    fn from(f: FaultWire) -> Self {
        FaultRecord {
            id: f.id,
            task_id: f.task_id,
            session_id: f.session_id,
            generation: f.generation,
            seq: f.seq,
            desired_json: f.desired_json,
            observed_json: f.observed_json,
            intent: f.intent,
            attempt: f.attempt,
            backend_ref: f.backend_ref,
            kind: f.kind,
            reason: f.reason,
            state: f.state,
            created_at: f.created_at.secs,
        }
    }
}

impl From<&FaultRecord> for FaultWire {
    fn from(f: &FaultRecord) -> Self {
        FaultWire {
            id: f.id,
            task_id: f.task_id.clone(),
            session_id: f.session_id.clone(),
            generation: f.generation,
            seq: f.seq,
            desired_json: f.desired_json.clone(),
            observed_json: f.observed_json.clone(),
            intent: f.intent.clone(),
            attempt: f.attempt,
            backend_ref: f.backend_ref.clone(),
            kind: f.kind.clone(),
            reason: f.reason.clone(),
            state: f.state.clone(),
            created_at: Time::from_unix_secs(f.created_at),
        }
    }
}

// --- The operations' arguments.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpId {
    op_id: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Enqueue {
    op_id: String,
    envelope: Option<String>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Due {
    now: Time,
    limit: u32,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Retry {
    op_id: String,
    next_attempt_at: Time,
    last_error: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Accept {
    op_id: String,
    receipt: Option<String>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Exhaust {
    op_id: String,
    last_error: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendEvent {
    #[serde(rename = "type")]
    kind: String,
    data: Option<String>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Since {
    seq: i64,
    limit: u32,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutOutHead {
    task_id: String,
    head: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskId {
    task_id: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutProse {
    role: String,
    prose: String,
    spec_hash: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Role {
    role: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutConfig {
    key: String,
    value: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    key: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpsertSession {
    task_id: String,
    version: VersionedSessionWire,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BumpSession {
    task_id: String,
    generation: u64,
    seq: u64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Binding {
    session_id: String,
    task_id: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenTask {
    causality: Causality,
    kind: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettleTask {
    task_id: String,
    state: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Limit {
    limit: u32,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InsertFault {
    fault: FaultWire,
}

impl Store for ClientStore {
    fn apply(&self, cx: &Context, op: &str, a: Value) -> Result<Value, Error> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(Error::io(format!("client store {} is closed", self.path())));
        }
        match op {
            "enqueue_intent" => {
                let a: Enqueue = args(op, a)?;
                result(&self.enqueue_intent(cx, &a.op_id, &json_arg("envelope", a.envelope)?)?)
            }
            "intent" => {
                let a: OpId = args(op, a)?;
                result(&self.intent(cx, &a.op_id)?.map(|r| r.wire()))
            }
            "due_intents" => {
                let a: Due = args(op, a)?;
                result(&self.due_intents(cx, a.now, a.limit)?.iter().map(IntentRow::wire).collect::<Vec<_>>())
            }
            "bump_intent" => {
                let a: Retry = args(op, a)?;
                result(&self.bump_intent(cx, &a.op_id, a.next_attempt_at, &a.last_error)?)
            }
            "defer_intent" => {
                let a: Retry = args(op, a)?;
                result(&self.defer_intent(cx, &a.op_id, a.next_attempt_at, &a.last_error)?)
            }
            "accept_intent" => {
                let a: Accept = args(op, a)?;
                result(&self.accept_intent(cx, &a.op_id, &json_arg("receipt", a.receipt)?)?)
            }
            "exhaust_intent" => {
                let a: Exhaust = args(op, a)?;
                result(&self.exhaust_intent(cx, &a.op_id, &a.last_error)?)
            }
            "delete_intent" => {
                let a: OpId = args(op, a)?;
                result(&self.delete_intent(cx, &a.op_id)?)
            }
            "pending_intent_count" => {
                let _: NoArgs = args(op, a)?;
                result(&self.pending_intent_count(cx)?)
            }
            "flush_order" => {
                let _: NoArgs = args(op, a)?;
                result(&self.flush_order(cx)?.iter().map(IntentRow::wire).collect::<Vec<_>>())
            }
            "append_event" => {
                let a: AppendEvent = args(op, a)?;
                result(&self.append_event(cx, &a.kind, &json_arg("data", a.data)?)?)
            }
            "events_since" => {
                let a: Since = args(op, a)?;
                let events = self.events_since(cx, a.seq, a.limit)?;
                result(
                    &events
                        .into_iter()
                        .map(|e| EventWire { seq: e.seq, kind: e.kind, data: json_out(&e.data), created_at: e.created_at })
                        .collect::<Vec<_>>(),
                )
            }
            "event_head" => {
                let _: NoArgs = args(op, a)?;
                result(&self.event_head(cx)?)
            }
            "put_out_head" => {
                let a: PutOutHead = args(op, a)?;
                self.put_out_head(cx, &a.task_id, &a.head).map(|_| Value::Null)
            }
            "out_head" => {
                let a: TaskId = args(op, a)?;
                result(&self.out_head(cx, &a.task_id)?)
            }
            "put_prose" => {
                let a: PutProse = args(op, a)?;
                self.put_prose(cx, &a.role, &a.prose, &a.spec_hash).map(|_| Value::Null)
            }
            "prose" => {
                let a: Role = args(op, a)?;
                match self.prose(cx, &a.role)? {
                    None => Ok(Value::Null),
                    Some((prose, spec_hash, cached_at)) => {
                        let cached_at = Time::parse(&cached_at).map_err(Error::io)?;
                        Ok(serde_json::json!({"prose": prose, "spec_hash": spec_hash, "cached_at": cached_at}))
                    }
                }
            }
            "put_config" => {
                let a: PutConfig = args(op, a)?;
                self.put_config(cx, &a.key, &a.value).map(|_| Value::Null)
            }
            "config" => {
                let a: Key = args(op, a)?;
                result(&self.config(cx, &a.key)?)
            }
            "upsert_session" => {
                let a: UpsertSession = args(op, a)?;
                let v = a.version;
                let version = VersionedSession {
                    generation: v.generation,
                    seq: v.seq,
                    agent_state: v.agent_state,
                    delivery_state: v.delivery_state,
                    resource_state: v.resource_state,
                    recovery_substate: v.recovery_substate,
                    desired_json: v.desired_json,
                    observed_json: v.observed_json,
                    backend_ref: v.backend_ref,
                    mismatch_count: v.mismatch_count,
                    updated_at: v.updated_at.secs,
                };
                result(&self.upsert_session(cx, &a.task_id, &version)?)
            }
            "bump_session_version" => {
                let a: BumpSession = args(op, a)?;
                result(&self.bump_session_version(cx, &a.task_id, a.generation, a.seq)?)
            }
            "get_session" => {
                let a: TaskId = args(op, a)?;
                result(&self.get_session(cx, &a.task_id)?)
            }
            "bind_task" => {
                let a: Binding = args(op, a)?;
                result(&(self.bind_task(cx, &a.session_id, &a.task_id)? > 0))
            }
            "release_binding" => {
                let a: Binding = args(op, a)?;
                result(&(self.release_binding(cx, &a.session_id, &a.task_id)? > 0))
            }
            "active_sessions" => {
                let _: NoArgs = args(op, a)?;
                result(&self.active_sessions(cx)?)
            }
            "open_task" => {
                let a: OpenTask = args(op, a)?;
                result(&self.open_task(cx, &a.causality, &a.kind)?)
            }
            "settle_task" => {
                let a: SettleTask = args(op, a)?;
                result(&self.settle_task(cx, &a.task_id, &a.state)?)
            }
            "task" => {
                let a: TaskId = args(op, a)?;
                result(&self.task(cx, &a.task_id)?)
            }
            "open_tasks" => {
                let a: Limit = args(op, a)?;
                result(&self.open_tasks(cx, a.limit)?)
            }
            "task_is_known" => {
                let a: TaskId = args(op, a)?;
                result(&self.task_is_known(cx, &a.task_id)?)
            }
            "task_attempt" => {
                let a: TaskId = args(op, a)?;
                result(&self.task_attempt(cx, &a.task_id)?)
            }
            "insert_fault" => {
                let a: InsertFault = args(op, a)?;
                result(&self.insert_fault(cx, &FaultRecord::from(a.fault))?)
            }
            "list_faults" => {
                let a: TaskId = args(op, a)?;
                result(&self.list_faults(cx, &a.task_id)?.iter().map(FaultWire::from).collect::<Vec<_>>())
            }
            _ => Err(Error::unknown_op(NAME, op)),
        }
    }
}
