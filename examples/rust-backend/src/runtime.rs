//! Seed 000, lash_sqlite_store `RuntimePersistence`, on synchronous
//! rusqlite: the seed's SQL, checks and their order. The seed's `conn.rs`
//! translation rules map onto the crate's `Db`: `self.conn.call` is
//! `Db::call` (statements outside a transaction), `self.conn.write` is
//! `Db::write` and `self.conn.write_flow` is `Db::write_flow` (`BEGIN
//! IMMEDIATE`, "the cross-process write-lock guard"; commit on `Ok`,
//! rollback on `Err`, `TxOutcome` as `Flow`). Every helper the seed calls and
//! does not show is read in READINGS.md (R-entries).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use storecheck_backend::{Context, Db, Error, Flow, OpenRequest, args, result, wire};

use crate::breaks;

pub const NAME: &str = "runtime";

pub const CRASH_POINTS: &[&str] = &[
    "commit_runtime_state/after_graph",
    "commit_runtime_state/after_head",
    "commit_runtime_state/after_claims_delete",
    "commit_runtime_state/after_commit",
    "claim_ready_queued_work/after_batches_update",
    "claim_ready_queued_work/after_commit",
    "try_claim_session_execution_lease/after_commit",
    "renew_session_execution_lease/after_commit",
    "release_session_execution_lease/after_commit",
    "enqueue_queued_work/after_commit",
    "renew_queued_work_claim/after_commit",
    "abandon_queued_work_claim/after_commit",
    "cancel_queued_work_batch/after_commit",
    "tombstone_nodes/after_commit",
];

