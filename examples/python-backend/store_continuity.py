"""The continuity store (seed 003: meerkat-mobkit's LocalContinuityStore).

Statements, checks and their order are the seed's. Differences in how the
work is run, all in READINGS.md: every operation is one transaction of
Database.run (BEGIN IMMEDIATE for those that write, the upsert included,
which the seed runs without one on its single in-process writer), and the
session projection CAS token (which the seed calls but does not show) is
this backend's own.
"""

import hashlib
import json

from readings import broken, kit
from storecheck_protocol import (Database, StoreError, b64_in, b64_out, canonical_json,
                                 need, str_list, uint)

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS continuity_records (
        identity       TEXT PRIMARY KEY,
        agent_runtime_id TEXT NOT NULL,
        session_id     TEXT NOT NULL,
        generation     INTEGER NOT NULL,
        checkpoint_version INTEGER NOT NULL,
        fencing_token  INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS session_snapshots (
        session_id     TEXT PRIMARY KEY,
        identity       TEXT NOT NULL,
        generation     INTEGER NOT NULL,
        checkpoint_version INTEGER NOT NULL,
        fencing_token  INTEGER NOT NULL,
        data           BLOB NOT NULL
    )""",
]


def record_in(v, what):
    if not isinstance(v, dict):
        raise StoreError("bad_request", f"{what} must be an object")
    return {"identity": need(v, "identity", str, what),
            "agent_runtime_id": need(v, "agent_runtime_id", str, what),
            "session_id": need(v, "session_id", str, what),
            "generation": uint(v, "generation", what),
            "checkpoint_version": uint(v, "checkpoint_version", what)}


def snapshot_write_in(v, what):
    if not isinstance(v, dict):
        raise StoreError("bad_request", f"{what} must be an object")
    return {"identity": need(v, "identity", str, what),
            "session_id": need(v, "session_id", str, what),
            "generation": uint(v, "generation", what),
            "checkpoint_version": uint(v, "checkpoint_version", what),
            "fencing_token": uint(v, "fencing_token", what),
            "data": b64_in(v.get("data"), f"{what}.data")}


def session_projection_cas_token(session):
    """The revision delete_session_snapshot_if_current_revision compares.

    The seed deserializes the snapshot bytes as a meerkat Session and asks
    meerkat_core::session_store::session_projection_cas_token, which it does
    not show. This backend's token: "proj-" and the BLAKE2b-160 of the
    session's canonical JSON (keys sorted, compact), so two snapshots that
    are the same session in different spellings have the same revision."""
    digest = hashlib.blake2b(canonical_json(session).encode("utf-8"), digest_size=20).hexdigest()
    return "proj-" + digest


class ContinuityStore:
    # The snapshot revision is this backend's own (revision() above), which
    # the kit cannot compute: it says so.
    CAPABILITIES = {"snapshot_revision": "opaque"}
    KINDS = {"not_found", "stale_fencing_token", "stale_checkpoint_version",
             "stale_continuity_generation", "corruption", "io"}
    CRASH_POINTS = [
        "save_session_snapshot/after_snapshot_upsert",
        "save_session_snapshot/after_record_update",
        "save_session_snapshot/after_commit",
        "upsert_continuity_record/after_commit",
        "rollback_continuity_record/after_snapshots_delete",
        "rollback_continuity_record/after_record_restore",
        "rollback_continuity_record/after_commit",
        "delete_continuity_record/after_snapshots_delete",
        "delete_continuity_record/after_record_delete",
        "delete_continuity_record/after_commit",
        "delete_session_snapshot_if_current_revision/after_commit",
    ]

    def __init__(self, path, timeout_ms, now_ms):
        self.now_ms = now_ms
        self.db = Database(path, timeout_ms)
        try:
            self.db.enable_wal()
            self.db.run("open", lambda tx: [tx.execute(s) for s in SCHEMA])
        except StoreError:
            self.db.close()
            raise

    def close(self):
        self.db.close()

    # -- reads

    def resolve_many(self, args):
        identities = str_list(args, "identities")

        def body(tx):
            out = {}
            for identity in identities:
                row = tx.one("""SELECT agent_runtime_id, session_id, generation, checkpoint_version
                                FROM continuity_records WHERE identity = ?1""", (identity,))
                if row is None:
                    out[identity] = {"state": "uninitialized"}
                else:
                    out[identity] = {"state": "ready", "record": {
                        "identity": identity, "agent_runtime_id": row[0], "session_id": row[1],
                        "generation": row[2], "checkpoint_version": row[3]}}
            return out
        return self.db.run("resolve_many", body, write=False)

    def load_session_snapshot(self, args):
        session_id = need(args, "session_id", str)

        def body(tx):
            row = tx.one("SELECT data FROM session_snapshots WHERE session_id = ?1", (session_id,))
            return None if row is None else {"data": b64_out(row[0])}
        return self.db.run("load_session_snapshot", body, write=False)

    def session_snapshot_matches_current(self, args):
        c = snapshot_write_in(need(args, "candidate", dict), "candidate")

        def body(tx):
            row = tx.one("""SELECT EXISTS(
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
                )""", (c["session_id"], c["identity"], c["generation"], c["checkpoint_version"],
                       c["fencing_token"], c["data"]))
            return bool(row[0])
        return self.db.run("session_snapshot_matches_current", body, write=False)

    def max_fencing_token(self, args):
        return self.db.run("max_fencing_token", lambda tx: tx.one(
            """SELECT COALESCE(MAX(t), 0) FROM (
                SELECT MAX(fencing_token) AS t FROM continuity_records
                UNION ALL
                SELECT MAX(fencing_token) AS t FROM session_snapshots
            )""")[0], write=False)

    # -- writes

    def delete_session_snapshot_if_current_revision(self, args):
        session_id = need(args, "session_id", str)
        expected = need(args, "expected_revision", str)

        def body(tx):
            row = tx.one("SELECT data FROM session_snapshots WHERE session_id = ?1", (session_id,))
            if row is None:
                return False
            if kit("continuity.cas_token"):
                return (hashlib.sha256(bytes(row[0])).hexdigest() == expected
                        and tx.changes("DELETE FROM session_snapshots WHERE session_id = ?1", (session_id,)) > 0)
            try:
                session = json.loads(bytes(row[0]).decode("utf-8"))
            except ValueError as e:  # UnicodeDecodeError is a ValueError
                raise StoreError("io", f"deserialize session snapshot for revision check: {e}")
            if session_projection_cas_token(session) != expected:
                return False
            deleted = tx.changes("DELETE FROM session_snapshots WHERE session_id = ?1", (session_id,))
            return deleted > 0
        return self.db.run("delete_session_snapshot_if_current_revision", body)

    def save_session_snapshot(self, args):
        w = snapshot_write_in(need(args, "write", dict), "write")
        identity, session_id, generation = w["identity"], w["session_id"], w["generation"]
        version, fence = w["checkpoint_version"], w["fencing_token"]

        def body(tx):
            existing = tx.one("""SELECT session_id, generation, fencing_token, checkpoint_version
                                 FROM continuity_records WHERE identity = ?1""", (identity,))
            record_was_present = existing is not None
            if existing is not None:
                cur_session, cur_generation, cur_token, cur_version = existing
                if cur_session != session_id or cur_generation != generation:
                    raise StoreError("not_found", f"identity {identity}: its record is at session "
                                     f"{cur_session} generation {cur_generation}, the write names session "
                                     f"{session_id} generation {generation}")
                if fence < cur_token:
                    raise StoreError("stale_fencing_token", f"identity {identity}: presented fence {fence}, "
                                     f"current {cur_token}")
                if version <= cur_version:
                    raise StoreError("stale_checkpoint_version", f"identity {identity}: presented checkpoint "
                                     f"version {version}, current {cur_version}")
            owner = tx.one("SELECT identity, generation FROM session_snapshots WHERE session_id = ?1",
                           (session_id,))
            if owner is not None and (owner[0] != identity or owner[1] != generation):
                raise StoreError("corruption", f"session snapshot {session_id} is owned by {owner[0]}/generation "
                                 f"{owner[1]}, not {identity}/generation {generation}")
            tx.execute("""INSERT INTO session_snapshots
                    (session_id, identity, generation, checkpoint_version, fencing_token, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(session_id) DO UPDATE SET
                    identity = excluded.identity,
                    generation = excluded.generation,
                    checkpoint_version = excluded.checkpoint_version,
                    fencing_token = excluded.fencing_token,
                    data = excluded.data""",
                       (session_id, identity, generation, version, fence, w["data"]))
            tx.point("after_snapshot_upsert")
            changed = tx.changes("""UPDATE continuity_records
                 SET checkpoint_version = ?1, fencing_token = ?2
                 WHERE identity = ?3 AND session_id = ?4 AND generation = ?5""",
                                 (version, fence, identity, session_id, generation))
            if record_was_present and changed == 0:
                raise StoreError("not_found", f"identity {identity}: its record moved during the save")
            tx.point("after_record_update")
        return self.db.run("save_session_snapshot", body)

    def upsert_continuity_record(self, args):
        r = record_in(need(args, "record", dict), "record")
        fence = uint(args, "fence")

        def body(tx):
            existing = tx.one("SELECT fencing_token, generation FROM continuity_records WHERE identity = ?1",
                              (r["identity"],))
            if existing is not None:
                cur_token, cur_generation = existing
                if fence < cur_token and not broken("continuity.upsert_fence"):
                    raise StoreError("stale_fencing_token", f"identity {r['identity']}: presented fence {fence}, "
                                     f"current {cur_token}")
                if r["generation"] < cur_generation:
                    raise StoreError("stale_continuity_generation", f"identity {r['identity']}: presented "
                                     f"generation {r['generation']}, current {cur_generation}")
            tx.execute("""INSERT INTO continuity_records
                    (identity, agent_runtime_id, session_id, generation, checkpoint_version, fencing_token)
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
                    fencing_token = excluded.fencing_token""",
                       (r["identity"], r["agent_runtime_id"], r["session_id"], r["generation"],
                        r["checkpoint_version"], fence))
        return self.db.run("upsert_continuity_record", body)

    def rollback_continuity_record(self, args):
        attempt = record_in(need(args, "attempt", dict), "attempt")
        previous = args.get("previous")
        previous = None if previous is None else record_in(previous, "previous")
        fence = uint(args, "fence")
        identity = attempt["identity"]
        if previous is not None and previous["identity"] != identity:
            raise StoreError("corruption", f"reset rollback identity mismatch: attempted {identity}, "
                             f"previous {previous['identity']}")

        def body(tx):
            current = tx.one("""SELECT agent_runtime_id, session_id, generation, fencing_token
                                FROM continuity_records WHERE identity = ?1""", (identity,))
            if current is None:
                raise StoreError("not_found", f"identity {identity} has no record to roll back")
            cur_runtime, cur_session, cur_generation, cur_token = current
            if cur_token != fence:
                raise StoreError("stale_fencing_token", f"identity {identity}: presented fence {fence}, "
                                 f"current {cur_token}")
            if (cur_runtime != attempt["agent_runtime_id"] or cur_session != attempt["session_id"]
                    or cur_generation != attempt["generation"]):
                raise StoreError("stale_continuity_generation", f"identity {identity}: presented generation "
                                 f"{attempt['generation']}, current {cur_generation} (runtime {cur_runtime}, "
                                 f"session {cur_session})")
            tx.execute("DELETE FROM session_snapshots WHERE identity = ?1 AND generation = ?2",
                       (identity, attempt["generation"]))
            tx.point("after_snapshots_delete")
            if previous is not None:
                tx.execute("""UPDATE continuity_records
                     SET agent_runtime_id = ?1, session_id = ?2, generation = ?3,
                         checkpoint_version = ?4, fencing_token = ?5
                     WHERE identity = ?6""",
                           (previous["agent_runtime_id"], previous["session_id"], previous["generation"],
                            previous["checkpoint_version"], fence, identity))
            else:
                tx.execute("DELETE FROM continuity_records WHERE identity = ?1", (identity,))
            tx.point("after_record_restore")
        return self.db.run("rollback_continuity_record", body)

    def delete_continuity_record(self, args):
        identity = need(args, "identity", str)
        fence = uint(args, "fence")

        def body(tx):
            row = tx.one("SELECT fencing_token FROM continuity_records WHERE identity = ?1", (identity,))
            if row is not None and fence < row[0]:
                raise StoreError("stale_fencing_token", f"identity {identity}: presented fence {fence}, "
                                 f"current {row[0]}")
            tx.execute("DELETE FROM session_snapshots WHERE identity = ?1", (identity,))
            tx.point("after_snapshots_delete")
            tx.execute("DELETE FROM continuity_records WHERE identity = ?1", (identity,))
            tx.point("after_record_delete")
        return self.db.run("delete_continuity_record", body)

    OPS = {}


ContinuityStore.OPS = {name: getattr(ContinuityStore, name) for name in (
    "resolve_many", "load_session_snapshot", "session_snapshot_matches_current",
    "delete_session_snapshot_if_current_revision", "save_session_snapshot",
    "upsert_continuity_record", "rollback_continuity_record", "delete_continuity_record",
    "max_fencing_token")}
