//! RUST_BACKEND_BREAK=name,... breaks one rule a seed states, on purpose,
//! for the test that shows the kit still catches a backend that reads the
//! seeds' silences its own way (the latitude is not blindness). Never on by
//! default; an unknown name stops the backend at its start.

use std::sync::OnceLock;

/// upsert_continuity_record accepts a fence lower than the stored one
/// (continuity.upsert_continuity_record.fence_not_lower).
pub const CONTINUITY_UPSERT_FENCE: &str = "continuity.upsert_fence";
/// A session execution lease is held after it expired: a commit, a claim
/// and a renewal under it are accepted (runtime: `current.expires_at_ms >
/// now` left out of ensure_session_execution_lease_conn and the renewal).
pub const RUNTIME_LEASE_EXPIRY: &str = "runtime.lease_expiry";

/// The continuity store declares shared_files, which the seed ("Designed
/// for single-process") does not support: its upsert checks and writes
/// outside any transaction, so two processes on one file race.
pub const CONTINUITY_CLAIMS_SHARED_FILES: &str = "continuity.claims_shared_files";

const KNOWN: &[&str] = &[CONTINUITY_UPSERT_FENCE, RUNTIME_LEASE_EXPIRY, CONTINUITY_CLAIMS_SHARED_FILES];

fn broken() -> &'static Vec<String> {
    static B: OnceLock<Vec<String>> = OnceLock::new();
    B.get_or_init(|| {
        std::env::var("RUST_BACKEND_BREAK")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    })
}

/// Stops the process when RUST_BACKEND_BREAK names a rule it cannot break.
pub fn check() {
    for name in broken() {
        if !KNOWN.contains(&name.as_str()) {
            eprintln!("RUST_BACKEND_BREAK: unknown rule {name:?} (known: {})", KNOWN.join(", "));
            std::process::exit(2);
        }
    }
    if !broken().is_empty() {
        eprintln!("rust-backend: breaking on purpose: {}", broken().join(", "));
    }
}

/// Whether RUST_BACKEND_BREAK asks this backend to break the named rule.
pub fn on(name: &str) -> bool {
    broken().iter().any(|b| b == name)
}