/// The schema the seed does not show (R21): the seed's table and column
/// names; a batch's items go with it (a trigger).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS session_head (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    session_id TEXT NOT NULL,
    head_json TEXT NOT NULL,
    head_revision INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runtime_turn_commits (
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    turn_commit_hash TEXT NOT NULL,
    result_json TEXT NOT NULL,
    committed_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, turn_id)
);
CREATE TABLE IF NOT EXISTS session_execution_leases (
    session_id TEXT PRIMARY KEY,
    lease_owner_id TEXT,
    lease_token TEXT,
    lease_fencing_token INTEGER NOT NULL DEFAULT 0,
    lease_claimed_at_ms INTEGER NOT NULL DEFAULT 0,
    lease_expires_at_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS queued_work_batches (
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
);
CREATE INDEX IF NOT EXISTS queued_work_batches_source ON queued_work_batches(session_id, source_key);
CREATE TABLE IF NOT EXISTS queued_work_items (
    batch_id TEXT NOT NULL,
    item_index INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    PRIMARY KEY (batch_id, item_index)
);
CREATE TRIGGER IF NOT EXISTS queued_work_items_go_with_their_batch AFTER DELETE ON queued_work_batches
BEGIN
    DELETE FROM queued_work_items WHERE batch_id = old.batch_id;
END;
CREATE TABLE IF NOT EXISTS graph_nodes (
    node_id TEXT PRIMARY KEY,
    node_json TEXT NOT NULL,
    tombstoned INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS usage_deltas (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS attachment_manifest (
    attachment_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    data BLOB NOT NULL,
    committed_at_ms INTEGER
);
CREATE TABLE IF NOT EXISTS session_meta (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    meta_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS store_instances (
    n INTEGER PRIMARY KEY AUTOINCREMENT
);
";

/// How many of a handle's commits run before `maybe_auto_gc` collects (R18).
const AUTO_GC_EVERY: u64 = 8;

// --- StoreError, as the kit's kinds.

fn backend(message: String) -> Error {
    Error::io(message)
}
fn binding_mismatch(bound: &str, attempted: &str) -> Error {
    Error::new("session_binding_mismatch", format!("the store is bound to session {bound}, not {attempted}"))
}
fn turn_conflict(session_id: &str, turn_id: &str) -> Error {
    Error::new("runtime_turn_commit_conflict", format!("session {session_id}: turn {turn_id} was committed with another hash"))
}
fn lease_expired(session_id: &str) -> Error {
    Error::new("session_execution_lease_expired", format!("session {session_id}: the execution lease is not held"))
}
fn head_conflict(expected: Option<u64>, actual: u64) -> Error {
    Error::new("head_revision_conflict", format!("expected head revision {expected:?}, actual {actual}"))
}
fn claim_expired(session_id: &str, claim_id: &str) -> Error {
    Error::new("queued_work_claim_expired", format!("session {session_id}: claim {claim_id} is not held"))
}
fn invalid(message: String) -> Error {
    Error::new("invalid_argument", message)
}

/// `sqlite_error` (R11): a node id already stored is the contract's graph
/// node conflict; every other SQLite error is the store failing (`io`).
fn sqlite_error(e: rusqlite::Error) -> Error {
    if let rusqlite::Error::SqliteFailure(f, Some(msg)) = &e
        && f.code == rusqlite::ErrorCode::ConstraintViolation
        && msg.contains("graph_nodes.node_id")
    {
        return Error::new("graph_node_conflict", format!("graph node already stored: {msg}"));
    }
    Error::io(format!("sqlite: {e}"))
}

fn encode_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// Opaque JSON off the wire (a string holding JSON text) as the seed's
/// `serde_json::Value`; text that is not JSON cannot be one.
fn json_in(what: &str, text: Option<String>) -> Result<Option<Value>, Error> {
    match text {
        None => Ok(None),
        Some(t) => serde_json::from_str::<Value>(&t)
            .map(|v| if v.is_null() { None } else { Some(v) })
            .map_err(|e| invalid(format!("{what} is not JSON: {e}"))),
    }
}

fn json_out(v: &Option<Value>) -> Option<String> {
    v.as_ref().map(Value::to_string)
}

// --- Values the seed keeps.

#[derive(Serialize, Deserialize, Clone)]
struct NodeRecord {
    node_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

#[derive(Serialize, Deserialize, Clone)]
struct SessionHeadMeta {
    session_id: String,
    head_revision: u64,
    config: Option<Value>,
    agent_frames: Option<Value>,
    current_agent_frame_id: Option<String>,
    checkpoint_ref: Option<String>,
    leaf_node_id: Option<String>,
    graph_node_count: usize,
    token_ledger: Vec<UsageEntry>,
}

#[derive(Serialize, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    cached_input_tokens: u64,
    reasoning_tokens: u64,
}

#[derive(Serialize, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct UsageEntry {
    source: String,
    model: String,
    usage: Usage,
}

#[derive(Serialize, Deserialize)]
struct RuntimeCommitResult {
    head_revision: u64,
    checkpoint_ref: String,
}

struct StoredCheckpoint {
    checkpoint_ref: String,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Fence {
    session_id: String,
    owner_id: String,
    lease_token: String,
    fencing_token: u64,
}

#[derive(Serialize)]
struct SessionExecutionLease {
    session_id: String,
    owner_id: String,
    lease_token: String,
    fencing_token: u64,
    #[serde(rename = "claimed_at_ms")]
    claimed_at_epoch_ms: u64,
    #[serde(rename = "expires_at_ms")]
    expires_at_epoch_ms: u64,
}

struct SessionExecutionLeaseRow {
    owner_id: Option<String>,
    lease_token: Option<String>,
    fencing_token: u64,
    claimed_at_ms: u64,
    expires_at_ms: u64,
}

#[derive(PartialEq, Clone, Copy)]
enum DeliveryPolicy {
    NextTurn,
    Interrupt,
}
#[derive(PartialEq, Clone, Copy)]
enum SlotPolicy {
    Exclusive,
    Mergeable,
}

impl DeliveryPolicy {
    fn as_str(self) -> &'static str {
        match self {
            DeliveryPolicy::NextTurn => "next_turn",
            DeliveryPolicy::Interrupt => "interrupt",
        }
    }
}
impl SlotPolicy {
    fn as_str(self) -> &'static str {
        match self {
            SlotPolicy::Exclusive => "exclusive",
            SlotPolicy::Mergeable => "mergeable",
        }
    }
}

fn decode_delivery_policy(s: String) -> Result<DeliveryPolicy, Error> {
    match s.as_str() {
        "next_turn" => Ok(DeliveryPolicy::NextTurn),
        "interrupt" => Ok(DeliveryPolicy::Interrupt),
        _ => Err(invalid(format!("delivery policy {s:?} is neither next_turn nor interrupt"))),
    }
}
fn decode_slot_policy(s: String) -> Result<SlotPolicy, Error> {
    match s.as_str() {
        "exclusive" => Ok(SlotPolicy::Exclusive),
        "mergeable" => Ok(SlotPolicy::Mergeable),
        _ => Err(invalid(format!("slot policy {s:?} is neither exclusive nor mergeable"))),
    }
}
fn decode_merge_key(json: String) -> Result<Option<String>, Error> {
    serde_json::from_str(&json).map_err(|e| backend(format!("merge key {json:?}: {e}")))
}

struct QueuedBatchRow {
    enqueue_seq: i64,
    batch_id: String,
    session_id: String,
    source_key: Option<String>,
    delivery_policy: String,
    slot_policy: String,
    merge_key_json: String,
    available_at_ms: i64,
    enqueued_at_ms: i64,
    claim_fencing_token: i64,
}

fn queued_batch_row_from_sql(row: &Row<'_>) -> rusqlite::Result<QueuedBatchRow> {
    Ok(QueuedBatchRow {
        enqueue_seq: row.get(0)?,
        batch_id: row.get(1)?,
        session_id: row.get(2)?,
        source_key: row.get(3)?,
        delivery_policy: row.get(4)?,
        slot_policy: row.get(5)?,
        merge_key_json: row.get(6)?,
        available_at_ms: row.get(7)?,
        enqueued_at_ms: row.get(8)?,
        claim_fencing_token: row.get(9)?,
    })
}

#[derive(Serialize, Clone)]
struct QueuedWorkItem {
    item_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<String>,
}

#[derive(Serialize, Clone)]
struct QueuedWorkBatch {
    batch_id: String,
    session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_key: Option<String>,
    delivery_policy: String,
    slot_policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    merge_key: Option<String>,
    available_at_ms: i64,
    enqueued_at_ms: i64,
    claim_fencing_token: u64,
    items: Vec<QueuedWorkItem>,
}

struct ClaimCandidate {
    enqueue_seq: i64,
    claim_fencing_token: i64,
    delivery_policy: DeliveryPolicy,
    slot_policy: SlotPolicy,
    #[allow(dead_code)]
    merge_key: Option<String>,
}

/// `QueuedWorkClaimLease::derive(&candidates[0], ...)` (R4).
struct QueuedWorkClaimLease {
    claim_id: String,
    lease_token: String,
    fencing_token: u64,
    claimed_at_epoch_ms: u64,
    expires_at_epoch_ms: u64,
}

impl QueuedWorkClaimLease {
    /// The claim's fencing token is the first batch's claim fencing token
    /// as the claim read it, before the claim's increment; its id names the
    /// session, the first batch's place in the queue and that token, which
    /// no other claim of the batch shares; its token adds the owner and the
    /// time.
    fn derive(first: &ClaimCandidate, session_id: &str, owner_id: &str, now: u64, lease_ttl_ms: u64) -> Self {
        let fencing_token = first.claim_fencing_token as u64;
        let claim_id = format!("{session_id}#{}.{fencing_token}", first.enqueue_seq);
        QueuedWorkClaimLease {
            lease_token: format!("{claim_id}/{owner_id}/{now}"),
            claim_id,
            fencing_token,
            claimed_at_epoch_ms: now,
            expires_at_epoch_ms: now.saturating_add(lease_ttl_ms),
        }
    }
}

#[derive(Serialize, Deserialize, Clone)]
struct QueuedWorkClaim {
    session_id: String,
    claim_id: String,
    owner_id: String,
    lease_token: String,
    fencing_token: u64,
    #[serde(rename = "claimed_at_ms")]
    claimed_at_epoch_ms: u64,
    #[serde(rename = "expires_at_ms")]
    expires_at_epoch_ms: u64,
    batches: Option<Vec<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompletedQueueClaim {
    session_id: String,
    claim_id: String,
    lease_token: String,
    batch_ids: Option<Vec<String>>,
}

/// `select_claim_prefix(&candidates, boundary, max_batches)` (R7): a prefix
/// of the claimable batches in enqueue order, at most `max_batches`; a batch
/// not deliverable at the boundary ends it; an exclusive first batch is
/// claimed alone; a later batch joins while it and the first are mergeable,
/// whatever their merge keys.
fn select_claim_prefix(candidates: &[ClaimCandidate], boundary: &str, max_batches: usize) -> Result<usize, Error> {
    let step = match boundary {
        "turn" => false,
        "step" => true,
        other => return Err(invalid(format!("claim boundary {other:?} is neither turn nor step"))),
    };
    let mut n = 0;
    for (i, c) in candidates.iter().enumerate() {
        if n >= max_batches || (step && c.delivery_policy != DeliveryPolicy::Interrupt) {
            break;
        }
        if i > 0 && (candidates[0].slot_policy != SlotPolicy::Mergeable || c.slot_policy != SlotPolicy::Mergeable) {
            break;
        }
        n += 1;
        if c.slot_policy == SlotPolicy::Exclusive {
            break;
        }
    }
    Ok(n)
}

/// `claim_scan_limit(max_batches)` (R8): the prefix never takes more.
fn claim_scan_limit(max_batches: usize) -> i64 {
    i64::try_from(max_batches).unwrap_or(i64::MAX)
}

/// `derive_batch_id(session, source_key, now, Some(nonce))` (R1): the
/// 64-bit FNV-1a of the four, in hex. The nonce is unique to this handle
/// (R1a: the counter starts at this handle's instance number, shifted).
fn derive_batch_id(session_id: &str, source_key: Option<&str>, now: u64, nonce: Option<u64>) -> String {
    let text = format!("{session_id}\0{}\0{now}\0{}", source_key.unwrap_or(""), nonce.unwrap_or(0));
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("qwb-{h:016x}")
}

/// `renewed_claim(claim, changed, expires_at)` (R9): no row of the claim
/// changed, the claim is not held; otherwise the claim with its new expiry.
fn renewed_claim(claim: &QueuedWorkClaim, changed: usize, expires_at: u64) -> Result<QueuedWorkClaim, Error> {
    if changed == 0 {
        return Err(claim_expired(&claim.session_id, &claim.claim_id));
    }
    let mut renewed = claim.clone();
    renewed.expires_at_epoch_ms = expires_at;
    Ok(renewed)
}

/// `merge_token_ledger_entries` (R16): one entry per (source, model),
/// summed, ordered by model, then source.
fn merge_token_ledger_entries(entries: Vec<UsageEntry>) -> Vec<UsageEntry> {
    let mut merged: BTreeMap<(String, String), Usage> = BTreeMap::new();
    for e in entries {
        let u = merged.entry((e.model, e.source)).or_default();
        u.input_tokens = u.input_tokens.saturating_add(e.usage.input_tokens);
        u.output_tokens = u.output_tokens.saturating_add(e.usage.output_tokens);
        u.cached_input_tokens = u.cached_input_tokens.saturating_add(e.usage.cached_input_tokens);
        u.reasoning_tokens = u.reasoning_tokens.saturating_add(e.usage.reasoning_tokens);
    }
    merged.into_iter().map(|((model, source), usage)| UsageEntry { source, model, usage }).collect()
}

fn try_load_session_head_meta_from_conn(conn: &Connection) -> Result<Option<SessionHeadMeta>, Error> {
    let json: Option<String> =
        conn.query_row("SELECT head_json FROM session_head WHERE singleton = 1", [], |r| r.get(0)).optional().map_err(sqlite_error)?;
    json.map(|j| serde_json::from_str(&j).map_err(|e| backend(format!("failed to decode session head: {e}")))).transpose()
}

fn load_session_execution_lease_row_conn(conn: &Connection, session_id: &str) -> Result<Option<SessionExecutionLeaseRow>, Error> {
    let row = conn
        .query_row(
            "SELECT lease_owner_id, lease_token, lease_fencing_token,
                    lease_claimed_at_ms, lease_expires_at_ms
             FROM session_execution_leases
             WHERE session_id = ?1",
            params![session_id],
            |row| {
                Ok(SessionExecutionLeaseRow {
                    owner_id: row.get(0)?,
                    lease_token: row.get(1)?,
                    fencing_token: row.get::<_, i64>(2)? as u64,
                    claimed_at_ms: row.get::<_, i64>(3)? as u64,
                    expires_at_ms: row.get::<_, i64>(4)? as u64,
                })
            },
        )
        .optional()
        .map_err(sqlite_error)?;
    Ok(row)
}

fn ensure_session_execution_lease_conn(conn: &Connection, now: u64, session_id: &str, fence: &Fence) -> Result<(), Error> {
    if fence.session_id != session_id {
        return Err(lease_expired(session_id));
    }
    let current = load_session_execution_lease_row_conn(conn, session_id)?;
    let Some(current) = current else {
        return Err(lease_expired(session_id));
    };
    if current.owner_id.as_deref() == Some(fence.owner_id.as_str())
        && current.lease_token.as_deref() == Some(fence.lease_token.as_str())
        && current.fencing_token == fence.fencing_token
        && (current.expires_at_ms > now || breaks::on(breaks::RUNTIME_LEASE_EXPIRY))
    {
        Ok(())
    } else {
        Err(lease_expired(session_id))
    }
}

fn release_session_execution_lease_conn(conn: &Connection, completion: &Fence) -> Result<(), Error> {
    conn.execute(
        "UPDATE session_execution_leases
         SET lease_owner_id = NULL,
             lease_token = NULL,
             lease_claimed_at_ms = 0,
             lease_expires_at_ms = 0
         WHERE session_id = ?1
           AND lease_owner_id = ?2
           AND lease_token = ?3
           AND lease_fencing_token = ?4",
        params![completion.session_id, completion.owner_id, completion.lease_token, completion.fencing_token as i64],
    )
    .map_err(sqlite_error)?;
    Ok(())
}

/// `ensure_queued_work_completion_conn(tx, completed)` (R10): as the
/// execution lease's check, every batch the completion names is still held
/// by the claim (its id and token) and the claim is live.
fn ensure_queued_work_completion_conn(conn: &Connection, now: u64, completed: &CompletedQueueClaim) -> Result<(), Error> {
    for batch_id in completed.batch_ids.iter().flatten() {
        let held: bool = conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM queued_work_batches
                 WHERE session_id = ?1 AND batch_id = ?2 AND claim_id = ?3 AND claim_token = ?4 AND claim_expires_at_ms > ?5)",
                params![completed.session_id, batch_id, completed.claim_id, completed.lease_token, now as i64],
                |r| r.get(0),
            )
            .map_err(sqlite_error)?;
        if !held {
            return Err(claim_expired(&completed.session_id, &completed.claim_id));
        }
    }
    Ok(())
}

fn queued_work_batch_from_conn(conn: &Connection, row: QueuedBatchRow) -> Result<QueuedWorkBatch, Error> {
    let mut stmt = conn
        .prepare_cached("SELECT item_id, payload_json FROM queued_work_items WHERE batch_id = ?1 ORDER BY item_index")
        .map_err(sqlite_error)?;
    let items = stmt
        .query_map(params![row.batch_id], |r| {
            let payload: String = r.get(1)?;
            Ok((r.get::<_, String>(0)?, payload))
        })
        .map_err(sqlite_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sqlite_error)?;
    let items = items
        .into_iter()
        .map(|(item_id, payload)| {
            let v: Option<Value> = serde_json::from_str(&payload).map_err(|e| backend(format!("queued work payload: {e}")))?;
            Ok(QueuedWorkItem { item_id, payload: json_out(&v) })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(QueuedWorkBatch {
        batch_id: row.batch_id,
        session_id: row.session_id,
        source_key: row.source_key,
        delivery_policy: decode_delivery_policy(row.delivery_policy)?.as_str().to_string(),
        slot_policy: decode_slot_policy(row.slot_policy)?.as_str().to_string(),
        merge_key: decode_merge_key(row.merge_key_json)?,
        available_at_ms: row.available_at_ms,
        enqueued_at_ms: row.enqueued_at_ms,
        claim_fencing_token: row.claim_fencing_token as u64,
        items,
    })
}

fn load_queued_batch_by_id_conn(conn: &Connection, batch_id: &str) -> Result<Option<QueuedWorkBatch>, Error> {
    let row = conn
        .query_row(
            "SELECT enqueue_seq, batch_id, session_id, source_key, delivery_policy,
                    slot_policy, merge_key_json, available_at_ms, enqueued_at_ms,
                    claim_fencing_token
             FROM queued_work_batches WHERE batch_id = ?1",
            params![batch_id],
            queued_batch_row_from_sql,
        )
        .optional()
        .map_err(sqlite_error)?;
    row.map(|r| queued_work_batch_from_conn(conn, r)).transpose()
}

pub struct Store {
    conn: Db,
    commit_count: AtomicU64,
}

impl Store {
    pub fn open(req: &OpenRequest) -> Result<Self, Error> {
        let conn = Db::connect(req)?;
        if req.path.is_some() {
            conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(())).map_err(sqlite_error)?;
        }
        conn.execute_batch(SCHEMA).map_err(sqlite_error)?;
        // R1a: the store's commit counter (the enqueue's nonce) starts at an
        // instance number no other open of this file has had.
        conn.execute("INSERT INTO store_instances DEFAULT VALUES", []).map_err(sqlite_error)?;
        let instance = conn.last_insert_rowid() as u64;
        Ok(Store { conn: Db::new(conn), commit_count: AtomicU64::new(instance << 32) })
    }

    fn load_session_graph_from_conn(conn: &Connection, leaf_node_id: Option<String>) -> Result<Graph, Error> {
        let mut stmt = conn.prepare("SELECT node_json FROM graph_nodes WHERE tombstoned = 0 ORDER BY node_id").map_err(sqlite_error)?;
        let nodes =
            stmt.query_map([], |r| r.get::<_, String>(0)).map_err(sqlite_error)?.collect::<Result<Vec<_>, _>>().map_err(sqlite_error)?;
        Ok(Graph { nodes: nodes.iter().filter_map(|j| serde_json::from_str(j).ok()).collect(), leaf_node_id })
    }

    /// `load_active_path_session_graph_from_conn` (R14): from the leaf up
    /// its parents, each a node not tombstoned (the walk ends at one that is
    /// tombstoned or not stored, and cannot loop).
    fn load_active_path_session_graph_from_conn(conn: &Connection, leaf_node_id: Option<String>) -> rusqlite::Result<Graph> {
        let mut stmt = conn.prepare(
            "WITH RECURSIVE path(node_id, node_json, depth) AS (
                 SELECT node_id, node_json, 0 FROM graph_nodes WHERE node_id = ?1 AND tombstoned = 0
                 UNION
                 SELECT g.node_id, g.node_json, path.depth + 1 FROM graph_nodes AS g
                 JOIN path ON g.node_id = json_extract(path.node_json, '$.parent_id')
                 WHERE g.tombstoned = 0 AND path.depth < 100000
             )
             SELECT node_json FROM path GROUP BY node_id ORDER BY MIN(depth) DESC",
        )?;
        let nodes = stmt.query_map(params![leaf_node_id], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
        Ok(Graph { nodes: nodes.iter().filter_map(|j| serde_json::from_str(j).ok()).collect(), leaf_node_id })
    }

    fn get_checkpoint_conn(conn: &Connection, blob_ref: &str) -> Option<Vec<u8>> {
        let seq: i64 = blob_ref.strip_prefix("ckpt-")?.parse().ok()?;
        conn.query_row("SELECT data FROM checkpoints WHERE seq = ?1", params![seq], |r| r.get(0)).ok()
    }

    /// `put_checkpoint_conn` (R5): one row per commit, named by its number.
    fn put_checkpoint_conn(conn: &Connection, checkpoint: &[u8]) -> rusqlite::Result<StoredCheckpoint> {
        conn.execute("INSERT INTO checkpoints (data) VALUES (?1)", params![checkpoint])?;
        Ok(StoredCheckpoint { checkpoint_ref: format!("ckpt-{}", conn.last_insert_rowid()) })
    }

    fn load_usage_deltas_conn(conn: &Connection) -> Vec<UsageEntry> {
        let load = || -> rusqlite::Result<Vec<UsageEntry>> {
            let mut stmt = conn.prepare(
                "SELECT source, model, input_tokens, output_tokens, cached_input_tokens, reasoning_tokens FROM usage_deltas ORDER BY id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(UsageEntry {
                    source: r.get(0)?,
                    model: r.get(1)?,
                    usage: Usage {
                        input_tokens: r.get::<_, i64>(2)? as u64,
                        output_tokens: r.get::<_, i64>(3)? as u64,
                        cached_input_tokens: r.get::<_, i64>(4)? as u64,
                        reasoning_tokens: r.get::<_, i64>(5)? as u64,
                    },
                })
            })?;
            rows.collect()
        };
        load().unwrap_or_default()
    }

    fn load_session(&self, cx: &Context, scope: ReadScope) -> Result<Option<Value>, Error> {
        self.conn.call(cx, false, |conn| {
            let Some(meta) = try_load_session_head_meta_from_conn(conn)? else {
                return Ok(None);
            };
            let active = scope.active_path.unwrap_or(false);
            let scope_leaf = scope.leaf_node_id.filter(|l| !l.is_empty());
            let leaf_node_id = if active { scope_leaf.or_else(|| meta.leaf_node_id.clone()) } else { meta.leaf_node_id.clone() };
            let mut graph = if active {
                Self::load_active_path_session_graph_from_conn(conn, leaf_node_id.clone()).map_err(sqlite_error)?
            } else {
                Self::load_session_graph_from_conn(conn, meta.leaf_node_id.clone())?
            };
            graph.leaf_node_id = leaf_node_id;
            let checkpoint = meta.checkpoint_ref.as_ref().and_then(|blob_ref| Self::get_checkpoint_conn(conn, blob_ref));
            let read = SessionRead {
                session_id: meta.session_id,
                head_revision: meta.head_revision,
                config: json_out(&meta.config),
                agent_frames: json_out(&meta.agent_frames),
                current_agent_frame_id: meta.current_agent_frame_id,
                graph: graph.wire(),
                checkpoint_ref: meta.checkpoint_ref.unwrap_or_default(),
                checkpoint: checkpoint.unwrap_or_default(),
                token_ledger: merge_token_ledger_entries(Self::load_usage_deltas_conn(conn)),
            };
            Ok(Some(result(&read)?))
        })
    }

    fn load_node(&self, cx: &Context, node_id: String) -> Result<Option<Value>, Error> {
        let row: Option<String> = self.conn.call(cx, false, |conn| {
            conn.query_row("SELECT node_json FROM graph_nodes WHERE node_id = ?1 AND tombstoned = 0", params![node_id], |row| row.get(0))
                .optional()
                .map_err(sqlite_error)
        })?;
        Ok(row.and_then(|json| serde_json::from_str::<NodeRecord>(&json).ok()).map(|n| node_wire(&n)))
    }

    fn commit_runtime_state(&self, cx: &Context, commit: RuntimeCommit) -> Result<RuntimeCommitResult, Error> {
        self.commit_count.fetch_add(1, AtomicOrdering::Relaxed);
        let now = cx.now_ms() as u64;
        let result = self.conn.write_flow(cx, |tx| {
            let outcome: Result<RuntimeCommitResult, Error> = (|| {
                let existing = try_load_session_head_meta_from_conn(tx)?;
                if let Some(bound_session_id) = existing.as_ref().map(|meta| meta.session_id.as_str())
                    && bound_session_id != commit.session_id
                {
                    return Err(binding_mismatch(bound_session_id, &commit.session_id));
                }
                if let Some(completed) = &commit.turn_commit {
                    if completed.session_id != commit.session_id {
                        return Err(turn_conflict(&completed.session_id, &completed.turn_id));
                    }
                    let prior: Option<(String, String)> = tx
                        .query_row(
                            "SELECT turn_commit_hash, result_json FROM runtime_turn_commits
                                 WHERE session_id = ?1 AND turn_id = ?2",
                            params![completed.session_id, completed.turn_id],
                            |row| Ok((row.get(0)?, row.get(1)?)),
                        )
                        .optional()
                        .map_err(sqlite_error)?;
                    if let Some((turn_commit_hash, result_json)) = prior {
                        if turn_commit_hash == completed.turn_commit_hash {
                            let result: RuntimeCommitResult = serde_json::from_str(&result_json)
                                .map_err(|err| backend(format!("failed to decode runtime turn commit result: {err}")))?;
                            if let Some(completion) = commit.release_session_execution_lease.as_ref() {
                                release_session_execution_lease_conn(tx, completion)?;
                            }
                            return Ok(result);
                        }
                        return Err(turn_conflict(&completed.session_id, &completed.turn_id));
                    }
                }
                let Some(session_execution_lease) = commit.session_execution_lease.as_ref() else {
                    return Err(lease_expired(&commit.session_id));
                };
                ensure_session_execution_lease_conn(tx, now, &commit.session_id, session_execution_lease)?;
                let actual_revision = existing.as_ref().map_or(0, |meta| meta.head_revision);
                if commit.expected_head_revision.is_some() && commit.expected_head_revision != Some(actual_revision) {
                    return Err(head_conflict(commit.expected_head_revision, actual_revision));
                }
                for completed in &commit.completed_queue_claims {
                    if completed.session_id != commit.session_id {
                        return Err(claim_expired(&completed.session_id, &completed.claim_id));
                    }
                    ensure_queued_work_completion_conn(tx, now, completed)?;
                }

                let stored_checkpoint = Self::put_checkpoint_conn(tx, &commit.checkpoint).map_err(sqlite_error)?;

                if !commit.usage_deltas.is_empty() {
                    let mut stmt = tx
                        .prepare(
                            "INSERT INTO usage_deltas (
                                    source, model, input_tokens, output_tokens, cached_input_tokens, reasoning_tokens
                                ) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        )
                        .map_err(sqlite_error)?;
                    for entry in &commit.usage_deltas {
                        stmt.execute(params![
                            entry.source,
                            entry.model,
                            entry.usage.input_tokens,
                            entry.usage.output_tokens,
                            entry.usage.cached_input_tokens,
                            entry.usage.reasoning_tokens,
                        ])
                        .map_err(sqlite_error)?;
                    }
                }

                let leaf_node_id = match commit.graph.kind.as_str() {
                    "unchanged" => commit.graph.leaf_node_id.clone(),
                    "append" => {
                        for node in &commit.graph.nodes {
                            let node_json = encode_json(node);
                            tx.execute("INSERT INTO graph_nodes (node_id, node_json) VALUES (?1, ?2)", params![node.node_id, node_json])
                                .map_err(sqlite_error)?;
                        }
                        commit.graph.leaf_node_id.clone()
                    }
                    "replace_full" => {
                        tx.execute("DELETE FROM graph_nodes", []).map_err(sqlite_error)?;
                        for node in &commit.graph.nodes {
                            let node_json = encode_json(node);
                            tx.execute("INSERT INTO graph_nodes (node_id, node_json) VALUES (?1, ?2)", params![node.node_id, node_json])
                                .map_err(sqlite_error)?;
                        }
                        commit.graph.leaf_node_id.clone()
                    }
                    // The seed's GraphCommitDelta holds no other kind (R12).
                    other => return Err(invalid(format!("graph delta kind {other:?} is none of unchanged, append, replace_full"))),
                };
                tx.crash_point("after_graph");
                let graph_node_count: usize = tx
                    .query_row("SELECT COUNT(*) FROM graph_nodes WHERE tombstoned = 0", [], |row| row.get::<_, i64>(0))
                    .map_err(sqlite_error)? as usize;
                let next_revision = actual_revision + 1;
                let meta = SessionHeadMeta {
                    session_id: commit.session_id.clone(),
                    head_revision: next_revision,
                    config: commit.config.clone(),
                    agent_frames: commit.agent_frames.clone(),
                    current_agent_frame_id: commit.current_agent_frame_id.clone(),
                    checkpoint_ref: Some(stored_checkpoint.checkpoint_ref.clone()),
                    leaf_node_id,
                    graph_node_count,
                    token_ledger: Vec::new(),
                };
                tx.execute(
                    "INSERT OR REPLACE INTO session_head (singleton, session_id, head_json, head_revision)
                         VALUES (1, ?1, ?2, ?3)",
                    params![meta.session_id, encode_json(&meta), meta.head_revision as i64],
                )
                .map_err(sqlite_error)?;
                tx.crash_point("after_head");
                for completed in &commit.completed_queue_claims {
                    for batch_id in completed.batch_ids.iter().flatten() {
                        tx.execute(
                            "DELETE FROM queued_work_batches
                                 WHERE session_id = ?1
                                   AND batch_id = ?2
                                   AND claim_id = ?3
                                   AND claim_token = ?4",
                            params![completed.session_id, batch_id, completed.claim_id, completed.lease_token],
                        )
                        .map_err(sqlite_error)?;
                    }
                }
                tx.crash_point("after_claims_delete");
                if !commit.committed_attachment_ids.is_empty() {
                    let now = now as i64;
                    let mut stmt = tx
                        .prepare(
                            "UPDATE attachment_manifest
                                 SET committed_at_ms = COALESCE(committed_at_ms, ?1)
                                 WHERE attachment_id = ?2 AND session_id = ?3",
                        )
                        .map_err(sqlite_error)?;
                    for id in &commit.committed_attachment_ids {
                        stmt.execute(params![now, id.as_str(), commit.session_id]).map_err(sqlite_error)?;
                    }
                }
                let result = RuntimeCommitResult { head_revision: next_revision, checkpoint_ref: stored_checkpoint.checkpoint_ref };
                if let Some(completed) = &commit.turn_commit {
                    tx.execute(
                        "INSERT INTO runtime_turn_commits (
                                session_id, turn_id, turn_commit_hash, result_json, committed_at_ms
                             )
                             VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![completed.session_id, completed.turn_id, completed.turn_commit_hash, encode_json(&result), now as i64],
                    )
                    .map_err(sqlite_error)?;
                }
                if let Some(completion) = commit.release_session_execution_lease.as_ref() {
                    release_session_execution_lease_conn(tx, completion)?;
                }
                Ok(result)
            })();
            // Roll back on an error so a failure after the first write does
            // not leave the partial transaction committed, while still
            // carrying the typed error to the caller.
            match outcome {
                Ok(value) => Ok(Flow::Commit(Ok(value))),
                Err(err) => Ok(Flow::Rollback(Err(err))),
            }
        })??;
        self.maybe_auto_gc(cx);
        Ok(result)
    }

    /// `maybe_auto_gc` (R18): when the handle's commit counter (commits and
    /// enqueues) is a multiple of AUTO_GC_EVERY,
    /// a collection; its failure is nobody's (the seed's returns nothing).
    fn maybe_auto_gc(&self, cx: &Context) {
        if self.commit_count.load(AtomicOrdering::Relaxed).is_multiple_of(AUTO_GC_EVERY) {
            let _ = self.gc_unreachable(cx);
        }
    }

    fn try_claim_session_execution_lease(
        &self,
        cx: &Context,
        session_id: String,
        owner_id: String,
        lease_ttl_ms: u64,
    ) -> Result<Option<SessionExecutionLease>, Error> {
        self.conn.write_flow(cx, |tx| {
            let outcome: Result<Option<SessionExecutionLease>, Error> = (|| {
                let now = cx.now_ms() as u64;
                let current = load_session_execution_lease_row_conn(tx, &session_id)?;
                if current.as_ref().is_some_and(|lease| lease.lease_token.is_some() && lease.expires_at_ms > now) {
                    let current = current.expect("checked current lease is present");
                    if current.owner_id.as_deref() == Some(owner_id.as_str()) {
                        let expires_at = now.saturating_add(lease_ttl_ms);
                        tx.execute(
                            "UPDATE session_execution_leases
                                 SET lease_expires_at_ms = ?2
                                 WHERE session_id = ?1",
                            params![session_id, expires_at as i64],
                        )
                        .map_err(sqlite_error)?;
                        return Ok(Some(SessionExecutionLease {
                            session_id: session_id.clone(),
                            owner_id: owner_id.clone(),
                            lease_token: current.lease_token.expect("live lease token set"),
                            fencing_token: current.fencing_token,
                            claimed_at_epoch_ms: current.claimed_at_ms,
                            expires_at_epoch_ms: expires_at,
                        }));
                    }
                    return Ok(None);
                }
                let fencing_token = current.as_ref().map_or(0, |lease| lease.fencing_token).saturating_add(1);
                let lease_token = format!("{session_id}:{owner_id}:{now}:{fencing_token}");
                let expires_at = now.saturating_add(lease_ttl_ms);
                tx.execute(
                    "INSERT INTO session_execution_leases (
                            session_id, lease_owner_id, lease_token, lease_fencing_token,
                            lease_claimed_at_ms, lease_expires_at_ms
                         )
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT(session_id) DO UPDATE SET
                            lease_owner_id = excluded.lease_owner_id,
                            lease_token = excluded.lease_token,
                            lease_fencing_token = excluded.lease_fencing_token,
                            lease_claimed_at_ms = excluded.lease_claimed_at_ms,
                            lease_expires_at_ms = excluded.lease_expires_at_ms",
                    params![session_id, owner_id, lease_token, fencing_token as i64, now as i64, expires_at as i64],
                )
                .map_err(sqlite_error)?;
                Ok(Some(SessionExecutionLease {
                    session_id: session_id.clone(),
                    owner_id: owner_id.clone(),
                    lease_token,
                    fencing_token,
                    claimed_at_epoch_ms: now,
                    expires_at_epoch_ms: expires_at,
                }))
            })();
            match outcome {
                Ok(value) => Ok(Flow::Commit(Ok(value))),
                Err(err) => Ok(Flow::Rollback(Err(err))),
            }
        })?
    }

    fn renew_session_execution_lease(&self, cx: &Context, fence: Fence, lease_ttl_ms: u64) -> Result<SessionExecutionLease, Error> {
        self.conn.write_flow(cx, |tx| {
            let outcome: Result<SessionExecutionLease, Error> = (|| {
                let now = cx.now_ms() as u64;
                let current = load_session_execution_lease_row_conn(tx, &fence.session_id)?;
                let Some(current) = current else {
                    return Err(lease_expired(&fence.session_id));
                };
                if current.owner_id.as_deref() != Some(fence.owner_id.as_str())
                    || current.lease_token.as_deref() != Some(fence.lease_token.as_str())
                    || current.fencing_token != fence.fencing_token
                    || (current.expires_at_ms <= now && !breaks::on(breaks::RUNTIME_LEASE_EXPIRY))
                {
                    return Err(lease_expired(&fence.session_id));
                }
                let expires_at = now.saturating_add(lease_ttl_ms);
                tx.execute(
                    "UPDATE session_execution_leases
                         SET lease_expires_at_ms = ?5
                         WHERE session_id = ?1
                           AND lease_owner_id = ?2
                           AND lease_token = ?3
                           AND lease_fencing_token = ?4",
                    params![fence.session_id, fence.owner_id, fence.lease_token, fence.fencing_token as i64, expires_at as i64],
                )
                .map_err(sqlite_error)?;
                Ok(SessionExecutionLease {
                    session_id: fence.session_id.clone(),
                    owner_id: fence.owner_id.clone(),
                    lease_token: fence.lease_token.clone(),
                    fencing_token: fence.fencing_token,
                    claimed_at_epoch_ms: current.claimed_at_ms,
                    expires_at_epoch_ms: expires_at,
                })
            })();
            match outcome {
                Ok(value) => Ok(Flow::Commit(Ok(value))),
                Err(err) => Ok(Flow::Rollback(Err(err))),
            }
        })?
    }

    fn release_session_execution_lease(&self, cx: &Context, completion: Fence) -> Result<(), Error> {
        self.conn.write_flow(cx, |tx| {
            let outcome = release_session_execution_lease_conn(tx, &completion);
            match outcome {
                Ok(()) => Ok(Flow::Commit(Ok(()))),
                Err(err) => Ok(Flow::Rollback(Err(err))),
            }
        })?
    }

    fn enqueue_queued_work(&self, cx: &Context, batch: QueuedWorkBatchDraft) -> Result<QueuedWorkBatch, Error> {
        let nonce = self.commit_count.fetch_add(1, AtomicOrdering::Relaxed);
        self.conn.write_flow(cx, |tx| {
            let outcome: Result<QueuedWorkBatch, Error> = (|| {
                if let Some(source_key) = batch.source_key.as_deref() {
                    let existing_id: Option<String> = tx
                        .query_row(
                            "SELECT batch_id
                                 FROM queued_work_batches
                                 WHERE session_id = ?1 AND source_key = ?2",
                            params![batch.session_id, source_key],
                            |row| row.get(0),
                        )
                        .optional()
                        .map_err(sqlite_error)?;
                    if let Some(batch_id) = existing_id {
                        let existing = load_queued_batch_by_id_conn(tx, &batch_id)?
                            .ok_or_else(|| backend("queued work source row disappeared".to_string()))?;
                        return Ok(existing);
                    }
                }
                let now = cx.now_ms() as u64;
                let batch_id = derive_batch_id(&batch.session_id, batch.source_key.as_deref(), now, Some(nonce));
                let delivery_policy = decode_delivery_policy(batch.delivery_policy.clone())?;
                let slot_policy = decode_slot_policy(batch.slot_policy.clone())?;
                tx.execute(
                    "INSERT INTO queued_work_batches (
                            batch_id, session_id, source_key, delivery_policy, slot_policy,
                            merge_key_json, available_at_ms, enqueued_at_ms
                         )
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        batch_id,
                        batch.session_id,
                        batch.source_key.as_deref(),
                        delivery_policy.as_str(),
                        slot_policy.as_str(),
                        encode_json(&batch.merge_key),
                        batch.available_at_ms,
                        now as i64,
                    ],
                )
                .map_err(sqlite_error)?;
                for (index, payload) in batch.payloads.iter().enumerate() {
                    let item_id = format!("{batch_id}:item:{index}");
                    tx.execute(
                        "INSERT INTO queued_work_items (batch_id, item_index, item_id, payload_json)
                             VALUES (?1, ?2, ?3, ?4)",
                        params![batch_id, index as i64, item_id, encode_json(payload)],
                    )
                    .map_err(sqlite_error)?;
                }
                load_queued_batch_by_id_conn(tx, &batch_id)?.ok_or_else(|| backend("queued work insert disappeared".to_string()))
            })();
            // Roll back the partially-inserted batch/items on an error while
            // still returning the typed error.
            match outcome {
                Ok(value) => Ok(Flow::Commit(Ok(value))),
                Err(err) => Ok(Flow::Rollback(Err(err))),
            }
        })?
    }

    #[allow(clippy::too_many_arguments)]
    fn claim_ready_queued_work(
        &self,
        cx: &Context,
        session_id: String,
        session_execution_lease: Fence,
        owner_id: String,
        boundary: String,
        lease_ttl_ms: u64,
        max_batches: usize,
    ) -> Result<Option<QueuedWorkClaim>, Error> {
        if max_batches == 0 {
            return Ok(None);
        }
        self.conn.write_flow(cx, |tx| {
            let outcome: Result<Flow<Option<QueuedWorkClaim>>, Error> = (|| {
                let now = cx.now_ms() as u64;
                ensure_session_execution_lease_conn(tx, now, &session_id, &session_execution_lease)?;
                let candidate_rows = {
                    let mut stmt = tx
                        .prepare(
                            "SELECT enqueue_seq, batch_id, session_id, source_key, delivery_policy,
                                        slot_policy, merge_key_json, available_at_ms, enqueued_at_ms,
                                        claim_fencing_token
                                 FROM queued_work_batches
                                 WHERE session_id = ?1
                                   AND available_at_ms <= ?2
                                   AND (claim_token IS NULL OR claim_expires_at_ms <= ?2)
                                 ORDER BY enqueue_seq ASC
                                 LIMIT ?3",
                        )
                        .map_err(sqlite_error)?;
                    let rows = stmt
                        .query_map(params![session_id, now as i64, claim_scan_limit(max_batches)], queued_batch_row_from_sql)
                        .map_err(sqlite_error)?;
                    rows.collect::<Result<Vec<_>, _>>().map_err(sqlite_error)?
                };
                let candidates = candidate_rows
                    .iter()
                    .map(|row| {
                        Ok(ClaimCandidate {
                            enqueue_seq: row.enqueue_seq,
                            claim_fencing_token: row.claim_fencing_token,
                            delivery_policy: decode_delivery_policy(row.delivery_policy.clone())?,
                            slot_policy: decode_slot_policy(row.slot_policy.clone())?,
                            merge_key: decode_merge_key(row.merge_key_json.clone())?,
                        })
                    })
                    .collect::<Result<Vec<_>, Error>>()?;
                let selected_len = select_claim_prefix(&candidates, &boundary, max_batches)?;
                if selected_len == 0 {
                    return Ok(Flow::Commit(None));
                }
                let mut selected = candidate_rows;
                selected.truncate(selected_len);
                let lease = QueuedWorkClaimLease::derive(&candidates[0], &session_id, &owner_id, now, lease_ttl_ms);
                for row in &selected {
                    // Under `BEGIN IMMEDIATE` this connection already holds
                    // the write lock, but the row could still have been
                    // claimed by an earlier committed writer. A 0-row update
                    // means we lost the race for this batch: the whole claim
                    // is not won.
                    let claimed = tx
                        .execute(
                            "UPDATE queued_work_batches
                                 SET claim_id = ?3,
                                     claim_owner_id = ?4,
                                     claim_token = ?5,
                                     claim_fencing_token = claim_fencing_token + 1,
                                     claim_claimed_at_ms = ?6,
                                     claim_expires_at_ms = ?7
                                 WHERE session_id = ?1
                                   AND batch_id = ?2
                                   AND (claim_token IS NULL OR claim_expires_at_ms <= ?6)",
                            params![
                                session_id,
                                row.batch_id,
                                lease.claim_id,
                                owner_id,
                                lease.lease_token,
                                now as i64,
                                lease.expires_at_epoch_ms as i64
                            ],
                        )
                        .map_err(sqlite_error)?;
                    if claimed == 0 {
                        return Ok(Flow::Rollback(None));
                    }
                }
                tx.crash_point("after_batches_update");
                let mut batches = Vec::new();
                for row in selected {
                    batches.push(result(&queued_work_batch_from_conn(tx, row)?)?);
                }
                Ok(Flow::Commit(Some(QueuedWorkClaim {
                    session_id: session_id.clone(),
                    claim_id: lease.claim_id,
                    owner_id: owner_id.clone(),
                    lease_token: lease.lease_token,
                    fencing_token: lease.fencing_token,
                    claimed_at_epoch_ms: lease.claimed_at_epoch_ms,
                    expires_at_epoch_ms: lease.expires_at_epoch_ms,
                    batches: Some(batches),
                })))
            })();
            match outcome {
                Ok(Flow::Commit(value)) => Ok(Flow::Commit(Ok(value))),
                Ok(Flow::Rollback(value)) => Ok(Flow::Rollback(Ok(value))),
                Err(err) => Ok(Flow::Rollback(Err(err))),
            }
        })?
    }

    fn renew_queued_work_claim(&self, cx: &Context, claim: QueuedWorkClaim, lease_ttl_ms: u64) -> Result<QueuedWorkClaim, Error> {
        let now = cx.now_ms() as u64;
        let expires_at = now.saturating_add(lease_ttl_ms);
        let changed = self.conn.write(cx, |tx| {
            tx.execute(
                "UPDATE queued_work_batches
                     SET claim_expires_at_ms = ?4
                     WHERE session_id = ?1 AND claim_id = ?2 AND claim_token = ?3",
                params![claim.session_id, claim.claim_id, claim.lease_token, expires_at as i64],
            )
            .map_err(sqlite_error)
        })?;
        renewed_claim(&claim, changed, expires_at)
    }

    fn abandon_queued_work_claim(&self, cx: &Context, claim: QueuedWorkClaim) -> Result<(), Error> {
        self.conn.write(cx, |tx| {
            tx.execute(
                "UPDATE queued_work_batches
                     SET claim_id = NULL,
                         claim_owner_id = NULL,
                         claim_token = NULL,
                         claim_claimed_at_ms = 0,
                         claim_expires_at_ms = 0
                     WHERE session_id = ?1 AND claim_id = ?2 AND claim_token = ?3",
                params![claim.session_id, claim.claim_id, claim.lease_token],
            )
            .map_err(sqlite_error)
        })?;
        Ok(())
    }

    fn cancel_queued_work_batch(&self, cx: &Context, session_id: String, batch_id: String) -> Result<Option<QueuedWorkBatch>, Error> {
        self.conn.write_flow(cx, |tx| {
            let outcome: Result<Option<QueuedWorkBatch>, Error> = (|| {
                let now = cx.now_ms();
                let row = tx
                    .query_row(
                        "SELECT enqueue_seq, batch_id, session_id, source_key, delivery_policy,
                                    slot_policy, merge_key_json, available_at_ms, enqueued_at_ms,
                                    claim_fencing_token
                             FROM queued_work_batches
                             WHERE session_id = ?1
                               AND batch_id = ?2
                               AND (claim_token IS NULL OR claim_expires_at_ms <= ?3)",
                        params![session_id, batch_id, now],
                        queued_batch_row_from_sql,
                    )
                    .optional()
                    .map_err(sqlite_error)?;
                let Some(row) = row else {
                    return Ok(None);
                };
                let batch = queued_work_batch_from_conn(tx, row)?;
                tx.execute(
                    "DELETE FROM queued_work_batches
                         WHERE session_id = ?1
                           AND batch_id = ?2
                           AND (claim_token IS NULL OR claim_expires_at_ms <= ?3)",
                    params![session_id, batch_id, now],
                )
                .map_err(sqlite_error)?;
                Ok(Some(batch))
            })();
            match outcome {
                Ok(value) => Ok(Flow::Commit(Ok(value))),
                Err(err) => Ok(Flow::Rollback(Err(err))),
            }
        })?
    }

    fn list_queued_work(&self, cx: &Context, session_id: String, pending: bool) -> Result<Vec<QueuedWorkBatch>, Error> {
        self.conn.call(cx, false, |conn| {
            let now = cx.now_ms();
            let rows = {
                let mut stmt = conn
                    .prepare(if pending {
                        "SELECT enqueue_seq, batch_id, session_id, source_key, delivery_policy,
                                        slot_policy, merge_key_json, available_at_ms, enqueued_at_ms,
                                        claim_fencing_token
                                 FROM queued_work_batches
                                 WHERE session_id = ?1
                                   AND (claim_token IS NULL OR claim_expires_at_ms <= ?2)
                                 ORDER BY enqueue_seq ASC"
                    } else {
                        "SELECT enqueue_seq, batch_id, session_id, source_key, delivery_policy,
                                        slot_policy, merge_key_json, available_at_ms, enqueued_at_ms,
                                        claim_fencing_token
                                 FROM queued_work_batches
                                 WHERE session_id = ?1 AND ?2 = ?2
                                 ORDER BY enqueue_seq ASC"
                    })
                    .map_err(sqlite_error)?;
                let rows = stmt.query_map(params![session_id, now], queued_batch_row_from_sql).map_err(sqlite_error)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(sqlite_error)?
            };
            rows.into_iter().map(|row| queued_work_batch_from_conn(conn, row)).collect()
        })
    }

    /// `Store::save_session_meta` (R19): one row; it cannot fail.
    fn save_session_meta(&self, cx: &Context, meta: Option<Value>) -> Result<(), Error> {
        let saved = self.conn.write(cx, |tx| {
            tx.execute("INSERT OR REPLACE INTO session_meta (singleton, meta_json) VALUES (1, ?1)", params![encode_json(&meta)])
                .map_err(sqlite_error)
        });
        if let Err(e) = saved {
            if e.message.contains("stopped waiting") {
                return Err(e);
            }
            eprintln!("rust-backend: save_session_meta: {e}");
        }
        Ok(())
    }

    fn load_session_meta(&self, cx: &Context) -> Result<Option<Value>, Error> {
        let loaded = self.conn.call(cx, false, |conn| {
            conn.query_row("SELECT meta_json FROM session_meta WHERE singleton = 1", [], |r| r.get::<_, String>(0))
                .optional()
                .map_err(sqlite_error)
        });
        match loaded {
            Ok(json) => Ok(json.and_then(|j| serde_json::from_str::<Option<Value>>(&j).ok().flatten())),
            Err(e) if e.message.contains("stopped waiting") => Err(e),
            Err(_) => Ok(None),
        }
    }

    fn tombstone_nodes(&self, cx: &Context, ids: Vec<String>) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        self.conn.write(cx, |tx| {
            let mut stmt = tx.prepare("UPDATE graph_nodes SET tombstoned = 1 WHERE node_id = ?1").map_err(sqlite_error)?;
            for id in &ids {
                stmt.execute(params![id]).map_err(sqlite_error)?;
            }
            Ok(())
        })
    }

    fn vacuum(&self, cx: &Context) -> Result<usize, Error> {
        self.conn.write(cx, |tx| tx.execute("DELETE FROM graph_nodes WHERE tombstoned = 1", []).map_err(sqlite_error))
    }

    /// `Store::gc_unreachable` (R17): every checkpoint but the head's; it
    /// answers no error (a failure collects nothing).
    fn gc_unreachable(&self, cx: &Context) -> Result<usize, Error> {
        let removed = self.conn.write(cx, |tx| {
            let head = try_load_session_head_meta_from_conn(tx)?.and_then(|m| m.checkpoint_ref);
            let keep: i64 = head.as_deref().and_then(|r| r.strip_prefix("ckpt-")).and_then(|n| n.parse().ok()).unwrap_or(-1);
            tx.execute("DELETE FROM checkpoints WHERE seq <> ?1", params![keep]).map_err(sqlite_error)
        });
        match removed {
            Ok(n) => Ok(n),
            Err(e) if e.message.contains("stopped waiting") => Err(e),
            Err(_) => Ok(0),
        }
    }

    /// Not in the seed (R20): the first staging of an id is kept.
    fn stage_attachment(&self, cx: &Context, session_id: String, attachment_id: String, data: Vec<u8>) -> Result<(), Error> {
        self.conn.write(cx, |tx| {
            tx.execute(
                "INSERT INTO attachment_manifest (attachment_id, session_id, data, committed_at_ms) VALUES (?1, ?2, ?3, NULL)
                 ON CONFLICT(attachment_id) DO NOTHING",
                params![attachment_id, session_id, data],
            )
            .map_err(sqlite_error)?;
            Ok(())
        })
    }

    fn load_attachment(&self, cx: &Context, attachment_id: String) -> Result<Option<Attachment>, Error> {
        self.conn.call(cx, false, |conn| {
            conn.query_row(
                "SELECT attachment_id, session_id, data, committed_at_ms FROM attachment_manifest WHERE attachment_id = ?1",
                params![attachment_id],
                |r| Ok(Attachment { attachment_id: r.get(0)?, session_id: r.get(1)?, data: r.get(2)?, committed_at_ms: r.get(3)? }),
            )
            .optional()
            .map_err(sqlite_error)
        })
    }
}

