// A continuity store's snapshots on SQLite: three of its operations, the
// shape of a whole backend. (README.md shows this file; a test keeps the two
// the same.)
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use storecheck_backend::{Backend, Capabilities, Context, Db, Error, OpenRequest, Store, StoreDef, args, result, snapshot_revision, wire};

struct Snapshots {
    db: Db,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Write {
    identity: String,
    session_id: String,
    generation: u64,
    checkpoint_version: u64,
    fencing_token: u64,
    #[serde(with = "wire::bytes")]
    data: Vec<u8>,
}

#[derive(Serialize)]
struct Snapshot {
    #[serde(with = "wire::bytes")]
    data: Vec<u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Save {
    write: Write,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Session {
    session_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteAt {
    session_id: String,
    expected_revision: String,
}

impl Snapshots {
    fn open(req: &OpenRequest) -> Result<Snapshots, Error> {
        let conn = Db::connect(req)?; // the busy timeout is the open's timeout_ms
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS snapshots(session_id TEXT PRIMARY KEY, data BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS fences(identity TEXT PRIMARY KEY, generation INTEGER, version INTEGER, token INTEGER);",
        )?;
        Ok(Snapshots { db: Db::new(conn) })
    }
}

impl Store for Snapshots {
    fn apply(&self, cx: &Context, op: &str, a: Value) -> Result<Value, Error> {
        match op {
            "save_session_snapshot" => {
                let Save { write: w } = args(op, a)?;
                self.db.write(cx, |tx| {
                    tx.execute("INSERT OR REPLACE INTO snapshots VALUES(?1, ?2)", (&w.session_id, &w.data))?;
                    tx.crash_point("after_snapshot_upsert"); // declared below, or the reply is an error
                    tx.execute(
                        "INSERT OR REPLACE INTO fences VALUES(?1, ?2, ?3, ?4)",
                        (&w.identity, w.generation, w.checkpoint_version, w.fencing_token),
                    )?;
                    Ok(Value::Null)
                })
            }
            "load_session_snapshot" => {
                let s: Session = args(op, a)?;
                let snapshot = self.db.read(cx, |tx| {
                    let q = "SELECT data FROM snapshots WHERE session_id = ?1";
                    Ok(tx.query_row(q, [&s.session_id], |r| Ok(Snapshot { data: r.get(0)? })).optional()?)
                })?;
                result(&snapshot) // null when there is none
            }
            "delete_session_snapshot_if_current_revision" => {
                let d: DeleteAt = args(op, a)?;
                let deleted = self.db.write(cx, |tx| {
                    let q = "SELECT data FROM snapshots WHERE session_id = ?1";
                    let data: Option<Vec<u8>> = tx.query_row(q, [&d.session_id], |r| r.get(0)).optional()?;
                    // The protocol's default revision: the kit computes the same.
                    if data.is_none_or(|data| snapshot_revision(&data) != d.expected_revision) {
                        return Ok(false);
                    }
                    Ok(tx.execute("DELETE FROM snapshots WHERE session_id = ?1", [&d.session_id])? > 0)
                })?;
                Ok(Value::Bool(deleted))
            }
            _ => Err(Error::unknown_op(cx.store(), op)),
        }
    }
}

fn main() {
    let caps = Capabilities { files: true, in_memory: true, yields: true, ..Default::default() };
    Backend::new("one-screen 0.1", caps)
        .store(StoreDef::new("continuity", Snapshots::open).crash_points([
            "save_session_snapshot/after_snapshot_upsert",
            "save_session_snapshot/after_commit", // Db reaches <op>/after_commit when it is declared
        ]))
        .serve()
}
