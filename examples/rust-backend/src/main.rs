//! storecheck backend "rust-seeds": the seeds' three stores (seeds/ 000
//! lash, 002 onlyne, 003 meerkat), ported from the seed text to synchronous
//! rusqlite on the crate bindings/rust/storecheck-backend:
//!
//!     storecheck run -- examples/rust-backend/target/release/rust-backend
//!
//! READINGS.md lists every place a seed calls code it does not show and
//! the reading taken; FINDINGS.md what the kit said of the port.

mod breaks;
mod client;
mod continuity;
mod runtime;

use storecheck_backend::{Backend, Capabilities, SnapshotRevision, StoreDef};

fn main() {
    breaks::check();
    // Runtime and client are safe across processes (runtime: "BEGIN
    // IMMEDIATE ... this is the cross-process write-lock guard"; client: one
    // statement per write); continuity is "Designed for single-process": it
    // declares its own capabilities, without shared_files. Every store
    // serves its callers at once (concurrent_requests: the crate runs each
    // request on a worker thread, and no store holds a lock at a yield
    // point), as the seeds' stores serve theirs; for continuity, simulated
    // as one process, that is what puts two of its callers in flight
    // together.
    let shared = Capabilities {
        files: true,
        shared_files: true,
        in_memory: true,
        sqlite_locking: true,
        concurrent_requests: true,
        yields: true,
        ..Default::default()
    };
    let single_process = Capabilities {
        shared_files: breaks::on(breaks::CONTINUITY_CLAIMS_SHARED_FILES),
        snapshot_revision: Some(SnapshotRevision::Opaque),
        ..shared.clone()
    };
    Backend::new("rust-seeds (the seeds ported to rusqlite) 0.1", shared.clone())
        .store(
            StoreDef::new(continuity::NAME, continuity::LocalContinuityStore::open)
                .capabilities(single_process)
                .crash_points(continuity::CRASH_POINTS.iter().copied()),
        )
        .store(StoreDef::new(runtime::NAME, runtime::Store::open).crash_points(runtime::CRASH_POINTS.iter().copied()))
        .store(
            StoreDef::new(client::NAME, client::ClientStore::open)
                .capabilities(Capabilities { client_schema_writer: true, ..shared })
                .crash_points(client::CRASH_POINTS.iter().copied())
                .schema_writer(client::write_foreign_schema),
        )
        .serve()
}
