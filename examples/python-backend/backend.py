#!/usr/bin/env python3
"""A storecheck backend in Python: the continuity store on sqlite3.

It speaks storecheck's wire protocol (docs/protocol.md): one JSON object a
line on stdin (requests) and stdout (replies), logs on stderr. Run the kit
against it with

    storecheck run -- python3 examples/python-backend/backend.py

It is an example for backend authors, kept small: requests are answered one
at a time, in order (the protocol allows any order; in order is one of
them). Every operation is one SQLite transaction: BEGIN IMMEDIATE for those
that write, so checks and writes cannot interleave with another connection.
Time comes only from the requests' now_ms, never from the machine's clock.
"""

import base64
import hashlib
import json
import sqlite3
import sys

PROTOCOL_VERSION = 1
STORE = "continuity"
KINDS = {"not_found", "stale_fencing_token", "stale_checkpoint_version",
         "stale_continuity_generation", "corruption", "io"}
BUSY_TIMEOUT_S = 5.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS continuity_records (
    identity           TEXT PRIMARY KEY,
    agent_runtime_id   TEXT NOT NULL,
    session_id         TEXT NOT NULL,
    generation         INTEGER NOT NULL,
    checkpoint_version INTEGER NOT NULL,
    fencing_token      INTEGER NOT NULL,
    updated_at_ms      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS session_snapshots (
    session_id         TEXT PRIMARY KEY,
    identity           TEXT NOT NULL,
    generation         INTEGER NOT NULL,
    checkpoint_version INTEGER NOT NULL,
    fencing_token      INTEGER NOT NULL,
    data               BLOB NOT NULL,
    updated_at_ms      INTEGER NOT NULL
);
"""


def log(*args):
    print("python-backend:", *args, file=sys.stderr, flush=True)


class StoreError(Exception):
    """A failed request: a kind from the contract's closed set, or bad_request."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def stale_fence(identity, presented, stored):
    return StoreError("stale_fencing_token",
                      f"identity {identity}: presented fence {presented}, current {stored}")


class Continuity:
    """One open continuity database: one sqlite3 connection."""

    def __init__(self, path, timeout_s):
        try:
            self.db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None,
                                      check_same_thread=False)
            if path != ":memory:":
                self.db.execute("PRAGMA journal_mode=WAL")
            # The open waits for a lock no longer than its timeout_ms; the
            # operations after it, the store's own busy timeout.
            self.db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            self.db.executescript(SCHEMA)  # idempotent; executescript runs outside a transaction
            self.db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        except sqlite3.Error as e:
            raise StoreError("io", f"open {path!r}: {e}")
        self.now_ms = 0

    def write(self, fn):
        return self.tx("BEGIN IMMEDIATE", fn)

    def read(self, fn):
        return self.tx("BEGIN", fn)

    def tx(self, begin, fn):
        """Run fn in one transaction; any failure rolls it all back."""
        try:
            self.db.execute(begin)
        except sqlite3.Error as e:
            raise StoreError("io", f"begin: {e}")
        try:
            result = fn(self.db)
            self.db.execute("COMMIT")
            return result
        except StoreError:
            self.db.execute("ROLLBACK")
            raise
        except sqlite3.Error as e:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise StoreError("io", str(e))

    def close(self):
        self.db.close()

    # -- the operations, one per method, named as on the wire --

    @staticmethod
    def load_record(db, identity):
        row = db.execute("""SELECT agent_runtime_id, session_id, generation, checkpoint_version, fencing_token
            FROM continuity_records WHERE identity = ?""", (identity,)).fetchone()
        if row is None:
            return None, None
        return {"identity": identity, "agent_runtime_id": row[0], "session_id": row[1],
                "generation": row[2], "checkpoint_version": row[3]}, row[4]

    def resolve_many(self, args):
        def fn(db):
            out = {}
            for identity in args.get("identities") or []:
                rec, _ = self.load_record(db, identity)
                out[identity] = {"state": "ready", "record": rec} if rec else {"state": "uninitialized"}
            return out
        return self.read(fn)

    def load_session_snapshot(self, args):
        def fn(db):
            row = db.execute("SELECT data FROM session_snapshots WHERE session_id = ?",
                             (args["session_id"],)).fetchone()
            return None if row is None else {"data": base64.b64encode(row[0]).decode()}
        return self.read(fn)

    def session_snapshot_matches_current(self, args):
        m = args["candidate"]
        data = decode_bytes(m.get("data"))

        def fn(db):
            row = db.execute("""SELECT EXISTS(
                SELECT 1 FROM session_snapshots AS snap
                JOIN continuity_records AS rec
                  ON rec.identity = snap.identity AND rec.session_id = snap.session_id
                 AND rec.generation = snap.generation AND rec.checkpoint_version = snap.checkpoint_version
                WHERE snap.session_id = ?1 AND snap.identity = ?2 AND snap.generation = ?3
                  AND snap.checkpoint_version = ?4 AND rec.fencing_token = ?5
                  AND snap.fencing_token <= ?5 AND snap.data = ?6)""",
                             (m["session_id"], m["identity"], m["generation"], m["checkpoint_version"],
                              m["fencing_token"], data)).fetchone()
            return bool(row[0])
        return self.read(fn)

    def delete_session_snapshot_if_current_revision(self, args):
        def fn(db):
            row = db.execute("SELECT data FROM session_snapshots WHERE session_id = ?",
                             (args["session_id"],)).fetchone()
            if row is None or hashlib.sha256(row[0]).hexdigest() != args["expected_revision"]:
                return False
            db.execute("DELETE FROM session_snapshots WHERE session_id = ?", (args["session_id"],))
            return True
        return self.write(fn)

    def save_session_snapshot(self, args):
        w = args["write"]
        data = decode_bytes(w.get("data"))

        def fn(db):
            rec, fence = self.load_record(db, w["identity"])
            if rec is not None:
                if rec["session_id"] != w["session_id"] or rec["generation"] != w["generation"]:
                    raise StoreError("not_found", f"identity {w['identity']} is at session {rec['session_id']} "
                                     f"generation {rec['generation']}, not session {w['session_id']} generation {w['generation']}")
                if w["fencing_token"] < fence:
                    raise stale_fence(w["identity"], w["fencing_token"], fence)
                if w["checkpoint_version"] <= rec["checkpoint_version"]:
                    raise StoreError("stale_checkpoint_version", f"identity {w['identity']}: presented checkpoint "
                                     f"version {w['checkpoint_version']}, current {rec['checkpoint_version']}")
            owner = db.execute("SELECT identity, generation FROM session_snapshots WHERE session_id = ?",
                               (w["session_id"],)).fetchone()
            if owner is not None and (owner[0] != w["identity"] or owner[1] != w["generation"]):
                raise StoreError("corruption", f"session snapshot {w['session_id']} is owned by {owner[0]} generation "
                                 f"{owner[1]}, not {w['identity']} generation {w['generation']}")
            db.execute("""INSERT INTO session_snapshots
                (session_id, identity, generation, checkpoint_version, fencing_token, data, updated_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(session_id) DO UPDATE SET identity = excluded.identity, generation = excluded.generation,
                    checkpoint_version = excluded.checkpoint_version, fencing_token = excluded.fencing_token,
                    data = excluded.data, updated_at_ms = excluded.updated_at_ms""",
                       (w["session_id"], w["identity"], w["generation"], w["checkpoint_version"],
                        w["fencing_token"], data, self.now_ms))
            if rec is not None:
                db.execute("""UPDATE continuity_records SET checkpoint_version = ?, fencing_token = ?, updated_at_ms = ?
                    WHERE identity = ?""", (w["checkpoint_version"], w["fencing_token"], self.now_ms, w["identity"]))
        return self.write(fn)

    def upsert_continuity_record(self, args):
        r, fence = args["record"], args["fence"]

        def fn(db):
            cur, cur_fence = self.load_record(db, r["identity"])
            version = r["checkpoint_version"]
            if cur is not None:
                if fence < cur_fence:
                    raise stale_fence(r["identity"], fence, cur_fence)
                if r["generation"] < cur["generation"]:
                    raise StoreError("stale_continuity_generation", f"identity {r['identity']}: presented "
                                     f"generation {r['generation']}, current {cur['generation']}")
                if r["generation"] == cur["generation"]:
                    version = max(version, cur["checkpoint_version"])
            db.execute("""INSERT INTO continuity_records
                (identity, agent_runtime_id, session_id, generation, checkpoint_version, fencing_token, updated_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(identity) DO UPDATE SET agent_runtime_id = excluded.agent_runtime_id,
                    session_id = excluded.session_id, generation = excluded.generation,
                    checkpoint_version = excluded.checkpoint_version, fencing_token = excluded.fencing_token,
                    updated_at_ms = excluded.updated_at_ms""",
                       (r["identity"], r["agent_runtime_id"], r["session_id"], r["generation"], version,
                        fence, self.now_ms))
        return self.write(fn)

    def rollback_continuity_record(self, args):
        attempt, previous, fence = args["attempt"], args.get("previous"), args["fence"]
        if previous is not None and previous["identity"] != attempt["identity"]:
            raise StoreError("corruption", f"rollback identity mismatch: attempted {attempt['identity']}, "
                             f"previous {previous['identity']}")

        def fn(db):
            cur, cur_fence = self.load_record(db, attempt["identity"])
            if cur is None:
                raise StoreError("not_found", f"identity {attempt['identity']} has no record to roll back")
            if cur_fence != fence:
                raise stale_fence(attempt["identity"], fence, cur_fence)
            if any(cur[k] != attempt[k] for k in ("agent_runtime_id", "session_id", "generation")):
                raise StoreError("stale_continuity_generation",
                                 f"identity {attempt['identity']}: the attempt is no longer current")
            db.execute("DELETE FROM session_snapshots WHERE identity = ? AND generation = ?",
                       (attempt["identity"], attempt["generation"]))
            if previous is None:
                db.execute("DELETE FROM continuity_records WHERE identity = ?", (attempt["identity"],))
            else:
                db.execute("""UPDATE continuity_records SET agent_runtime_id = ?, session_id = ?, generation = ?,
                    checkpoint_version = ?, fencing_token = ?, updated_at_ms = ? WHERE identity = ?""",
                           (previous["agent_runtime_id"], previous["session_id"], previous["generation"],
                            previous["checkpoint_version"], fence, self.now_ms, attempt["identity"]))
        return self.write(fn)

    def delete_continuity_record(self, args):
        identity, fence = args["identity"], args["fence"]

        def fn(db):
            _, cur_fence = self.load_record(db, identity)
            if cur_fence is not None and fence < cur_fence:
                raise stale_fence(identity, fence, cur_fence)
            db.execute("DELETE FROM session_snapshots WHERE identity = ?", (identity,))
            db.execute("DELETE FROM continuity_records WHERE identity = ?", (identity,))
        return self.write(fn)

    def max_fencing_token(self, args):
        return self.read(lambda db: db.execute("""SELECT MAX(
            (SELECT COALESCE(MAX(fencing_token), 0) FROM continuity_records),
            (SELECT COALESCE(MAX(fencing_token), 0) FROM session_snapshots))""").fetchone()[0])

    OPS = {"resolve_many", "load_session_snapshot", "session_snapshot_matches_current",
           "delete_session_snapshot_if_current_revision", "save_session_snapshot",
           "upsert_continuity_record", "rollback_continuity_record", "delete_continuity_record",
           "max_fencing_token"}