// --- How values travel.

struct Graph {
    nodes: Vec<NodeRecord>,
    leaf_node_id: Option<String>,
}

impl Graph {
    fn wire(&self) -> Value {
        let mut g = serde_json::json!({"nodes": self.nodes.iter().map(node_wire).collect::<Vec<_>>()});
        if let Some(l) = &self.leaf_node_id {
            g["leaf_node_id"] = Value::String(l.clone());
        }
        g
    }
}

fn node_wire(n: &NodeRecord) -> Value {
    let mut v = serde_json::json!({"node_id": n.node_id});
    if let Some(p) = &n.parent_id {
        v["parent_id"] = Value::String(p.clone());
    }
    if let Some(d) = &n.data {
        v["data"] = Value::String(d.to_string());
    }
    v
}

#[derive(Serialize)]
struct SessionRead {
    session_id: String,
    head_revision: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_frames: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_agent_frame_id: Option<String>,
    graph: Value,
    checkpoint_ref: String,
    #[serde(with = "wire::bytes")]
    checkpoint: Vec<u8>,
    token_ledger: Vec<UsageEntry>,
}

#[derive(Serialize)]
struct Attachment {
    attachment_id: String,
    session_id: String,
    #[serde(with = "wire::bytes")]
    data: Vec<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    committed_at_ms: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadScope {
    #[serde(default)]
    active_path: Option<bool>,
    #[serde(default)]
    leaf_node_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeWireIn {
    node_id: String,
    #[serde(default)]
    parent_id: Option<String>,
    #[serde(default)]
    data: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphDeltaWire {
    kind: String,
    #[serde(default)]
    nodes: Option<Vec<NodeWireIn>>,
    #[serde(default)]
    leaf_node_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnCommit {
    session_id: String,
    turn_id: String,
    turn_commit_hash: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeCommitWire {
    session_id: String,
    #[serde(default)]
    expected_head_revision: Option<u64>,
    #[serde(default)]
    session_execution_lease: Option<Fence>,
    #[serde(default)]
    release_session_execution_lease: Option<Fence>,
    #[serde(default)]
    turn_commit: Option<TurnCommit>,
    #[serde(default)]
    completed_queue_claims: Option<Vec<CompletedQueueClaim>>,
    graph: GraphDeltaWire,
    #[serde(with = "wire::bytes")]
    checkpoint: Vec<u8>,
    #[serde(default)]
    config: Option<String>,
    #[serde(default)]
    agent_frames: Option<String>,
    #[serde(default)]
    current_agent_frame_id: Option<String>,
    #[serde(default)]
    usage_deltas: Option<Vec<UsageEntry>>,
    #[serde(default)]
    committed_attachment_ids: Option<Vec<String>>,
}

struct GraphDelta {
    kind: String,
    nodes: Vec<NodeRecord>,
    leaf_node_id: Option<String>,
}

struct RuntimeCommit {
    session_id: String,
    expected_head_revision: Option<u64>,
    session_execution_lease: Option<Fence>,
    release_session_execution_lease: Option<Fence>,
    turn_commit: Option<TurnCommit>,
    completed_queue_claims: Vec<CompletedQueueClaim>,
    graph: GraphDelta,
    checkpoint: Vec<u8>,
    config: Option<Value>,
    agent_frames: Option<Value>,
    current_agent_frame_id: Option<String>,
    usage_deltas: Vec<UsageEntry>,
    committed_attachment_ids: Vec<String>,
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

impl RuntimeCommitWire {
    fn decode(self) -> Result<RuntimeCommit, Error> {
        let nodes = self
            .graph
            .nodes
            .unwrap_or_default()
            .into_iter()
            .map(|n| Ok(NodeRecord { node_id: n.node_id, parent_id: non_empty(n.parent_id), data: json_in("node data", n.data)? }))
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(RuntimeCommit {
            session_id: self.session_id,
            expected_head_revision: self.expected_head_revision,
            session_execution_lease: self.session_execution_lease,
            release_session_execution_lease: self.release_session_execution_lease,
            turn_commit: self.turn_commit,
            completed_queue_claims: self.completed_queue_claims.unwrap_or_default(),
            graph: GraphDelta { kind: self.graph.kind, nodes, leaf_node_id: non_empty(self.graph.leaf_node_id) },
            checkpoint: self.checkpoint,
            config: json_in("config", self.config)?,
            agent_frames: json_in("agent frames", self.agent_frames)?,
            current_agent_frame_id: non_empty(self.current_agent_frame_id),
            usage_deltas: self.usage_deltas.unwrap_or_default(),
            committed_attachment_ids: self.committed_attachment_ids.unwrap_or_default(),
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueuedWorkBatchDraftWire {
    session_id: String,
    #[serde(default)]
    source_key: Option<String>,
    delivery_policy: String,
    slot_policy: String,
    #[serde(default)]
    merge_key: Option<String>,
    available_at_ms: i64,
    payloads: Option<Vec<Option<String>>>,
}

struct QueuedWorkBatchDraft {
    session_id: String,
    source_key: Option<String>,
    delivery_policy: String,
    slot_policy: String,
    merge_key: Option<String>,
    available_at_ms: i64,
    payloads: Vec<Option<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadSession {
    scope: ReadScope,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeId {
    node_id: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Commit {
    commit: RuntimeCommitWire,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TryClaim {
    session_id: String,
    owner_id: String,
    lease_ttl_ms: u64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenewLease {
    fence: Fence,
    lease_ttl_ms: u64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseLease {
    completion: Fence,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Enqueue {
    batch: QueuedWorkBatchDraftWire,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimReady {
    session_id: String,
    session_execution_lease: Fence,
    owner_id: String,
    boundary: String,
    lease_ttl_ms: u64,
    max_batches: i64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenewClaim {
    claim: QueuedWorkClaim,
    lease_ttl_ms: u64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AbandonClaim {
    claim: QueuedWorkClaim,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelBatch {
    session_id: String,
    batch_id: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionId {
    session_id: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveMeta {
    meta: Option<String>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ids {
    ids: Option<Vec<String>>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StageAttachment {
    session_id: String,
    attachment_id: String,
    #[serde(with = "wire::bytes")]
    data: Vec<u8>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachmentId {
    attachment_id: String,
}

impl storecheck_backend::Store for Store {
    fn apply(&self, cx: &Context, op: &str, a: Value) -> Result<Value, Error> {
        match op {
            "durability_tier" => {
                let _: NoArgs = args(op, a)?;
                Ok(Value::String("durable".into()))
            }
            "load_session" => {
                let a: LoadSession = args(op, a)?;
                Ok(self.load_session(cx, a.scope)?.unwrap_or(Value::Null))
            }
            "load_node" => {
                let a: NodeId = args(op, a)?;
                Ok(self.load_node(cx, a.node_id)?.unwrap_or(Value::Null))
            }
            "commit_runtime_state" => {
                let a: Commit = args(op, a)?;
                result(&self.commit_runtime_state(cx, a.commit.decode()?)?)
            }
            "try_claim_session_execution_lease" => {
                let a: TryClaim = args(op, a)?;
                result(&self.try_claim_session_execution_lease(cx, a.session_id, a.owner_id, a.lease_ttl_ms)?)
            }
            "renew_session_execution_lease" => {
                let a: RenewLease = args(op, a)?;
                result(&self.renew_session_execution_lease(cx, a.fence, a.lease_ttl_ms)?)
            }
            "release_session_execution_lease" => {
                let a: ReleaseLease = args(op, a)?;
                self.release_session_execution_lease(cx, a.completion).map(|()| Value::Null)
            }
            "enqueue_queued_work" => {
                let a: Enqueue = args(op, a)?;
                let b = a.batch;
                let payloads =
                    b.payloads.unwrap_or_default().into_iter().map(|p| json_in("payload", p)).collect::<Result<Vec<_>, Error>>()?;
                let draft = QueuedWorkBatchDraft {
                    session_id: b.session_id,
                    source_key: non_empty(b.source_key),
                    delivery_policy: b.delivery_policy,
                    slot_policy: b.slot_policy,
                    merge_key: non_empty(b.merge_key),
                    available_at_ms: b.available_at_ms,
                    payloads,
                };
                result(&self.enqueue_queued_work(cx, draft)?)
            }
            "claim_ready_queued_work" => {
                let a: ClaimReady = args(op, a)?;
                let max_batches =
                    usize::try_from(a.max_batches).map_err(|_| invalid(format!("max_batches {} is negative", a.max_batches)))?;
                result(&self.claim_ready_queued_work(
                    cx,
                    a.session_id,
                    a.session_execution_lease,
                    a.owner_id,
                    a.boundary,
                    a.lease_ttl_ms,
                    max_batches,
                )?)
            }
            "renew_queued_work_claim" => {
                let a: RenewClaim = args(op, a)?;
                result(&self.renew_queued_work_claim(cx, a.claim, a.lease_ttl_ms)?)
            }
            "abandon_queued_work_claim" => {
                let a: AbandonClaim = args(op, a)?;
                self.abandon_queued_work_claim(cx, a.claim).map(|()| Value::Null)
            }
            "cancel_queued_work_batch" => {
                let a: CancelBatch = args(op, a)?;
                result(&self.cancel_queued_work_batch(cx, a.session_id, a.batch_id)?)
            }
            "list_queued_work" => {
                let a: SessionId = args(op, a)?;
                result(&self.list_queued_work(cx, a.session_id, false)?)
            }
            "list_pending_queued_work" => {
                let a: SessionId = args(op, a)?;
                result(&self.list_queued_work(cx, a.session_id, true)?)
            }
            "save_session_meta" => {
                let a: SaveMeta = args(op, a)?;
                let meta = json_in("meta", a.meta)?;
                self.save_session_meta(cx, meta).map(|()| Value::Null)
            }
            "load_session_meta" => {
                let _: NoArgs = args(op, a)?;
                Ok(self.load_session_meta(cx)?.map(|v| Value::String(v.to_string())).unwrap_or(Value::Null))
            }
            "tombstone_nodes" => {
                let a: Ids = args(op, a)?;
                self.tombstone_nodes(cx, a.ids.unwrap_or_default()).map(|()| Value::Null)
            }
            "vacuum" => {
                let _: NoArgs = args(op, a)?;
                Ok(serde_json::json!({"removed_node_count": self.vacuum(cx)?}))
            }
            "gc_unreachable" => {
                let _: NoArgs = args(op, a)?;
                Ok(serde_json::json!({"removed_checkpoint_count": self.gc_unreachable(cx)?}))
            }
            "stage_attachment" => {
                let a: StageAttachment = args(op, a)?;
                self.stage_attachment(cx, a.session_id, a.attachment_id, a.data).map(|()| Value::Null)
            }
            "load_attachment" => {
                let a: AttachmentId = args(op, a)?;
                result(&self.load_attachment(cx, a.attachment_id)?)
            }
            _ => Err(Error::unknown_op(NAME, op)),
        }
    }
}
