//! A small backend the crate's own tests speak to: a key-value store on
//! SQLite through [`Db`], with a crash point between the two statements of
//! a write, and a second store on the same code that declares capabilities
//! of its own and no crash points (so its `put`, which reaches one, fails
//! naming it; its `touch`, which reaches only the helper's `after_commit`,
//! does not).

use serde::Deserialize;
use serde_json::{Value, json};
use storecheck_backend::{Backend, Capabilities, Context, Db, Durability, Error, OpenRequest, SnapshotRevision, Store, StoreDef, args};

struct Kv {
    db: Db,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Put {
    key: String,
    value: i64,
    /// The place of the crash point between the two statements, when not
    /// `after_kv` (a test's misspelt point).
    #[serde(default)]
    crash_place: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Get {
    key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fail {
    kind: String,
}

impl Kv {
    fn open(req: &OpenRequest) -> Result<Kv, Error> {
        let conn = Db::connect(req)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS log(key TEXT NOT NULL, at_ms INTEGER NOT NULL);",
        )?;
        Ok(Kv { db: Db::new(conn) })
    }
}

impl Store for Kv {
    fn apply(&self, cx: &Context, op: &str, a: Value) -> Result<Value, Error> {
        match op {
            "put" => {
                let p: Put = args(op, a)?;
                self.db.write(cx, |tx| {
                    tx.execute(
                        "INSERT INTO kv(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        (&p.key, p.value),
                    )?;
                    tx.crash_point(p.crash_place.as_deref().unwrap_or("after_kv"));
                    tx.execute("INSERT INTO log(key, at_ms) VALUES(?1, ?2)", (&p.key, cx.now_ms()))?;
                    Ok(Value::Null)
                })
            }
            "get" => {
                let g: Get = args(op, a)?;
                self.db.read(cx, |tx| {
                    let v: Option<i64> = tx.query_row("SELECT value FROM kv WHERE key = ?1", [&g.key], |r| r.get(0)).ok();
                    let n: i64 = tx.query_row("SELECT COUNT(*) FROM log WHERE key = ?1", [&g.key], |r| r.get(0))?;
                    Ok(json!({"value": v, "writes": n}))
                })
            }
            "touch" => {
                let g: Get = args(op, a)?;
                self.db.write(cx, |tx| {
                    tx.execute("INSERT INTO log(key, at_ms) VALUES(?1, ?2)", (&g.key, cx.now_ms()))?;
                    Ok(Value::Null)
                })
            }
            "revision" => {
                let g: Get = args(op, a)?;
                Ok(json!(storecheck_backend::snapshot_revision(g.key.as_bytes())))
            }
            "now" => Ok(json!({"now_ms": cx.now_ms(), "timeout_ms": cx.timeout_ms()})),
            "fail" => {
                let f: Fail = args(op, a)?;
                Err(Error::new(f.kind, "asked to fail"))
            }
            _ => Err(Error::unknown_op(cx.store(), op)),
        }
    }
}

fn main() {
    let caps = Capabilities {
        files: true,
        shared_files: true,
        in_memory: true,
        concurrent_requests: true,
        yields: true,
        durability: Some(Durability::PowerLoss),
        snapshot_revision: Some(SnapshotRevision::Sha256),
        ..Default::default()
    };
    let alone = Capabilities {
        files: true,
        in_memory: true,
        durability: Some(Durability::ProcessCrash),
        atomic_reads: true,
        snapshot_revision: Some(SnapshotRevision::Opaque),
        ..Default::default()
    };
    Backend::new("storecheck-backend demo", caps)
        .store(StoreDef::new("kv", Kv::open).crash_points(["put/after_kv", "put/after_commit"]))
        .store(StoreDef::new("kv_alone", Kv::open).capabilities(alone))
        .serve()
}