def decode_bytes(v):
    """Bytes travel as base64 strings (Go's []byte); null is empty."""
    return b"" if v is None else base64.b64decode(v)


class Backend:
    def __init__(self):
        self.handles = {}
        self.next_handle = 0

    def handle(self, req):
        t = req.get("type")
        if t == "hello":
            if req.get("version") != PROTOCOL_VERSION:
                raise StoreError("bad_request", f"protocol version {req.get('version')} asked, this backend speaks 1")
            return {"version": PROTOCOL_VERSION, "name": "python-backend (example)", "stores": [STORE],
                    "capabilities": {"files": True, "shared_files": True, "in_memory": True,
                                     "sqlite_locking": True, "crash_points": {}}}
        if t == "open":
            if req.get("store") != STORE:
                raise StoreError("bad_request", f"no store {req.get('store')!r}; this backend has {STORE}")
            path = ":memory:" if req.get("in_memory") else req.get("path")
            if not path:
                raise StoreError("bad_request", "open: give a path or in_memory")
            timeout_s = min(BUSY_TIMEOUT_S, req.get("timeout_ms", 5000) / 1000.0)
            store = Continuity(path, timeout_s)
            store.now_ms = req.get("now_ms", 0)
            self.next_handle += 1
            self.handles[self.next_handle] = store
            return {"handle": self.next_handle}
        if t == "close":
            store = self.handles.pop(req.get("handle"), None)
            if store is None:
                raise StoreError("bad_request", f"close: no handle {req.get('handle')}")
            store.close()
            return None
        if t == "op":
            store = self.handles.get(req.get("handle"))
            if store is None:
                raise StoreError("bad_request", f"no handle {req.get('handle')}")
            op = req.get("op")
            if req.get("store") != STORE or op not in Continuity.OPS:
                raise StoreError("bad_request", f"no operation {req.get('store')} {op}")
            store.now_ms = max(store.now_ms, req.get("now_ms", 0))
            return getattr(store, op)(req.get("args") or {})
        raise StoreError("bad_request", f"request type {t!r} is not supported (no crash points here)")


def main():
    backend = Backend()
    log("ready")
    for line in sys.stdin:
        if not line.strip():
            continue
        rid = 0
        try:
            req = json.loads(line)
            rid = req.get("id", 0)
            reply = {"id": rid, "result": backend.handle(req)}
        except StoreError as e:
            reply = {"id": rid, "error": {"kind": e.kind, "message": e.message}}
        except (ValueError, KeyError, TypeError) as e:
            log(f"bad request {line.strip()[:200]!r}: {e!r}")
            reply = {"id": rid, "error": {"kind": "bad_request", "message": f"{type(e).__name__}: {e}"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
