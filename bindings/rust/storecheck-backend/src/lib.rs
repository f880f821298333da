//! The storecheck wire protocol (docs/protocol.md, version 1) for a backend
//! written in Rust: everything an author needs to be checked by storecheck,
//! and nothing about any store's rules.
//! The crate's README.md says how to install it (Debian's crates, offline),
//! shows a backend in one screen, and explains capabilities, yield points,
//! crash points and testing.
//!
//! An author writes the stores (each a [`Store`]: one `apply` that
//! dispatches on the operation's name) and a `main` that hands them to a
//! [`Backend`]:
//!
//! ```no_run
//! use storecheck_backend::{Backend, Capabilities, Context, Error, OpenRequest, Store, StoreDef};
//! use serde_json::Value;
//!
//! struct Counter;
//! impl Store for Counter {
//!     fn apply(&self, cx: &Context, op: &str, _args: Value) -> Result<Value, Error> {
//!         match op {
//!             "now" => Ok(Value::from(cx.now_ms())),
//!             _ => Err(Error::unknown_op("counter", op)),
//!         }
//!     }
//! }
//!
//! fn main() {
//!     Backend::new("my-backend 0.1", Capabilities { files: true, ..Default::default() })
//!         .store(StoreDef::new("counter", |_req: &OpenRequest| Ok(Counter)))
//!         .serve()
//! }
//! ```
//!
//! [`Backend::serve`] answers the requests on stdin, each on a worker thread
//! of its own (an operation paused at a yield point never blocks another),
//! and writes nothing but replies and yield lines to stdout. A request it
//! cannot decode is answered `bad_request` naming what was wrong; an error
//! the author's code returns travels with its kind.
//!
//! Inside an operation, the [`Context`] is the only clock (`now_ms`), the
//! deadline (`timeout_ms`), and the yield and crash points. [`Db`] is a
//! rusqlite transaction helper that reaches them where they belong: a yield
//! point before each transaction and after each commit, `BEGIN IMMEDIATE`
//! for a write, the busy timeout from `timeout_ms`.

mod db;
mod error;
mod revision;
mod server;
pub mod wire;

pub use db::{Db, Flow, Tx};
pub use error::Error;
pub use revision::snapshot_revision;
pub use server::{Backend, CRASH_EXIT_STATUS, Context, OpenRequest, Store, StoreDef};
pub use wire::{Capabilities, Durability, SnapshotRevision};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Decodes an operation's arguments into `T` (a `serde` type; give it
/// `#[serde(deny_unknown_fields)]` to refuse members the protocol does not
/// list). A failure is `bad_request` naming the member serde could not read.
pub fn args<T: serde::de::DeserializeOwned>(op: &str, args: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(args).map_err(|e| Error::bad_request(format!("{op}: args: {e}")))
}

/// Encodes an operation's result.
pub fn result<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, Error> {
    serde_json::to_value(value).map_err(|e| Error::new("io", format!("encode the result: {e}")))
}
