"""The client store (seed 002: onlyne's ClientStore and its SessionLedger).

The DDL and every statement are the seed's. The seed's writes are one
statement each on its single connection (upsert_session: two, in one
transaction); here each is one Database.run transaction (BEGIN IMMEDIATE,
so that two processes on one file serialize exactly as the seed's one
connection does). The code the seed calls but does not show (open_connection
and its marker, rfc3339, head_preview, SESSION_ID_FOR_TASK, OPEN_BINDING_TASK,
open_binding_conn, release_binding_conn, append_event_conn,
events_since_conn, event_head_conn) is this backend's own reading: see
READINGS.md.
"""

import json
import os
import sqlite3

from readings import kit
from storecheck_protocol import (bad_request, Database, StoreError, fmt_ms, fmt_s,
                                 json_text_in, need, opt, text_to_ms, time_in, uint)

CLIENT_MARKER = "onlyne-client"
CLIENT_SCHEMA_VERSION = 3
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
INTENT_FLUSH_BATCH_SIZE = 100
HEAD_PREVIEW_CHARS = 160

# The seed's CLIENT_DDL, statement by statement (comments dropped).
CLIENT_DDL = [
    """CREATE TABLE IF NOT EXISTS sessions(
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
  desired_json TEXT NOT NULL,
  mismatch_count INTEGER NOT NULL DEFAULT 0,
  last_seen TEXT NOT NULL,
  updated_at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS session_tasks(
  session_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  bound_at TEXT NOT NULL,
  released_at TEXT,
  PRIMARY KEY (session_id, task_id)
)""",
    "CREATE INDEX IF NOT EXISTS session_tasks_task_idx ON session_tasks(task_id)",
    "CREATE INDEX IF NOT EXISTS session_tasks_open_idx ON session_tasks(session_id, released_at)",
    """CREATE TABLE IF NOT EXISTS task(
  task_id TEXT PRIMARY KEY,
  kind TEXT,
  parent_task TEXT,
  hop INTEGER NOT NULL DEFAULT 0,
  attempt INTEGER NOT NULL DEFAULT 0,
  task_state TEXT NOT NULL,
  opened_at TEXT NOT NULL,
  settled_at TEXT
)""",
    """CREATE TABLE IF NOT EXISTS intents(
  op_id TEXT PRIMARY KEY,
  env_json TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  state TEXT NOT NULL,
  next_attempt_at TEXT NOT NULL,
  receipt_json TEXT,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS intents_state_due_idx ON intents(state,next_attempt_at)",
    """CREATE TABLE IF NOT EXISTS out_head_cache(
  task_id TEXT PRIMARY KEY,
  head TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS prose_cache(
  role TEXT PRIMARY KEY,
  prose TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  cached_at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS config_cache(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS faults(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT,
  role TEXT,
  session_id TEXT,
  generation INTEGER,
  seq INTEGER,
  desired_json TEXT,
  observed_json TEXT,
  intent TEXT,
  attempt INTEGER,
  backend_ref TEXT,
  kind TEXT NOT NULL,
  reason TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS faults_task_kind_generation_idx ON faults(task_id,kind,generation)",
    """CREATE TABLE IF NOT EXISTS events(
  seq INTEGER PRIMARY KEY,
  type TEXT NOT NULL,
  data_json TEXT NOT NULL,
  created_at TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS events_type_idx ON events(type)",
]
CLIENT_TABLES = {"sessions", "session_tasks", "task", "intents", "out_head_cache", "prose_cache",
                 "config_cache", "faults", "events"}

# Where this backend keeps open_connection's marker (the seed does not show
# it): a key/value table of its own.
MARKER_TABLE = "store_meta"
MARKER_DDL = "CREATE TABLE store_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"

# SESSION_ID_FOR_TASK: the session of the task's most recently opened
# binding, released or not (the latest bound_at; a tie goes to the row
# written last). One `?`: the task id.
SESSION_ID_FOR_TASK = ("(SELECT st.session_id FROM session_tasks st WHERE st.task_id=? "
                       "ORDER BY st.bound_at DESC, st.rowid DESC LIMIT 1)")
if kit("client.session_for_task"):
    SESSION_ID_FOR_TASK = ("(SELECT st.session_id FROM session_tasks st WHERE st.task_id=? "
                           "ORDER BY (st.released_at IS NULL) DESC, st.bound_at DESC, st.rowid DESC LIMIT 1)")
# OPEN_BINDING_TASK: the task of the session row's open binding, '' for none.
OPEN_BINDING_TASK = ("COALESCE((SELECT ob.task_id FROM session_tasks ob WHERE ob.session_id=sessions.session_id "
                     "AND ob.released_at IS NULL ORDER BY ob.bound_at DESC, ob.rowid DESC LIMIT 1), '')")

CLIENT_SESSION_COLUMNS = ("session_id,agent_state,delivery_state,resource_state,recovery_substate,desired_json,"
                          "observed_json,generation,seq,backend_ref,mismatch_count,updated_at")
INTENT_COLUMNS = "op_id,env_json,attempt,state,next_attempt_at,receipt_json,last_error,created_at,updated_at"
TASK_COLUMNS = "task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at"
FAULT_COLUMNS = ("id,task_id,session_id,generation,seq,desired_json,observed_json,intent,attempt,backend_ref,"
                 "kind,reason,state,created_at")


def sql_limit(limit):
    if limit == 0:
        return DEFAULT_LIMIT
    return min(limit, MAX_LIMIT)


def head_preview(head):
    """crate::server::head_preview (not shown by the seed): a head of at most
    160 characters is kept whole; a longer one keeps its first 157 followed
    by "..." (160 in all)."""
    if kit("client.head_preview"):
        return head if len(head) <= 200 else head[:200] + "\u2026"
    if len(head) <= HEAD_PREVIEW_CHARS:
        return head
    return head[:HEAD_PREVIEW_CHARS - 3] + "..."


def json_value_in(v, what):
    """A serde_json::Value argument: JSON text, stored as serde_json would
    write it. No document (null, "") or text that is not JSON:
    invalid_argument."""
    parsed = json_text_in(v, what)
    if parsed is None:
        raise StoreError("invalid_argument", f"{what} is not a JSON document (empty)")
    return parsed[1]


def backend_parts(task_id, backend_ref):
    """The seed's backend_parts, as shown: the backend named by the
    reference's "backend" string, and the id the session is filed under: the
    reference's "task_id" string when it has one (even ""), else task_id."""
    try:
        parsed = json.loads(backend_ref)
    except (ValueError, TypeError):
        parsed = None
    backend, session_id = None, task_id
    if isinstance(parsed, dict):
        if isinstance(parsed.get("backend"), str):
            backend = parsed["backend"]
        if isinstance(parsed.get("task_id"), str):
            if parsed["task_id"] != "" or not kit("client.empty_ref_task_id"):
                session_id = parsed["task_id"]
    return backend, session_id


def seconds_text(text):
    """rfc3339_to_unix then back: a stored time read as whole unix seconds."""
    if kit("client.millis"):
        return fmt_ms(text_to_ms(text))
    return fmt_s(text_to_ms(text) // 1000)


def seconds_clock(ms):
    """A time the seed keeps as the kernel's unix seconds (a session's
    updated_at and last_seen, a fault's created_at, a binding's bound_at and
    released_at: Utc::now().timestamp() or an i64 the caller hands in):
    whole seconds, the sub-second part dropped."""
    if kit("client.millis"):
        return fmt_ms(ms)
    return fmt_s(ms // 1000)


def intent_out(r):
    out = {"op_id": r[0], "envelope": r[1], "attempt": r[2], "state": r[3], "next_attempt_at": r[4],
           "last_error": r[6] if r[6] is not None else "", "created_at": r[7], "updated_at": r[8]}
    if r[5] is not None:
        out["receipt"] = r[5]
    return out


def task_out(r):
    out = {"task_id": r[0], "kind": r[1] or "", "parent_task": r[2] or "", "hop": r[3], "attempt": r[4],
           "state": r[5], "opened_at": r[6]}
    if r[7] is not None:
        out["settled_at"] = r[7]
    return out


def fault_out(r):
    return {"id": r[0], "task_id": r[1] or "", "session_id": r[2] or "",
            "generation": r[3] if r[3] is not None else 0, "seq": r[4] if r[4] is not None else 0,
            "desired_json": r[5] if r[5] is not None else "{}",
            "observed_json": r[6] if r[6] is not None else "{}",
            "intent": r[7] or "", "attempt": r[8] if r[8] is not None else 0,
            "backend_ref": r[9] if r[9] is not None else "{}",
            "kind": r[10], "reason": r[11], "state": r[12],
            "created_at": seconds_text(r[13]) if r[13] is not None else fmt_s(0)}


def open_binding(tx, session_id, task_id, at_ms):
    """open_binding_conn: close the session's other open binding, then open
    the pair at `at` (a released pair opens again); answers how many rows
    the insert moved (0 for a pair already open)."""
    at = seconds_clock(at_ms)
    tx.execute("UPDATE session_tasks SET released_at=? WHERE session_id=? AND task_id<>? AND released_at IS NULL",
               (at, session_id, task_id))
    tx.point("after_close_others")
    if kit("client.session_for_task"):
        # The kit's "most recently opened": a reopened pair becomes the
        # newest row, so that a tie in bound_at goes to the latest opening.
        if tx.one("SELECT 1 FROM session_tasks WHERE session_id=? AND task_id=? AND released_at IS NULL",
                  (session_id, task_id)) is not None:
            return 0
        tx.execute("DELETE FROM session_tasks WHERE session_id=? AND task_id=?", (session_id, task_id))
        return tx.changes("INSERT INTO session_tasks(session_id,task_id,bound_at,released_at) VALUES(?,?,?,NULL)",
                          (session_id, task_id, at))
    return tx.changes(
        "INSERT INTO session_tasks(session_id,task_id,bound_at,released_at) VALUES(?,?,?,NULL) "
        "ON CONFLICT(session_id,task_id) DO UPDATE SET bound_at=excluded.bound_at,released_at=NULL "
        "WHERE session_tasks.released_at IS NOT NULL",
        (session_id, task_id, at))


def intent_stats(tx, task_id):
    max_attempt = None
    for env_json, attempt in tx.all("SELECT env_json,attempt FROM intents"):
        try:
            value = json.loads(env_json)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        causality = value.get("causality")
        if isinstance(causality, dict) and isinstance(causality.get("task"), str) and causality["task"] == task_id:
            max_attempt = attempt if max_attempt is None else max(max_attempt, attempt)
    return max_attempt


class ClientStore:
    KINDS = {"schema_mismatch", "invalid_argument", "io"}
    # The marker is not kept as the kit's schema_meta table (unless the
    # attribution switch says so), so client_schema_table is not declared.
    # The kit may ask this backend to write a file of another marker in its
    # own layout (write_foreign_schema), to check the gate at open; with the
    # kit's reading the marker is the kit's schema_meta table, which the kit
    # may write itself.
    CAPABILITIES = {"client_schema_table": True} if kit("client.schema_table") else {"client_schema_writer": True}
    CRASH_POINTS = [
        "enqueue_intent/after_commit",
        "bump_intent/after_commit",
        "defer_intent/after_commit",
        "accept_intent/after_commit",
        "exhaust_intent/after_commit",
        "delete_intent/after_commit",
        "append_event/after_commit",
        "put_out_head/after_commit",
        "put_prose/after_commit",
        "put_config/after_commit",
        "upsert_session/after_session_write",
        "upsert_session/after_close_others",
        "upsert_session/after_binding_open",
        "upsert_session/after_commit",
        "bump_session_version/after_commit",
        "bind_task/after_close_others",
        "bind_task/after_commit",
        "release_binding/after_commit",
        "open_task/after_commit",
        "settle_task/after_commit",
        "insert_fault/after_commit",
    ]

    def __init__(self, path, timeout_ms, now_ms):
        self.now_ms = now_ms
        self.db = Database(path, timeout_ms)
        try:
            # The marker is checked before anything is written, so a refused
            # file is left as it was; the journal goes to WAL after.
            self.db.run("open", self._open_schema)
            self.db.enable_wal()
        except StoreError:
            self.db.close()
            raise

    def _open_schema(self, tx):
        tables = {r[0] for r in tx.all("SELECT name FROM sqlite_master WHERE type='table'")}
        if kit("client.schema_table"):
            return self._open_schema_meta(tx, tables)
        if MARKER_TABLE in tables:
            rows = dict(tx.all(f"SELECT key, value FROM {MARKER_TABLE}"))
            marker = rows.get("marker")
            try:
                version = int(rows.get("schema_version", "0"))
            except ValueError:
                version = 0
            if marker != CLIENT_MARKER or version != CLIENT_SCHEMA_VERSION:
                raise StoreError("schema_mismatch", f"client schema mismatch: the file is "
                                 f"{marker if marker is not None else '(no marker)'} version {version}, "
                                 f"this store is {CLIENT_MARKER} version {CLIENT_SCHEMA_VERSION}")
        elif tables & CLIENT_TABLES:
            raise StoreError("schema_mismatch", f"client schema mismatch: the file is (no marker) version 0 "
                             f"(it holds {', '.join(sorted(tables & CLIENT_TABLES))}), this store is "
                             f"{CLIENT_MARKER} version {CLIENT_SCHEMA_VERSION}")
        else:
            tx.execute(MARKER_DDL)
            tx.execute(f"INSERT INTO {MARKER_TABLE}(key, value) VALUES('marker', ?), ('schema_version', ?)",
                       (CLIENT_MARKER, str(CLIENT_SCHEMA_VERSION)))
        for stmt in CLIENT_DDL:
            tx.execute(stmt)

    def _open_schema_meta(self, tx, tables):
        want = f"{CLIENT_MARKER} version {CLIENT_SCHEMA_VERSION}"
        if "schema_meta" in tables:
            rows = tx.all("SELECT marker, version FROM schema_meta")
            have = f"{rows[0][0]} version {rows[0][1]}" if len(rows) == 1 else "(no marker) version 0"
            if have != want:
                raise StoreError("schema_mismatch", f"client schema mismatch: file {have}, store {want}")
        elif tables:
            raise StoreError("schema_mismatch", f"client schema mismatch: file (no marker) version 0, store {want}")
        else:
            tx.execute("CREATE TABLE schema_meta(marker TEXT NOT NULL, version INTEGER NOT NULL)")
            tx.execute("INSERT INTO schema_meta(marker, version) VALUES(?, ?)", (CLIENT_MARKER, CLIENT_SCHEMA_VERSION))
        for stmt in CLIENT_DDL:
            tx.execute(stmt)

    @staticmethod
    def write_foreign_schema(path, marker, version):
        """write_foreign_schema (capability client_schema_writer): a new
        client file at path, marked with another marker or version in this
        backend's own layout (the store_meta table), for the kit to check
        that open refuses it."""
        if os.path.exists(path):
            raise bad_request(f"write_foreign_schema: {path!r} exists already")
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(MARKER_DDL)
            conn.execute(f"INSERT INTO {MARKER_TABLE}(key, value) VALUES('marker', ?), ('schema_version', ?)",
                         (marker, str(version)))
            for stmt in CLIENT_DDL:
                conn.execute(stmt)
            conn.execute("COMMIT")
        except sqlite3.Error as e:
            raise StoreError("io", f"write_foreign_schema {path!r}: {e}")
        finally:
            conn.close()

    def close(self):
        self.db.close()

    def now(self):
        return fmt_ms(self.now_ms)

    def write(self, op, sql, params):
        return self.db.run(op, lambda tx: tx.changes(sql, params))

    def read(self, op, body):
        return self.db.run(op, body, write=False)

    # -- the intent outbox

    def enqueue_intent(self, args):
        op_id = need(args, "op_id", str)
        env = json_value_in(args.get("envelope"), "envelope")
        now = self.now()
        return self.write("enqueue_intent",
                          "INSERT OR IGNORE INTO intents(op_id,env_json,attempt,state,next_attempt_at,receipt_json,"
                          "last_error,created_at,updated_at) VALUES(?,?,0,'pending',?,NULL,NULL,?,?)",
                          (op_id, env, now, now, now)) == 1

    def intent(self, args):
        op_id = need(args, "op_id", str)
        row = self.read("intent", lambda tx: tx.one(f"SELECT {INTENT_COLUMNS} FROM intents WHERE op_id=?", (op_id,)))
        return None if row is None else intent_out(row)

    def _due(self, op, now_text, limit):
        rows = self.read(op, lambda tx: tx.all(
            f"SELECT {INTENT_COLUMNS} FROM intents WHERE state IN ('pending','retrying') AND next_attempt_at<=? "
            "ORDER BY next_attempt_at,created_at,rowid LIMIT ?", (now_text, sql_limit(limit))))
        return [intent_out(r) for r in rows]

    def due_intents(self, args):
        now = fmt_ms(time_in(need(args, "now", str), "now"))
        return self._due("due_intents", now, uint(args, "limit"))

    def flush_order(self, args):
        return self._due("flush_order", self.now(), INTENT_FLUSH_BATCH_SIZE)

    def bump_intent(self, args):
        op_id = need(args, "op_id", str)
        at = fmt_ms(time_in(need(args, "next_attempt_at", str), "next_attempt_at"))
        error = need(args, "last_error", str)
        return self.write("bump_intent",
                          "UPDATE intents SET state='retrying',attempt=attempt+1,next_attempt_at=?,last_error=?,"
                          "updated_at=? WHERE op_id=? AND state IN ('pending','retrying')",
                          (at, error, self.now(), op_id)) == 1

    def defer_intent(self, args):
        op_id = need(args, "op_id", str)
        at = fmt_ms(time_in(need(args, "next_attempt_at", str), "next_attempt_at"))
        error = need(args, "last_error", str)
        return self.write("defer_intent",
                          "UPDATE intents SET state='retrying',next_attempt_at=?,last_error=?,updated_at=? "
                          "WHERE op_id=? AND state IN ('pending','retrying')",
                          (at, error, self.now(), op_id)) == 1

    def accept_intent(self, args):
        op_id = need(args, "op_id", str)
        receipt = json_value_in(args.get("receipt"), "receipt")
        return self.write("accept_intent",
                          "UPDATE intents SET state='accepted',receipt_json=?,updated_at=? "
                          "WHERE op_id=? AND state IN ('pending','retrying')",
                          (receipt, self.now(), op_id)) == 1

    def exhaust_intent(self, args):
        op_id = need(args, "op_id", str)
        error = need(args, "last_error", str)
        return self.write("exhaust_intent",
                          "UPDATE intents SET state='exhausted',last_error=?,updated_at=? "
                          "WHERE op_id=? AND state IN ('pending','retrying')",
                          (error, self.now(), op_id)) == 1

    def delete_intent(self, args):
        op_id = need(args, "op_id", str)
        return self.write("delete_intent", "DELETE FROM intents WHERE op_id=?", (op_id,)) == 1

    def pending_intent_count(self, args):
        return self.read("pending_intent_count", lambda tx: tx.one(
            "SELECT COUNT(*) FROM intents WHERE state IN ('pending','retrying')")[0])

    # -- the event log

    def append_event(self, args):
        kind = need(args, "type", str)
        data = json_value_in(args.get("data"), "data")
        now_ms = self.now_ms

        def body(tx):
            # append_event_conn: the sequence is the creation clock, kept
            # strictly increasing: max(head + 1, now_ms).
            head = tx.one("SELECT COALESCE(MAX(seq),0) FROM events")[0]
            seq = head + 1 if kit("client.event_seq") else max(head + 1, now_ms)
            tx.execute("INSERT INTO events(seq,type,data_json,created_at) VALUES(?,?,?,?)",
                       (seq, kind, data, fmt_ms(now_ms)))
            return seq
        return self.db.run("append_event", body)

    def events_since(self, args):
        seq = need(args, "seq", int)
        limit = uint(args, "limit")
        rows = self.read("events_since", lambda tx: tx.all(
            "SELECT seq,type,data_json,created_at FROM events WHERE seq>? ORDER BY seq LIMIT ?",
            (seq, sql_limit(limit))))
        return [{"seq": r[0], "type": r[1], "data": r[2], "created_at": r[3]} for r in rows]

    def event_head(self, args):
        return self.read("event_head", lambda tx: tx.one("SELECT COALESCE(MAX(seq),0) FROM events")[0])

    # -- caches

    def put_out_head(self, args):
        task_id = need(args, "task_id", str)
        head = need(args, "head", str)
        self.write("put_out_head", "INSERT INTO out_head_cache(task_id,head) VALUES(?,?) "
                   "ON CONFLICT(task_id) DO UPDATE SET head=excluded.head", (task_id, head_preview(head)))
        return None

    def out_head(self, args):
        task_id = need(args, "task_id", str)
        row = self.read("out_head", lambda tx: tx.one("SELECT head FROM out_head_cache WHERE task_id=?", (task_id,)))
        return None if row is None else row[0]

    def put_prose(self, args):
        role = need(args, "role", str)
        prose = need(args, "prose", str)
        spec_hash = need(args, "spec_hash", str)
        self.write("put_prose", "INSERT INTO prose_cache(role,prose,spec_hash,cached_at) VALUES(?,?,?,?) "
                   "ON CONFLICT(role) DO UPDATE SET prose=excluded.prose,spec_hash=excluded.spec_hash,"
                   "cached_at=excluded.cached_at", (role, prose, spec_hash, self.now()))
        return None

    def prose(self, args):
        role = need(args, "role", str)
        row = self.read("prose", lambda tx: tx.one(
            "SELECT prose,spec_hash,cached_at FROM prose_cache WHERE role=?", (role,)))
        return None if row is None else {"prose": row[0], "spec_hash": row[1], "cached_at": row[2]}

    def put_config(self, args):
        key = need(args, "key", str)
        value = need(args, "value", str)
        self.write("put_config", "INSERT INTO config_cache(key,value) VALUES(?,?) "
                   "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))
        return None

    def config(self, args):
        key = need(args, "key", str)
        row = self.read("config", lambda tx: tx.one("SELECT value FROM config_cache WHERE key=?", (key,)))
        return None if row is None else row[0]

    # -- session tuples and bindings

    def upsert_session(self, args):
        task_id = need(args, "task_id", str)
        v = need(args, "version", dict)
        w = "version"
        generation, seq = uint(v, "generation", w), uint(v, "seq", w)
        fields = {k: need(v, k, str, w) for k in ("agent_state", "delivery_state", "resource_state",
                                                   "recovery_substate", "desired_json", "observed_json",
                                                   "backend_ref")}
        mismatch = need(v, "mismatch_count", int, w)
        # VersionedSession.updated_at is the kernel's unix seconds in the seed.
        updated_ms = time_in(need(v, "updated_at", str), "version.updated_at")
        updated = seconds_clock(updated_ms)
        backend, session_id = backend_parts(task_id, fields["backend_ref"])

        def body(tx):
            changed = tx.changes(
                "INSERT INTO sessions(session_id,generation,seq,agent_state,delivery_state,resource_state,"
                "recovery_substate,observed_json,backend,backend_ref,desired_json,mismatch_count,last_seen,updated_at) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(session_id) DO UPDATE SET generation=excluded.generation,seq=excluded.seq,"
                "agent_state=excluded.agent_state,delivery_state=excluded.delivery_state,"
                "resource_state=excluded.resource_state,recovery_substate=excluded.recovery_substate,"
                "observed_json=excluded.observed_json,backend=COALESCE(excluded.backend,sessions.backend),"
                "backend_ref=excluded.backend_ref,desired_json=excluded.desired_json,"
                "mismatch_count=excluded.mismatch_count,last_seen=excluded.last_seen,updated_at=excluded.updated_at "
                "WHERE excluded.generation > sessions.generation OR "
                "(excluded.generation = sessions.generation AND excluded.seq > sessions.seq)",
                (session_id, generation, seq, fields["agent_state"], fields["delivery_state"],
                 fields["resource_state"], fields["recovery_substate"], fields["observed_json"], backend,
                 fields["backend_ref"], fields["desired_json"], mismatch, updated, updated))
            tx.point("after_session_write")
            if changed == 1:
                # crate::server::open_binding_conn(&tx, &session_id, task_id, version.updated_at)
                open_binding(tx, session_id, task_id, self.now_ms if kit("client.bind_at_now") else updated_ms)
                tx.point("after_binding_open")
            return changed == 1
        return self.db.run("upsert_session", body)

    def bump_session_version(self, args):
        task_id = need(args, "task_id", str)
        generation, seq = uint(args, "generation"), uint(args, "seq")
        return self.write("bump_session_version",
                          f"UPDATE sessions SET generation=?,seq=?,updated_at=? WHERE session_id={SESSION_ID_FOR_TASK} "
                          "AND (? > generation OR (? = generation AND ? > seq))",
                          (generation, seq, self.now(), task_id, generation, generation, seq)) == 1

    def get_session(self, args):
        task_id = need(args, "task_id", str)
        row = self.read("get_session", lambda tx: tx.one(
            f"SELECT {CLIENT_SESSION_COLUMNS} FROM sessions WHERE session_id={SESSION_ID_FOR_TASK}", (task_id,)))
        if row is None:
            return None
        return {"session_id": row[0], "task_id": task_id, "agent_state": row[1], "delivery_state": row[2],
                "resource_state": row[3], "recovery_substate": row[4], "desired_json": row[5],
                "observed_json": row[6], "generation": row[7], "seq": row[8],
                "backend_ref": row[9] if row[9] is not None else "", "mismatch_count": row[10],
                "updated_at": seconds_text(row[11])}

    def bind_task(self, args):
        session_id = need(args, "session_id", str)
        task_id = need(args, "task_id", str)
        at = self.now_ms
        return self.db.run("bind_task", lambda tx: open_binding(tx, session_id, task_id, at)) > 0

    def release_binding(self, args):
        session_id = need(args, "session_id", str)
        task_id = need(args, "task_id", str)
        # release_binding_conn(conn, session, task, Utc::now().timestamp())
        return self.write("release_binding",
                          "UPDATE session_tasks SET released_at=? WHERE session_id=? AND task_id=? "
                          "AND released_at IS NULL", (seconds_clock(self.now_ms), session_id, task_id)) > 0

    def active_sessions(self, args):
        rows = self.read("active_sessions", lambda tx: tx.all(
            f"SELECT session_id,{OPEN_BINDING_TASK},resource_state FROM sessions "
            "WHERE agent_state IN ('booting', 'ready', 'idle') "
            "AND (resource_state != 'closed' OR agent_state IN ('ready', 'idle')) "
            "ORDER BY session_id"))
        return [{"session_id": r[0], "task_id": r[1], "suspended": r[2] == "closed"} for r in rows]

    # -- tasks

    def open_task(self, args):
        c = need(args, "causality", dict)
        task = need(c, "task", str, "causality")
        parent = opt(c, "parent_task", str, "")
        hop, attempt = uint(c, "hop", "causality"), uint(c, "attempt", "causality")
        kind = need(args, "kind", str)
        if kit("client.task_kind") and kind not in ("root", "relay"):
            raise StoreError("invalid_argument", f"task kind {kind!r} is not root or relay")
        if kit("client.open_refresh_false"):
            def body(tx):
                known = tx.one("SELECT 1 FROM task WHERE task_id=?", (task,)) is not None
                tx.execute("INSERT INTO task(task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at) "
                           "VALUES(?,?,?,?,?,'pending',?,NULL) "
                           "ON CONFLICT(task_id) DO UPDATE SET kind=excluded.kind,parent_task=excluded.parent_task,"
                           "hop=excluded.hop,attempt=MAX(excluded.attempt,task.attempt)",
                           (task, kind, parent or None, hop, attempt, self.now()))
                return not known
            return self.db.run("open_task", body)
        return self.write("open_task",
                          "INSERT INTO task(task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at) "
                          "VALUES(?,?,?,?,?,'pending',?,NULL) "
                          "ON CONFLICT(task_id) DO UPDATE SET kind=excluded.kind,parent_task=excluded.parent_task,"
                          "hop=excluded.hop,attempt=MAX(excluded.attempt,task.attempt)",
                          (task, kind, parent or None, hop, attempt, self.now())) == 1

    def settle_task(self, args):
        task_id = need(args, "task_id", str)
        state = need(args, "state", str)
        if kit("client.verdicts") and state not in ("completed", "failed", "cancelled"):
            raise StoreError("invalid_argument", f"verdict {state!r} is not terminal")
        now = self.now()
        return self.write("settle_task",
                          "INSERT INTO task(task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at) "
                          "VALUES(?,NULL,NULL,0,0,?,?,?) "
                          "ON CONFLICT(task_id) DO UPDATE SET task_state=excluded.task_state,"
                          "settled_at=excluded.settled_at WHERE task.settled_at IS NULL",
                          (task_id, state, now, now)) == 1

    def task(self, args):
        task_id = need(args, "task_id", str)
        row = self.read("task", lambda tx: tx.one(f"SELECT {TASK_COLUMNS} FROM task WHERE task_id=?", (task_id,)))
        return None if row is None else task_out(row)

    def open_tasks(self, args):
        limit = uint(args, "limit")
        rows = self.read("open_tasks", lambda tx: tx.all(
            f"SELECT {TASK_COLUMNS} FROM task WHERE settled_at IS NULL ORDER BY opened_at,rowid LIMIT ?",
            (sql_limit(limit),)))
        return [task_out(r) for r in rows]

    def task_is_known(self, args):
        task_id = need(args, "task_id", str)

        def body(tx):
            if tx.one("SELECT COUNT(*) FROM session_tasks WHERE task_id=?", (task_id,))[0] > 0:
                return True
            return intent_stats(tx, task_id) is not None
        return self.read("task_is_known", body)

    def task_attempt(self, args):
        task_id = need(args, "task_id", str)
        attempt = self.read("task_attempt", lambda tx: intent_stats(tx, task_id))
        return 0 if attempt is None else attempt

    # -- faults

    def insert_fault(self, args):
        f = need(args, "fault", dict)
        w = "fault"
        created = seconds_clock(time_in(need(f, "created_at", str), "fault.created_at"))
        params = (need(f, "task_id", str, w), need(f, "session_id", str, w), need(f, "generation", int, w),
                  need(f, "seq", int, w), need(f, "desired_json", str, w), need(f, "observed_json", str, w),
                  need(f, "intent", str, w), need(f, "attempt", int, w), need(f, "backend_ref", str, w),
                  need(f, "kind", str, w), need(f, "reason", str, w), need(f, "state", str, w), created)

        def body(tx):
            cur = tx.execute("INSERT INTO faults(task_id,role,session_id,generation,seq,desired_json,observed_json,"
                             "intent,attempt,backend_ref,kind,reason,state,created_at) "
                             "VALUES(?,NULL,?,?,?,?,?,?,?,?,?,?,?,?)", params)
            return cur.lastrowid
        return self.db.run("insert_fault", body)

    def list_faults(self, args):
        task_id = need(args, "task_id", str)
        rows = self.read("list_faults", lambda tx: tx.all(
            f"SELECT {FAULT_COLUMNS} FROM faults WHERE task_id=? ORDER BY id", (task_id,)))
        return [fault_out(r) for r in rows]

    OPS = {}


ClientStore.OPS = {name: getattr(ClientStore, name) for name in (
    "enqueue_intent", "intent", "due_intents", "bump_intent", "defer_intent", "accept_intent",
    "exhaust_intent", "delete_intent", "pending_intent_count", "flush_order", "append_event",
    "events_since", "event_head", "put_out_head", "out_head", "put_prose", "prose", "put_config",
    "config", "upsert_session", "bump_session_version", "get_session", "bind_task", "release_binding",
    "active_sessions", "open_task", "settle_task", "task", "open_tasks", "task_is_known", "task_attempt",
    "insert_fault", "list_faults")}
