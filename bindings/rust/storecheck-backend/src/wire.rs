//! The protocol's own shapes: the request line, the capabilities of the
//! hello, and the codecs of the values operations carry (bytes as base64,
//! times as RFC 3339).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One request line, decoded strictly: a member the protocol does not define
/// is refused, naming it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Request {
    pub id: u64,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub version: Option<i64>,
    #[serde(default)]
    pub store: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub in_memory: Option<bool>,
    #[serde(default)]
    pub handle: Option<u64>,
    #[serde(default)]
    pub op: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
    #[serde(default)]
    pub now_ms: Option<i64>,
    #[serde(default)]
    pub timeout_ms: Option<i64>,
    #[serde(default)]
    pub point: Option<String>,
    #[serde(default)]
    pub nth: Option<i64>,
    #[serde(default)]
    pub yields: Option<bool>,
    #[serde(default)]
    pub marker: Option<String>,
}

/// The optional features a backend (or one of its stores) declares in its
/// hello; docs/protocol.md's capability table says what each one makes the
/// kit check. Only what is declared is sent: absent is not declared. The
/// table's other two members are not here: `crash_points` is each
/// [`crate::StoreDef::crash_points`], and `stores` each
/// [`crate::StoreDef::capabilities`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// A store persists to the open's `path` and finds, opened again,
    /// everything it acknowledged.
    pub files: bool,
    /// Two handles (processes) may be open on one path at once.
    pub shared_files: bool,
    /// `"in_memory": true` opens a private in-memory database.
    pub in_memory: bool,
    /// `path` is a SQLite database the kit may lock from its own
    /// connection (the open must then wait no longer than `timeout_ms`).
    pub sqlite_locking: bool,
    /// The client store keeps its marker in `schema_meta(marker, version)`.
    pub client_schema_table: bool,
    /// The backend answers `write_foreign_schema`
    /// ([`crate::StoreDef::schema_writer`]).
    pub client_schema_writer: bool,
    /// How the continuity store computes a snapshot's revision; `None` is
    /// the protocol's default, [`SnapshotRevision::Sha256`] (see
    /// [`crate::snapshot_revision`]).
    pub snapshot_revision: Option<SnapshotRevision>,
    /// What acknowledged writes survive; `None` is the protocol's default,
    /// [`Durability::PowerLoss`].
    pub durability: Option<Durability>,
    /// Every read operation reads one moment of the store (one
    /// transaction), the seeds' multi-statement reads included.
    pub atomic_reads: bool,
    /// One process serves several `op` requests on one handle at once, each
    /// pausing at its own yield points while the others go on: a paused
    /// request holds back no other. The crate's server does (each request
    /// on a worker thread of its own); declare it when the store's code
    /// holds no lock of its own across a yield point ([`crate::Db`] holds
    /// none). The simulator then keeps several operations in flight on a
    /// store that runs as one process (no `shared_files`), so a race
    /// between two callers of that process is explored.
    pub concurrent_requests: bool,
    /// An op with `"yields": true` pauses at its yield points until resumed
    /// ([`crate::Context::yield_point`]).
    pub yields: bool,
}

/// The `snapshot_revision` capability: how a continuity store computes the
/// revision `delete_session_snapshot_if_current_revision` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotRevision {
    /// `"sha256"`: the lowercase hex SHA-256 of the stored bytes
    /// ([`crate::snapshot_revision`]); the kit computes it too and checks
    /// more.
    Sha256,
    /// `"opaque"`: the backend's own, which the kit cannot compute (the
    /// delete-at-revision spec is skipped).
    Opaque,
}

impl SnapshotRevision {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotRevision::Sha256 => "sha256",
            SnapshotRevision::Opaque => "opaque",
        }
    }
}

/// The `durability` capability: what a store's acknowledged writes survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// `"power_loss"`: a power cut, which keeps only what was synced (SQLite's
    /// default `synchronous=FULL`). The simulator cuts power.
    PowerLoss,
    /// `"process_crash"`: the process's crash only (WAL with
    /// `synchronous=NORMAL`, say). For the runtime and client stores no
    /// power is cut and the power-loss specs are skipped; a continuity store
    /// is held to power loss whatever it declares.
    ProcessCrash,
}

impl Durability {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::PowerLoss => "power_loss",
            Durability::ProcessCrash => "process_crash",
        }
    }
}

impl Capabilities {
    pub(crate) fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for (name, on) in [
            ("files", self.files),
            ("shared_files", self.shared_files),
            ("in_memory", self.in_memory),
            ("sqlite_locking", self.sqlite_locking),
            ("client_schema_table", self.client_schema_table),
            ("client_schema_writer", self.client_schema_writer),
            ("atomic_reads", self.atomic_reads),
            ("concurrent_requests", self.concurrent_requests),
            ("yields", self.yields),
        ] {
            if on {
                m.insert(name.into(), Value::Bool(true));
            }
        }
        if let Some(r) = self.snapshot_revision {
            m.insert("snapshot_revision".into(), Value::String(r.as_str().into()));
        }
        if let Some(d) = self.durability {
            m.insert("durability".into(), Value::String(d.as_str().into()));
        }
        m
    }
}

