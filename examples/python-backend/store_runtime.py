"""The runtime store (seed 000: lash_sqlite_store's RuntimePersistence).

The statements, checks and their order are the seed's; `write` (commit on
Ok, roll back on Err) and `write_flow` (the body decides: TxOutcome::Commit
or ::Rollback) are Database.run with a body that returns, raises StoreError,
or raises Rollback(value). The code the seed calls but does not show
(derive_batch_id, QueuedWorkClaimLease::derive, select_claim_prefix,
renewed_claim, put_checkpoint_conn, the graph loaders, the token ledger
merge, ensure_queued_work_completion_conn, session meta, gc, attachments) is
this backend's own reading of it: see READINGS.md.
"""

import hashlib
import json

from readings import kit
from storecheck_protocol import (Database, Rollback, StoreError, b64_in, b64_out, bad_request,
                                 canonical_json, json_text_in, log, need, opt, str_list, uint)

I64_MAX = (1 << 63) - 1

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS session_head (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        session_id TEXT NOT NULL,
        head_json TEXT NOT NULL,
        head_revision INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS graph_nodes (
        node_id TEXT PRIMARY KEY,
        node_json TEXT NOT NULL,
        tombstoned INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS usage_deltas (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        source TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cached_input_tokens INTEGER NOT NULL,
        reasoning_tokens INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS runtime_turn_commits (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        turn_commit_hash TEXT NOT NULL,
        result_json TEXT NOT NULL,
        committed_at_ms INTEGER NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    )""",
    """CREATE TABLE IF NOT EXISTS session_execution_leases (
        session_id TEXT PRIMARY KEY,
        lease_owner_id TEXT,
        lease_token TEXT,
        lease_fencing_token INTEGER NOT NULL DEFAULT 0,
        lease_claimed_at_ms INTEGER NOT NULL DEFAULT 0,
        lease_expires_at_ms INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS queued_work_batches (
        enqueue_seq INTEGER PRIMARY KEY AUTOINCREMENT,
        batch_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        source_key TEXT,
        delivery_policy TEXT NOT NULL,
        slot_policy TEXT NOT NULL,
        merge_key_json TEXT NOT NULL,
        available_at_ms INTEGER NOT NULL,
        enqueued_at_ms INTEGER NOT NULL,
        claim_id TEXT,
        claim_owner_id TEXT,
        claim_token TEXT,
        claim_fencing_token INTEGER NOT NULL DEFAULT 0,
        claim_claimed_at_ms INTEGER NOT NULL DEFAULT 0,
        claim_expires_at_ms INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE INDEX IF NOT EXISTS queued_work_batches_source_idx
        ON queued_work_batches(session_id, source_key)""",
    """CREATE TABLE IF NOT EXISTS queued_work_items (
        batch_id TEXT NOT NULL REFERENCES queued_work_batches(batch_id) ON DELETE CASCADE,
        item_index INTEGER NOT NULL,
        item_id TEXT NOT NULL,
        payload_json TEXT,
        PRIMARY KEY (batch_id, item_index)
    )""",
    """CREATE TABLE IF NOT EXISTS checkpoints (
        checkpoint_ref TEXT PRIMARY KEY,
        data BLOB NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS attachment_manifest (
        attachment_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        data BLOB NOT NULL,
        staged_at_ms INTEGER NOT NULL,
        committed_at_ms INTEGER
    )""",
    """CREATE TABLE IF NOT EXISTS session_meta (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        meta_json TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS id_counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    )""",
]

GRAPH_KINDS = ("unchanged", "append", "replace_full")
DELIVERY_POLICIES = ("next_turn", "interrupt")
SLOT_POLICIES = ("exclusive", "mergeable")
BOUNDARIES = ("turn", "step")

BATCH_COLUMNS = """enqueue_seq, batch_id, session_id, source_key, delivery_policy,
                   slot_policy, merge_key_json, available_at_ms, enqueued_at_ms,
                   claim_fencing_token"""


def saturating_add(a, b):
    return min(I64_MAX, a + b)


def blake(text, size):
    return hashlib.blake2b(text.encode("utf-8"), digest_size=size).hexdigest()


# -- the ids and references this backend mints (the seed shows none of them
# except the lease token and the item id, which are kept exactly)


def lease_token(session_id, owner_id, now, fencing_token):
    # Stated by the seed: format!("{session_id}:{owner_id}:{now}:{fencing_token}")
    return f"{session_id}:{owner_id}:{now}:{fencing_token}"


def item_id(batch_id, index):
    # Stated by the seed: format!("{batch_id}:item:{index}")
    return f"{batch_id}:item:{index}"


def derive_batch_id(session_id, source_key, now, nonce):
    """derive_batch_id(&session_id, source_key, now, Some(nonce)): "wb", the
    store-wide counter, "-", and 12 hex of a hash of what the seed passes."""
    if kit("runtime.ids"):
        return f"{session_id}:batch:{nonce}"
    h = blake(f"{session_id}\x1f{source_key if source_key is not None else ''}\x1f{now}\x1f{nonce}", 6)
    return f"wb{nonce}-{h}"


def derive_claim(candidate, session_id, owner_id, now, ttl):
    """QueuedWorkClaimLease::derive(&candidates[0], session, owner, now, ttl)."""
    fencing_token = candidate["claim_fencing_token"] + 1
    if kit("runtime.ids"):
        claim_id = f"{session_id}:claim:{candidate['batch_id']}:{fencing_token}"
        token = f"{claim_id}:{owner_id}:{now}"
        return {"claim_id": claim_id, "lease_token": token, "fencing_token": fencing_token,
                "claimed_at_ms": now, "expires_at_ms": saturating_add(now, ttl)}
    claim_id = f"wc{candidate['enqueue_seq']}-{fencing_token}"
    token = blake(f"{session_id}\x1f{owner_id}\x1f{candidate['enqueue_seq']}\x1f{fencing_token}\x1f{now}\x1f{ttl}", 16)
    return {"claim_id": claim_id, "lease_token": token, "fencing_token": fencing_token,
            "claimed_at_ms": now, "expires_at_ms": saturating_add(now, ttl)}


def checkpoint_ref(data):
    """put_checkpoint_conn's reference: content-addressed, BLAKE2b-256."""
    if kit("runtime.ids"):
        return "sha256:" + hashlib.sha256(data).hexdigest()
    return "blob:b2:" + hashlib.blake2b(data, digest_size=32).hexdigest()


def select_claim_prefix(candidates, boundary, max_batches):
    """How many of the claimable batches (enqueue order) one claim takes.

    - a prefix: the first batch not deliverable at the boundary ends it
      (at "step" only "interrupt" batches are deliverable; at "turn" all);
    - at most max_batches;
    - an exclusive batch is claimed alone;
    - a batch joins a claim only when the first batch and it are both
      mergeable, carry the same merge key (a batch with no merge key merges
      with nothing), and share the first batch's delivery policy."""
    n = 0
    if not candidates:
        return 0
    first = candidates[0]
    if kit("runtime.claim_prefix"):
        for i, b in enumerate(candidates):
            if n >= max_batches or (boundary == "step" and b["delivery_policy"] != "interrupt"):
                break
            if i > 0 and (first["slot_policy"] != "mergeable" or b["slot_policy"] != "mergeable"
                          or b["merge_key"] != first["merge_key"]):
                break
            n += 1
            if b["slot_policy"] == "exclusive":
                break
        return n
    for c in candidates:
        if n >= max_batches:
            break
        if boundary == "step" and c["delivery_policy"] != "interrupt":
            break
        if n > 0:
            if first["slot_policy"] != "mergeable" or c["slot_policy"] != "mergeable":
                break
            if first["merge_key"] is None or c["merge_key"] != first["merge_key"]:
                break
            if c["delivery_policy"] != first["delivery_policy"]:
                break
        n += 1
        if c["slot_policy"] == "exclusive":
            break
    return n


# -- decoding arguments


def fence_in(v, what):
    if not isinstance(v, dict):
        raise bad_request(f"{what} must be an object")
    return {"session_id": need(v, "session_id", str, what), "owner_id": need(v, "owner_id", str, what),
            "lease_token": need(v, "lease_token", str, what), "fencing_token": uint(v, "fencing_token", what)}


def opt_json(v, what):
    """An Option<serde_json::Value> field: None for absent, null, "" or the
    JSON text `null` (serde reads null into None); else its canonical text."""
    parsed = json_text_in(v, what)
    if parsed is None:
        return None
    if kit("runtime.json_verbatim"):
        return v
    if parsed[0] is None:
        return None
    return parsed[1]


def node_in(v, what):
    if not isinstance(v, dict):
        raise bad_request(f"{what} must be an object")
    node_id = need(v, "node_id", str, what)
    parent = opt(v, "parent_id", str, "")
    data = opt_json(v.get("data"), f"{what}.data")
    if kit("runtime.json_verbatim"):
        return {"node_id": node_id, "parent_id": parent or None, "data_raw": data}
    return {"node_id": node_id, "parent_id": parent or None,
            "data": None if data is None else json.loads(data)}


def node_out(node):
    out = {"node_id": node["node_id"]}
    if node.get("parent_id"):
        out["parent_id"] = node["parent_id"]
    if node.get("data_raw") is not None:
        out["data"] = node["data_raw"]
    elif node.get("data") is not None:
        out["data"] = canonical_json(node["data"])
    return out


def usage_in(v, what):
    if not isinstance(v, dict):
        raise bad_request(f"{what} must be an object")
    u = need(v, "usage", dict, what)
    return {"source": need(v, "source", str, what), "model": need(v, "model", str, what),
            "usage": {k: uint(u, k, f"{what}.usage") for k in
                      ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens")}}


def batch_in(v, what):
    """A QueuedWorkBatch a caller hands back (inside a claim)."""
    if not isinstance(v, dict):
        raise bad_request(f"{what} must be an object")
    items = v.get("items") or []
    if not isinstance(items, list):
        raise bad_request(f"{what}.items must be a list")
    out = {"batch_id": need(v, "batch_id", str, what), "session_id": need(v, "session_id", str, what),
           "delivery_policy": need(v, "delivery_policy", str, what),
           "slot_policy": need(v, "slot_policy", str, what),
           "available_at_ms": need(v, "available_at_ms", int, what),
           "enqueued_at_ms": need(v, "enqueued_at_ms", int, what),
           "claim_fencing_token": uint(v, "claim_fencing_token", what), "items": []}
    for k in ("source_key", "merge_key"):
        if v.get(k):
            out[k] = need(v, k, str, what)
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise bad_request(f"{what}.items[{i}] must be an object")
        item = {"item_id": need(it, "item_id", str, what)}
        if it.get("payload") is not None:
            item["payload"] = need(it, "payload", str, what)
        out["items"].append(item)
    return out


def claim_in(v, what="claim"):
    if not isinstance(v, dict):
        raise bad_request(f"{what} must be an object")
    batches = v.get("batches") or []
    if not isinstance(batches, list):
        raise bad_request(f"{what}.batches must be a list")
    return {"session_id": need(v, "session_id", str, what), "claim_id": need(v, "claim_id", str, what),
            "owner_id": need(v, "owner_id", str, what), "lease_token": need(v, "lease_token", str, what),
            "fencing_token": uint(v, "fencing_token", what),
            "claimed_at_ms": need(v, "claimed_at_ms", int, what),
            "expires_at_ms": need(v, "expires_at_ms", int, what),
            "batches": [batch_in(b, f"{what}.batches[{i}]") for i, b in enumerate(batches)]}


# -- the *_conn helpers


def load_head(tx):
    """try_load_session_head_meta_from_conn."""
    row = tx.one("SELECT session_id, head_json, head_revision FROM session_head WHERE singleton = 1")
    if row is None:
        return None
    try:
        meta = json.loads(row[1])
    except ValueError as e:
        raise StoreError("io", f"session head does not decode: {e}")
    meta["session_id"] = row[0]
    meta["head_revision"] = row[2]
    return meta


def load_lease_row(tx, session_id):
    row = tx.one("""SELECT lease_owner_id, lease_token, lease_fencing_token,
                           lease_claimed_at_ms, lease_expires_at_ms
                    FROM session_execution_leases WHERE session_id = ?1""", (session_id,))
    if row is None:
        return None
    return {"owner_id": row[0], "lease_token": row[1], "fencing_token": row[2],
            "claimed_at_ms": row[3], "expires_at_ms": row[4]}


def lease_expired(session_id):
    return StoreError("session_execution_lease_expired",
                      f"session {session_id}: the presented lease is not its live lease")


def ensure_lease(tx, session_id, fence, now):
    """ensure_session_execution_lease_conn."""
    if fence["session_id"] != session_id:
        raise lease_expired(session_id)
    cur = load_lease_row(tx, session_id)
    if cur is None:
        raise lease_expired(session_id)
    if (cur["owner_id"] == fence["owner_id"] and cur["lease_token"] == fence["lease_token"]
            and cur["fencing_token"] == fence["fencing_token"] and cur["expires_at_ms"] > now):
        return
    raise lease_expired(session_id)


def release_lease(tx, c):
    """release_session_execution_lease_conn."""
    tx.execute("""UPDATE session_execution_leases
                  SET lease_owner_id = NULL, lease_token = NULL,
                      lease_claimed_at_ms = 0, lease_expires_at_ms = 0
                  WHERE session_id = ?1 AND lease_owner_id = ?2 AND lease_token = ?3
                    AND lease_fencing_token = ?4""",
               (c["session_id"], c["owner_id"], c["lease_token"], c["fencing_token"]))


def ensure_completion(tx, completed, now):
    """ensure_queued_work_completion_conn: every named batch is still held by
    the claim (its claim id and claim token are on the row)."""
    live = " AND claim_expires_at_ms > ?5" if kit("runtime.completion_live") else ""
    for batch_id in completed["batch_ids"]:
        params = (completed["session_id"], batch_id, completed["claim_id"], completed["lease_token"])
        row = tx.one("""SELECT 1 FROM queued_work_batches
                        WHERE session_id = ?1 AND batch_id = ?2 AND claim_id = ?3 AND claim_token = ?4""" + live,
                     params + ((now,) if live else ()))
        if row is None:
            raise StoreError("queued_work_claim_expired",
                             f"session {completed['session_id']}: claim {completed['claim_id']} "
                             f"does not hold batch {batch_id}")


def batch_row(r):
    try:
        merge_key = json.loads(r[6])
    except ValueError as e:
        raise StoreError("io", f"batch {r[1]}: merge key does not decode: {e}")
    if r[4] not in DELIVERY_POLICIES or r[5] not in SLOT_POLICIES:
        raise StoreError("io", f"batch {r[1]}: stored policy {r[4]!r}/{r[5]!r} is outside the vocabulary")
    return {"enqueue_seq": r[0], "batch_id": r[1], "session_id": r[2], "source_key": r[3],
            "delivery_policy": r[4], "slot_policy": r[5], "merge_key": merge_key,
            "available_at_ms": r[7], "enqueued_at_ms": r[8], "claim_fencing_token": r[9]}


def batch_from_row(tx, row):
    """queued_work_batch_from_conn(conn, row): the batch as the row was read,
    with its items."""
    items = []
    for item_id_, payload in tx.all("""SELECT item_id, payload_json FROM queued_work_items
                                       WHERE batch_id = ?1 ORDER BY item_index ASC""", (row["batch_id"],)):
        item = {"item_id": item_id_}
        if payload is not None:
            item["payload"] = payload
        items.append(item)
    out = {"batch_id": row["batch_id"], "session_id": row["session_id"],
           "delivery_policy": row["delivery_policy"], "slot_policy": row["slot_policy"],
           "available_at_ms": row["available_at_ms"], "enqueued_at_ms": row["enqueued_at_ms"],
           "claim_fencing_token": row["claim_fencing_token"], "items": items}
    if row["source_key"] is not None:
        out["source_key"] = row["source_key"]
    if row["merge_key"] is not None:
        out["merge_key"] = row["merge_key"]
    return out


def load_batch_by_id(tx, batch_id):
    r = tx.one(f"SELECT {BATCH_COLUMNS} FROM queued_work_batches WHERE batch_id = ?1", (batch_id,))
    return None if r is None else batch_from_row(tx, batch_row(r))


def next_counter(tx, name):
    row = tx.one("SELECT value FROM id_counters WHERE name = ?1", (name,))
    value = 1 if row is None else row[0] + 1
    tx.execute("INSERT INTO id_counters (name, value) VALUES (?1, ?2) "
               "ON CONFLICT(name) DO UPDATE SET value = excluded.value", (name, value))
    return value


def load_nodes(tx, tombstoned_too=False):
    rows = tx.all("SELECT node_json, tombstoned FROM graph_nodes ORDER BY rowid ASC")
    out = []
    for text, tomb in rows:
        if tomb and not tombstoned_too:
            continue
        try:
            out.append(json.loads(text))
        except ValueError:
            continue  # load_node's `.ok()`: a row that does not decode is no node
    return out


def active_path(tx, leaf):
    """load_active_path_session_graph_from_conn: from the leaf up by parent
    links, root first. A tombstoned node is left out but its parent link is
    still followed (tombstoning hides a node, it does not cut the path); the
    walk ends at a node that is not stored (or at a cycle)."""
    if leaf is None:
        return []
    path, seen, cur = [], set(), leaf
    while cur and cur not in seen:
        seen.add(cur)
        row = tx.one("SELECT node_json, tombstoned FROM graph_nodes WHERE node_id = ?1", (cur,))
        if row is None:
            break
        try:
            node = json.loads(row[0])
        except ValueError:
            break
        if row[1] and kit("runtime.active_path"):
            break
        if not row[1]:
            path.append(node)
        cur = node.get("parent_id")
    path.reverse()
    return path


def merged_ledger(tx):
    """merge_token_ledger_entries(load_usage_deltas_conn): one entry per
    (source, model), counts summed, in the order each pair first appeared."""
    merged = {}
    for source, model, i, o, c, r in tx.all("""SELECT source, model, input_tokens, output_tokens,
                                                      cached_input_tokens, reasoning_tokens
                                               FROM usage_deltas ORDER BY id ASC"""):
        e = merged.setdefault((source, model), {"source": source, "model": model, "usage": {
            "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0, "reasoning_tokens": 0}})
        u = e["usage"]
        u["input_tokens"] += i
        u["output_tokens"] += o
        u["cached_input_tokens"] += c
        u["reasoning_tokens"] += r
    if kit("runtime.ledger_order"):
        return [merged[k] for k in sorted(merged)]
    return list(merged.values())


def claim_expired(claim):
    return StoreError("queued_work_claim_expired",
                      f"session {claim['session_id']}: claim {claim['claim_id']} no longer holds its batches")


class RuntimeStore:
    KINDS = {"session_binding_mismatch", "runtime_turn_commit_conflict", "session_execution_lease_expired",
             "head_revision_conflict", "queued_work_claim_expired", "graph_node_conflict",
             "invalid_argument", "io"}
    CRASH_POINTS = [
        "commit_runtime_state/after_checkpoint",
        "commit_runtime_state/after_usage",
        "commit_runtime_state/after_graph",
        "commit_runtime_state/after_head",
        "commit_runtime_state/after_claims_delete",
        "commit_runtime_state/after_attachments",
        "commit_runtime_state/after_turn_record",
        "commit_runtime_state/after_commit",
        "try_claim_session_execution_lease/after_commit",
        "renew_session_execution_lease/after_commit",
        "release_session_execution_lease/after_commit",
        "enqueue_queued_work/after_batch_insert",
        "enqueue_queued_work/after_items_insert",
        "enqueue_queued_work/after_commit",
        "claim_ready_queued_work/after_first_batch_update",
        "claim_ready_queued_work/after_batches_update",
        "claim_ready_queued_work/after_commit",
        "renew_queued_work_claim/after_commit",
        "abandon_queued_work_claim/after_commit",
        "cancel_queued_work_batch/after_commit",
        "save_session_meta/after_commit",
        "tombstone_nodes/after_first_tombstone",
        "tombstone_nodes/after_commit",
        "vacuum/after_commit",
        "gc_unreachable/after_commit",
        "stage_attachment/after_commit",
    ]

    def __init__(self, path, timeout_ms, now_ms):
        self.now_ms = now_ms
        self.db = Database(path, timeout_ms)
        try:
            self.db.enable_wal()
            self.db.conn.execute("PRAGMA foreign_keys=ON")
            self.db.run("open", lambda tx: [tx.execute(s) for s in SCHEMA])
        except StoreError:
            self.db.close()
            raise

    def close(self):
        self.db.close()

    # -- reads

    def durability_tier(self, args):
        return "durable"

    def load_session(self, args):
        scope = opt(args, "scope", dict, {})
        active = opt(scope, "active_path", bool, False)
        scope_leaf = opt(scope, "leaf_node_id", str, "") or None

        def body(tx):
            meta = load_head(tx)
            if meta is None:
                return None
            head_leaf = meta.get("leaf_node_id")
            if active:
                leaf = scope_leaf if scope_leaf is not None else head_leaf
                nodes = active_path(tx, leaf)
            else:
                leaf = head_leaf
                nodes = load_nodes(tx)
            graph = {"nodes": [node_out(n) for n in nodes]}
            if leaf:
                graph["leaf_node_id"] = leaf
            ref = meta.get("checkpoint_ref")
            checkpoint = None
            if ref is not None:
                row = tx.one("SELECT data FROM checkpoints WHERE checkpoint_ref = ?1", (ref,))
                if row is not None:
                    checkpoint = b64_out(row[0])
            out = {"session_id": meta["session_id"], "head_revision": meta["head_revision"],
                   "graph": graph, "checkpoint_ref": ref or "", "checkpoint": checkpoint,
                   "token_ledger": merged_ledger(tx)}
            for k in ("config", "agent_frames", "current_agent_frame_id"):
                if meta.get(k) is not None and meta.get(k) != "":
                    out[k] = meta[k]
            return out
        return self.db.run("load_session", body, write=False)

    def load_node(self, args):
        node_id = need(args, "node_id", str)

        def body(tx):
            row = tx.one("SELECT node_json FROM graph_nodes WHERE node_id = ?1 AND tombstoned = 0", (node_id,))
            if row is None:
                return None
            try:
                return node_out(json.loads(row[0]))
            except ValueError:
                return None
        return self.db.run("load_node", body, write=False)

    def list_queued_work(self, args):
        session_id = need(args, "session_id", str)

        def body(tx):
            rows = tx.all(f"""SELECT {BATCH_COLUMNS} FROM queued_work_batches
                              WHERE session_id = ?1 ORDER BY enqueue_seq ASC""", (session_id,))
            return [batch_from_row(tx, batch_row(r)) for r in rows]
        return self.db.run("list_queued_work", body, write=False)

    def list_pending_queued_work(self, args):
        session_id = need(args, "session_id", str)
        now = self.now_ms

        def body(tx):
            rows = tx.all(f"""SELECT {BATCH_COLUMNS} FROM queued_work_batches
                              WHERE session_id = ?1
                                AND (claim_token IS NULL OR claim_expires_at_ms <= ?2)
                              ORDER BY enqueue_seq ASC""", (session_id, now))
            return [batch_from_row(tx, batch_row(r)) for r in rows]
        return self.db.run("list_pending_queued_work", body, write=False)

    def load_session_meta(self, args):
        # The seed's Store::load_session_meta answers an Option and no error.
        try:
            row = self.db.run("load_session_meta",
                              lambda tx: tx.one("SELECT meta_json FROM session_meta WHERE singleton = 1"),
                              write=False)
        except StoreError:
            return None
        return None if row is None else row[0]

    def load_attachment(self, args):
        attachment_id = need(args, "attachment_id", str)

        def body(tx):
            row = tx.one("""SELECT session_id, data, committed_at_ms FROM attachment_manifest
                            WHERE attachment_id = ?1""", (attachment_id,))
            if row is None:
                return None
            out = {"attachment_id": attachment_id, "session_id": row[0], "data": b64_out(row[1])}
            if row[2] is not None:
                out["committed_at_ms"] = row[2]
            return out
        return self.db.run("load_attachment", body, write=False)

    # -- commit

    def commit_runtime_state(self, args):
        c = need(args, "commit", dict)
        session_id = need(c, "session_id", str, "commit")
        expected = c.get("expected_head_revision")
        if expected is not None:
            expected = uint(c, "expected_head_revision", "commit")
        lease = None if c.get("session_execution_lease") is None else \
            fence_in(c["session_execution_lease"], "session_execution_lease")
        release = None if c.get("release_session_execution_lease") is None else \
            fence_in(c["release_session_execution_lease"], "release_session_execution_lease")
        turn = c.get("turn_commit")
        if turn is not None:
            if not isinstance(turn, dict):
                raise bad_request("turn_commit must be an object")
            turn = {"session_id": need(turn, "session_id", str, "turn_commit"),
                    "turn_id": need(turn, "turn_id", str, "turn_commit"),
                    "turn_commit_hash": need(turn, "turn_commit_hash", str, "turn_commit")}
        claims = []
        for i, cc in enumerate(c.get("completed_queue_claims") or []):
            what = f"completed_queue_claims[{i}]"
            if not isinstance(cc, dict):
                raise bad_request(f"{what} must be an object")
            claims.append({"session_id": need(cc, "session_id", str, what),
                           "claim_id": need(cc, "claim_id", str, what),
                           "lease_token": need(cc, "lease_token", str, what),
                           "batch_ids": str_list(cc, "batch_ids")})
        # The graph delta, the opaque values and the usage decode before the
        # store is touched (the seed's typed RuntimeCommit cannot hold a kind
        # outside the vocabulary or a value that is not JSON).
        g = need(c, "graph", dict, "commit")
        kind = need(g, "kind", str, "graph")
        bad_kind = None if kind in GRAPH_KINDS else StoreError(
            "invalid_argument", f"graph delta kind {kind!r} is not one of {', '.join(GRAPH_KINDS)}")
        if bad_kind is not None and not kit("runtime.graph_kind_late"):
            raise bad_kind
        nodes = [node_in(n, f"graph.nodes[{i}]") for i, n in enumerate(g.get("nodes") or [])]
        delta_leaf = opt(g, "leaf_node_id", str, "") or None
        checkpoint = b64_in(c.get("checkpoint"), "checkpoint")
        config = opt_json(c.get("config"), "config")
        frames = opt_json(c.get("agent_frames"), "agent_frames")
        frame_id = opt(c, "current_agent_frame_id", str, "") or None
        usage = [usage_in(u, f"usage_deltas[{i}]") for i, u in enumerate(c.get("usage_deltas") or [])]
        attachment_ids = str_list(c, "committed_attachment_ids")
        now = self.now_ms

        def body(tx):
            existing = load_head(tx)
            if existing is not None and existing["session_id"] != session_id:
                raise StoreError("session_binding_mismatch", f"store is bound to session "
                                 f"{existing['session_id']}, commit names {session_id}")
            if turn is not None:
                if turn["session_id"] != session_id:
                    raise StoreError("runtime_turn_commit_conflict", f"turn {turn['turn_id']} of session "
                                     f"{turn['session_id']} in a commit of session {session_id}")
                prior = tx.one("""SELECT turn_commit_hash, result_json FROM runtime_turn_commits
                                  WHERE session_id = ?1 AND turn_id = ?2""", (turn["session_id"], turn["turn_id"]))
                if prior is not None:
                    if prior[0] == turn["turn_commit_hash"]:
                        try:
                            result = json.loads(prior[1])
                        except ValueError as e:
                            raise StoreError("io", f"failed to decode runtime turn commit result: {e}")
                        if release is not None:
                            release_lease(tx, release)
                        return {"head_revision": result["head_revision"],
                                "checkpoint_ref": result["checkpoint_ref"]}
                    raise StoreError("runtime_turn_commit_conflict", f"turn {turn['turn_id']} of session "
                                     f"{turn['session_id']} committed with hash {prior[0]}, "
                                     f"not {turn['turn_commit_hash']}")
            if lease is None:
                raise lease_expired(session_id)
            ensure_lease(tx, session_id, lease, now)
            actual = 0 if existing is None else existing["head_revision"]
            if expected is not None and expected != actual:
                raise StoreError("head_revision_conflict", f"expected head revision {expected}, actual {actual}")
            for cc in claims:
                if cc["session_id"] != session_id:
                    raise StoreError("queued_work_claim_expired", f"claim {cc['claim_id']} of session "
                                     f"{cc['session_id']} in a commit of session {session_id}")
                ensure_completion(tx, cc, now)
            if bad_kind is not None:
                raise bad_kind
            if kind == "append" and kit("runtime.graph_conflict"):
                seen = set()
                for n in nodes:
                    if n["node_id"] in seen or tx.one("SELECT 1 FROM graph_nodes WHERE node_id = ?1", (n["node_id"],)):
                        raise StoreError("graph_node_conflict", f"node {n['node_id']} is already in the graph")
                    seen.add(n["node_id"])

            ref = checkpoint_ref(checkpoint)
            tx.execute("INSERT OR IGNORE INTO checkpoints (checkpoint_ref, data) VALUES (?1, ?2)", (ref, checkpoint))
            tx.point("after_checkpoint")
            for u in usage:
                tx.execute("""INSERT INTO usage_deltas (source, model, input_tokens, output_tokens,
                                  cached_input_tokens, reasoning_tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6)""",
                           (u["source"], u["model"], u["usage"]["input_tokens"], u["usage"]["output_tokens"],
                            u["usage"]["cached_input_tokens"], u["usage"]["reasoning_tokens"]))
            if usage:
                tx.point("after_usage")
            # Unchanged keeps the nodes; Append inserts (a node id already
            # stored fails the insert: a store error, io); ReplaceFull drops
            # every node first. Each sets the delta's leaf.
            if kind != "unchanged":
                if kind == "replace_full":
                    tx.execute("DELETE FROM graph_nodes")
                for n in nodes:
                    tx.execute("INSERT INTO graph_nodes (node_id, node_json) VALUES (?1, ?2)",
                               (n["node_id"], canonical_json(n)))
            leaf = delta_leaf
            tx.point("after_graph")
            count = tx.one("SELECT COUNT(*) FROM graph_nodes WHERE tombstoned = 0")[0]
            next_revision = actual + 1
            head = {"config": config, "agent_frames": frames, "current_agent_frame_id": frame_id,
                    "checkpoint_ref": ref, "leaf_node_id": leaf, "graph_node_count": count,
                    "token_ledger": []}
            tx.execute("""INSERT OR REPLACE INTO session_head (singleton, session_id, head_json, head_revision)
                          VALUES (1, ?1, ?2, ?3)""", (session_id, json.dumps(head), next_revision))
            tx.point("after_head")
            for cc in claims:
                for batch_id in cc["batch_ids"]:
                    tx.execute("""DELETE FROM queued_work_batches
                                  WHERE session_id = ?1 AND batch_id = ?2 AND claim_id = ?3 AND claim_token = ?4""",
                               (cc["session_id"], batch_id, cc["claim_id"], cc["lease_token"]))
            tx.point("after_claims_delete")
            for aid in attachment_ids:
                tx.execute("""UPDATE attachment_manifest SET committed_at_ms = COALESCE(committed_at_ms, ?1)
                              WHERE attachment_id = ?2 AND session_id = ?3""", (now, aid, session_id))
            tx.point("after_attachments")
            result = {"head_revision": next_revision, "checkpoint_ref": ref}
            if turn is not None:
                tx.execute("""INSERT INTO runtime_turn_commits
                                  (session_id, turn_id, turn_commit_hash, result_json, committed_at_ms)
                              VALUES (?1, ?2, ?3, ?4, ?5)""",
                           (turn["session_id"], turn["turn_id"], turn["turn_commit_hash"],
                            json.dumps(result), now))
                tx.point("after_turn_record")
            if release is not None:
                release_lease(tx, release)
            return result
        return self.db.run("commit_runtime_state", body)

    # -- the session execution lease

    def try_claim_session_execution_lease(self, args):
        session_id = need(args, "session_id", str)
        owner_id = need(args, "owner_id", str)
        ttl = uint(args, "lease_ttl_ms")
        now = self.now_ms

        def body(tx):
            cur = load_lease_row(tx, session_id)
            if cur is not None and cur["lease_token"] is not None and cur["expires_at_ms"] > now:
                if cur["owner_id"] == owner_id:
                    expires = saturating_add(now, ttl)
                    tx.execute("UPDATE session_execution_leases SET lease_expires_at_ms = ?2 WHERE session_id = ?1",
                               (session_id, expires))
                    return {"session_id": session_id, "owner_id": owner_id, "lease_token": cur["lease_token"],
                            "fencing_token": cur["fencing_token"], "claimed_at_ms": cur["claimed_at_ms"],
                            "expires_at_ms": expires}
                return None
            fencing_token = (0 if cur is None else cur["fencing_token"]) + 1
            token = lease_token(session_id, owner_id, now, fencing_token)
            expires = saturating_add(now, ttl)
            tx.execute("""INSERT INTO session_execution_leases (session_id, lease_owner_id, lease_token,
                              lease_fencing_token, lease_claimed_at_ms, lease_expires_at_ms)
                          VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                          ON CONFLICT(session_id) DO UPDATE SET
                              lease_owner_id = excluded.lease_owner_id,
                              lease_token = excluded.lease_token,
                              lease_fencing_token = excluded.lease_fencing_token,
                              lease_claimed_at_ms = excluded.lease_claimed_at_ms,
                              lease_expires_at_ms = excluded.lease_expires_at_ms""",
                       (session_id, owner_id, token, fencing_token, now, expires))
            return {"session_id": session_id, "owner_id": owner_id, "lease_token": token,
                    "fencing_token": fencing_token, "claimed_at_ms": now, "expires_at_ms": expires}
        return self.db.run("try_claim_session_execution_lease", body)

    def renew_session_execution_lease(self, args):
        fence = fence_in(need(args, "fence", dict), "fence")
        ttl = uint(args, "lease_ttl_ms")
        now = self.now_ms

        def body(tx):
            cur = load_lease_row(tx, fence["session_id"])
            if cur is None:
                raise lease_expired(fence["session_id"])
            if (cur["owner_id"] != fence["owner_id"] or cur["lease_token"] != fence["lease_token"]
                    or cur["fencing_token"] != fence["fencing_token"] or cur["expires_at_ms"] <= now):
                raise lease_expired(fence["session_id"])
            expires = saturating_add(now, ttl)
            tx.execute("""UPDATE session_execution_leases SET lease_expires_at_ms = ?5
                          WHERE session_id = ?1 AND lease_owner_id = ?2 AND lease_token = ?3
                            AND lease_fencing_token = ?4""",
                       (fence["session_id"], fence["owner_id"], fence["lease_token"], fence["fencing_token"], expires))
            return {"session_id": fence["session_id"], "owner_id": fence["owner_id"],
                    "lease_token": fence["lease_token"], "fencing_token": fence["fencing_token"],
                    "claimed_at_ms": cur["claimed_at_ms"], "expires_at_ms": expires}
        return self.db.run("renew_session_execution_lease", body)

    def release_session_execution_lease(self, args):
        completion = fence_in(need(args, "completion", dict), "completion")
        self.db.run("release_session_execution_lease", lambda tx: release_lease(tx, completion))
        return None

    # -- queued work

    def enqueue_queued_work(self, args):
        d = need(args, "batch", dict)
        session_id = need(d, "session_id", str, "batch")
        source_key = opt(d, "source_key", str, "") or None
        delivery = need(d, "delivery_policy", str, "batch")
        slot = need(d, "slot_policy", str, "batch")
        if delivery not in DELIVERY_POLICIES:
            raise StoreError("invalid_argument", f"delivery policy {delivery!r} is not one of "
                             f"{', '.join(DELIVERY_POLICIES)}")
        if slot not in SLOT_POLICIES:
            raise StoreError("invalid_argument", f"slot policy {slot!r} is not one of {', '.join(SLOT_POLICIES)}")
        merge_key = opt(d, "merge_key", str, "") or None
        available_at = need(d, "available_at_ms", int, "batch")
        payloads = d.get("payloads") or []
        if not isinstance(payloads, list):
            raise bad_request("batch.payloads must be a list")
        texts = []
        for i, p in enumerate(payloads):
            parsed = json_text_in(p, f"payloads[{i}]")
            texts.append(None if parsed is None else (p if kit("runtime.json_verbatim") else parsed[1]))
        now = self.now_ms

        def body(tx):
            if source_key is not None:
                row = tx.one("SELECT batch_id FROM queued_work_batches WHERE session_id = ?1 AND source_key = ?2",
                             (session_id, source_key))
                if row is not None:
                    existing = load_batch_by_id(tx, row[0])
                    if existing is None:
                        raise StoreError("io", "queued work source row disappeared")
                    return existing
            nonce = next_counter(tx, "queued_work_batch")
            batch_id = derive_batch_id(session_id, source_key, now, nonce)
            tx.execute("""INSERT INTO queued_work_batches (batch_id, session_id, source_key, delivery_policy,
                              slot_policy, merge_key_json, available_at_ms, enqueued_at_ms)
                          VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)""",
                       (batch_id, session_id, source_key, delivery, slot, json.dumps(merge_key),
                        available_at, now))
            tx.point("after_batch_insert")
            for index, text in enumerate(texts):
                tx.execute("""INSERT INTO queued_work_items (batch_id, item_index, item_id, payload_json)
                              VALUES (?1, ?2, ?3, ?4)""", (batch_id, index, item_id(batch_id, index), text))
            if texts:
                tx.point("after_items_insert")
            batch = load_batch_by_id(tx, batch_id)
            if batch is None:
                raise StoreError("io", "queued work insert disappeared")
            return batch
        return self.db.run("enqueue_queued_work", body)

    def claim_ready_queued_work(self, args):
        session_id = need(args, "session_id", str)
        fence = fence_in(need(args, "session_execution_lease", dict), "session_execution_lease")
        owner_id = need(args, "owner_id", str)
        boundary = need(args, "boundary", str)
        if boundary not in BOUNDARIES:
            raise StoreError("invalid_argument", f"claim boundary {boundary!r} is not one of {', '.join(BOUNDARIES)}")
        ttl = uint(args, "lease_ttl_ms")
        max_batches = uint(args, "max_batches")
        if max_batches == 0:
            return None
        now = self.now_ms

        def body(tx):
            ensure_lease(tx, session_id, fence, now)
            rows = tx.all(f"""SELECT {BATCH_COLUMNS} FROM queued_work_batches
                              WHERE session_id = ?1 AND available_at_ms <= ?2
                                AND (claim_token IS NULL OR claim_expires_at_ms <= ?2)
                              ORDER BY enqueue_seq ASC LIMIT ?3""", (session_id, now, min(max_batches, I64_MAX)))
            candidates = [batch_row(r) for r in rows]
            n = select_claim_prefix(candidates, boundary, max_batches)
            if n == 0:
                return None
            selected = candidates[:n]
            lease = derive_claim(candidates[0], session_id, owner_id, now, ttl)
            for i, row in enumerate(selected):
                claimed = tx.changes("""UPDATE queued_work_batches
                                        SET claim_id = ?3, claim_owner_id = ?4, claim_token = ?5,
                                            claim_fencing_token = claim_fencing_token + 1,
                                            claim_claimed_at_ms = ?6, claim_expires_at_ms = ?7
                                        WHERE session_id = ?1 AND batch_id = ?2
                                          AND (claim_token IS NULL OR claim_expires_at_ms <= ?6)""",
                                     (session_id, row["batch_id"], lease["claim_id"], owner_id,
                                      lease["lease_token"], now, lease["expires_at_ms"]))
                if claimed == 0:
                    raise Rollback(None)
                if i == 0:
                    tx.point("after_first_batch_update")
            tx.point("after_batches_update")
            if kit("runtime.claim_batches_after_update"):
                batches = [load_batch_by_id(tx, row["batch_id"]) for row in selected]
            else:
                batches = [batch_from_row(tx, row) for row in selected]
            return {"session_id": session_id, "claim_id": lease["claim_id"], "owner_id": owner_id,
                    "lease_token": lease["lease_token"], "fencing_token": lease["fencing_token"],
                    "claimed_at_ms": lease["claimed_at_ms"], "expires_at_ms": lease["expires_at_ms"],
                    "batches": batches}
        return self.db.run("claim_ready_queued_work", body)

    def renew_queued_work_claim(self, args):
        claim = claim_in(need(args, "claim", dict))
        ttl = uint(args, "lease_ttl_ms")
        expires = saturating_add(self.now_ms, ttl)
        if kit("runtime.renew_expiry"):
            now = self.now_ms

            def body(tx):
                for b in claim["batches"]:
                    if tx.one("""SELECT 1 FROM queued_work_batches WHERE session_id = ?1 AND batch_id = ?2
                                 AND claim_id = ?3 AND claim_token = ?4 AND claim_expires_at_ms > ?5""",
                              (claim["session_id"], b["batch_id"], claim["claim_id"], claim["lease_token"], now)) is None:
                        raise claim_expired(claim)
                tx.execute("""UPDATE queued_work_batches SET claim_expires_at_ms = ?4
                              WHERE session_id = ?1 AND claim_id = ?2 AND claim_token = ?3""",
                           (claim["session_id"], claim["claim_id"], claim["lease_token"], expires))
            self.db.run("renew_queued_work_claim", body)
            out = dict(claim)
            out["expires_at_ms"] = expires
            return out
        changed = self.db.run("renew_queued_work_claim", lambda tx: tx.changes(
            """UPDATE queued_work_batches SET claim_expires_at_ms = ?4
               WHERE session_id = ?1 AND claim_id = ?2 AND claim_token = ?3""",
            (claim["session_id"], claim["claim_id"], claim["lease_token"], expires)))
        # renewed_claim(claim, changed, expires_at), after the write committed
        # (the seed's conn.write commits the UPDATE before renewed_claim runs).
        if changed == 0 or changed < len(claim["batches"]):
            raise claim_expired(claim)
        out = dict(claim)
        out["expires_at_ms"] = expires
        return out

    def abandon_queued_work_claim(self, args):
        claim = claim_in(need(args, "claim", dict))
        self.db.run("abandon_queued_work_claim", lambda tx: tx.execute(
            """UPDATE queued_work_batches
               SET claim_id = NULL, claim_owner_id = NULL, claim_token = NULL,
                   claim_claimed_at_ms = 0, claim_expires_at_ms = 0
               WHERE session_id = ?1 AND claim_id = ?2 AND claim_token = ?3""",
            (claim["session_id"], claim["claim_id"], claim["lease_token"])))
        return None

    def cancel_queued_work_batch(self, args):
        session_id = need(args, "session_id", str)
        batch_id = need(args, "batch_id", str)
        now = self.now_ms

        def body(tx):
            r = tx.one(f"""SELECT {BATCH_COLUMNS} FROM queued_work_batches
                           WHERE session_id = ?1 AND batch_id = ?2
                             AND (claim_token IS NULL OR claim_expires_at_ms <= ?3)""", (session_id, batch_id, now))
            if r is None:
                return None
            batch = batch_from_row(tx, batch_row(r))
            tx.execute("""DELETE FROM queued_work_batches
                          WHERE session_id = ?1 AND batch_id = ?2
                            AND (claim_token IS NULL OR claim_expires_at_ms <= ?3)""", (session_id, batch_id, now))
            return batch
        return self.db.run("cancel_queued_work_batch", body)

    # -- meta, graph maintenance, checkpoints, attachments

    def save_session_meta(self, args):
        meta = opt_json(args.get("meta"), "meta")
        # The seed's Store::save_session_meta answers nothing: a store error
        # is swallowed (the trait method always answers Ok).
        try:
            self.db.run("save_session_meta", lambda tx: tx.execute(
                """INSERT INTO session_meta (singleton, meta_json) VALUES (1, ?1)
                   ON CONFLICT(singleton) DO UPDATE SET meta_json = excluded.meta_json""", (meta,)))
        except StoreError as e:
            log(f"save_session_meta: {e.message} (swallowed, as the seed does)")
        return None

    def tombstone_nodes(self, args):
        ids = str_list(args, "ids")
        if not ids:
            return None

        def body(tx):
            for i, node_id in enumerate(ids):
                tx.execute("UPDATE graph_nodes SET tombstoned = 1 WHERE node_id = ?1", (node_id,))
                if i == 0:
                    tx.point("after_first_tombstone")
        self.db.run("tombstone_nodes", body)
        return None

    def vacuum(self, args):
        removed = self.db.run("vacuum", lambda tx: tx.changes("DELETE FROM graph_nodes WHERE tombstoned = 1"))
        return {"removed_node_count": removed}

    def gc_unreachable(self, args):
        """Store::gc_unreachable: removes every stored checkpoint that nothing
        durable names: neither the head nor a recorded turn commit result
        (a replayed turn answers its checkpoint reference again, so that
        checkpoint stays reachable). The seed's method answers a report and
        no error: a failure reports 0 removed."""
        def body(tx):
            if kit("runtime.gc_head_only"):
                return tx.changes("""DELETE FROM checkpoints WHERE checkpoint_ref NOT IN (
                    SELECT json_extract(head_json, '$.checkpoint_ref') FROM session_head
                     WHERE json_extract(head_json, '$.checkpoint_ref') IS NOT NULL)""")
            return tx.changes("""DELETE FROM checkpoints
                WHERE checkpoint_ref NOT IN (
                    SELECT json_extract(head_json, '$.checkpoint_ref') FROM session_head
                     WHERE json_extract(head_json, '$.checkpoint_ref') IS NOT NULL
                    UNION
                    SELECT json_extract(result_json, '$.checkpoint_ref') FROM runtime_turn_commits
                     WHERE json_extract(result_json, '$.checkpoint_ref') IS NOT NULL)""")
        try:
            removed = self.db.run("gc_unreachable", body)
        except StoreError:
            removed = 0
        return {"removed_checkpoint_count": removed}

    def stage_attachment(self, args):
        session_id = need(args, "session_id", str)
        attachment_id = need(args, "attachment_id", str)
        data = b64_in(args.get("data"), "data")
        now = self.now_ms
        # Staging is a draft: an attachment not yet committed takes the latest
        # staging (session and bytes); a committed one never changes.
        if kit("runtime.attachment_first_stage"):
            self.db.run("stage_attachment", lambda tx: tx.execute(
                """INSERT OR IGNORE INTO attachment_manifest
                       (attachment_id, session_id, data, staged_at_ms, committed_at_ms)
                   VALUES (?1, ?2, ?3, ?4, NULL)""", (attachment_id, session_id, data, now)))
            return None
        self.db.run("stage_attachment", lambda tx: tx.execute(
            """INSERT INTO attachment_manifest (attachment_id, session_id, data, staged_at_ms, committed_at_ms)
               VALUES (?1, ?2, ?3, ?4, NULL)
               ON CONFLICT(attachment_id) DO UPDATE SET session_id = excluded.session_id,
                   data = excluded.data, staged_at_ms = excluded.staged_at_ms
               WHERE attachment_manifest.committed_at_ms IS NULL""",
            (attachment_id, session_id, data, now)))
        return None

    OPS = {}


RuntimeStore.OPS = {name: getattr(RuntimeStore, name) for name in (
    "durability_tier", "load_session", "load_node", "commit_runtime_state",
    "try_claim_session_execution_lease", "renew_session_execution_lease",
    "release_session_execution_lease", "enqueue_queued_work", "claim_ready_queued_work",
    "renew_queued_work_claim", "abandon_queued_work_claim", "cancel_queued_work_batch",
    "list_queued_work", "list_pending_queued_work", "save_session_meta", "load_session_meta",
    "tombstone_nodes", "vacuum", "gc_unreachable", "stage_attachment", "load_attachment")}