/// Bytes travel as a base64 string (standard alphabet, with padding); `null`
/// is empty. For `#[serde(with = "storecheck_backend::wire::bytes")]`.
pub mod bytes {
    use super::*;

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::encode(b))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        match text {
            None => Ok(Vec::new()),
            Some(t) => decode(&t).map_err(serde::de::Error::custom),
        }
    }

    /// Decodes a base64 string strictly, saying what it looks like when it
    /// is not base64.
    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        // The crate's decoder takes unpadded text too; the protocol does not.
        let padded = if text.len().is_multiple_of(4) { Ok(()) } else { Err(format!("its length {} is not a multiple of 4", text.len())) };
        padded.and_then(|_| base64::decode_config(text, base64::STANDARD).map_err(|e| e.to_string())).map_err(|e| {
            let hint = if !text.is_empty() && text.bytes().all(|c| c.is_ascii_hexdigit()) {
                " (it looks like hex)"
            } else if text.contains('-') || text.contains('_') {
                " (it looks like URL-safe base64)"
            } else if !text.len().is_multiple_of(4) {
                " (it looks like unpadded base64)"
            } else {
                ""
            };
            format!("not base64 (standard alphabet, with padding): {e}{hint}")
        })
    }
}

/// A time as it travels: an RFC 3339 string. `Time` is the instant, in unix
/// seconds and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time {
    pub secs: i64,
    pub nanos: u32,
}

impl Time {
    pub fn from_unix_ms(ms: i64) -> Time {
        Time { secs: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) as u32) * 1_000_000 }
    }

    pub fn from_unix_secs(secs: i64) -> Time {
        Time { secs, nanos: 0 }
    }

    /// Parses an RFC 3339 time (`2026-01-01T00:00:01.25Z`, or with an
    /// offset such as `+02:00`).
    pub fn parse(text: &str) -> Result<Time, String> {
        parse_rfc3339(text).ok_or_else(|| format!("not an RFC 3339 time: {text:?}"))
    }

    /// UTC with `digits` fractional digits (0 to 9), cut, never rounded.
    pub fn format(&self, digits: usize) -> String {
        let (y, mo, d) = civil_from_days(self.secs.div_euclid(86_400));
        let sod = self.secs.rem_euclid(86_400);
        let mut s = format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}", sod / 3600, sod / 60 % 60, sod % 60);
        if digits > 0 {
            let frac = format!("{:09}", self.nanos);
            s.push('.');
            s.push_str(&frac[..digits.min(9)]);
        }
        s.push('Z');
        s
    }

    /// UTC with as many fractional digits as needed (what the kit sends).
    pub fn to_rfc3339(&self) -> String {
        let full = self.format(9);
        if self.nanos == 0 {
            return self.format(0);
        }
        let (head, _) = full.split_at(full.len() - 1);
        format!("{}Z", head.trim_end_matches('0'))
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
        let text = String::deserialize(d)?;
        Time::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn digits(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn parse_rfc3339(text: &str) -> Option<Time> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, sec) = (digits(&b[11..13])?, digits(&b[14..16])?, digits(&b[17..19])?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        let frac = &text[start..i];
        let nine: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
        nanos = nine.parse().ok()?;
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (digits(&b[i + 1..i + 3])?, digits(&b[i + 4..i + 6])?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec.min(59) - offset;
    Some(Time { secs, nanos })
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's civil calendar algorithms (days since 1970-01-01).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_and_order() {
        let t = Time::parse("2026-01-01T00:00:01.25Z").unwrap();
        assert_eq!(t, Time { secs: 1_767_225_601, nanos: 250_000_000 });
        assert_eq!(t.to_rfc3339(), "2026-01-01T00:00:01.25Z");
        assert_eq!(t.format(3), "2026-01-01T00:00:01.250Z");
        assert_eq!(Time::parse("2026-01-01T02:00:01.25+02:00").unwrap(), t);
        assert_eq!(Time::parse("0001-01-01T00:00:00Z").unwrap().to_rfc3339(), "0001-01-01T00:00:00Z");
        assert_eq!(Time::from_unix_ms(1_767_225_600_000).to_rfc3339(), "2026-01-01T00:00:00Z");
        assert_eq!(Time::from_unix_ms(-1).format(3), "1969-12-31T23:59:59.999Z");
        for bad in ["", "2026-01-01", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00.Z"] {
            assert!(Time::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn every_capability_is_sent_by_its_wire_name() {
        let all = Capabilities {
            files: true,
            shared_files: true,
            in_memory: true,
            sqlite_locking: true,
            client_schema_table: true,
            client_schema_writer: true,
            snapshot_revision: Some(SnapshotRevision::Opaque),
            durability: Some(Durability::ProcessCrash),
            atomic_reads: true,
            concurrent_requests: true,
            yields: true,
        };
        assert_eq!(
            Value::Object(all.to_json()),
            serde_json::json!({
                "files": true, "shared_files": true, "in_memory": true, "sqlite_locking": true,
                "client_schema_table": true, "client_schema_writer": true, "snapshot_revision": "opaque",
                "durability": "process_crash", "atomic_reads": true, "concurrent_requests": true, "yields": true,
            })
        );
        assert!(Capabilities::default().to_json().is_empty(), "absent is not declared");
        for (d, name) in [(Durability::PowerLoss, "power_loss"), (Durability::ProcessCrash, "process_crash")] {
            assert_eq!(serde_json::to_value(d).unwrap(), Value::String(name.into()));
            assert_eq!(d.as_str(), name);
        }
        for (r, name) in [(SnapshotRevision::Sha256, "sha256"), (SnapshotRevision::Opaque, "opaque")] {
            assert_eq!(serde_json::to_value(r).unwrap(), Value::String(name.into()));
            assert_eq!(r.as_str(), name);
        }
    }

    #[test]
    fn base64_says_what_it_looks_like() {
        assert_eq!(bytes::decode("Ynl0ZXMA/w==").unwrap(), b"bytes\0\xff");
        assert!(bytes::decode("deadbeef0").unwrap_err().contains("hex"));
        assert!(bytes::decode("Ynl0ZXMA_w").unwrap_err().contains("URL-safe"));
        assert!(bytes::decode("Ynl0ZXMA/w").unwrap_err().contains("unpadded"));
    }
}
